// Package identity is enough of Azure's identity surface for real clients
// to use the fabric offline: an ADFS-style login authority and token
// endpoints (v1 and v2) that issue unsigned JWTs naming the client, the
// cloud metadata documents `az cloud register` reads (Server), the
// client-side Credential the SDK uses, and the fabric's own TLS certificate
// authority (EnsureTLS) for serving `az` and the azurerm provider over HTTPS.
//
// Nothing is checked here: what a token's principal may do is package
// authz's business. The object ID a token names comes from a
// PrincipalResolver the server passes in.
package identity
