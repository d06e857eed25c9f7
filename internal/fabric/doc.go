// Package fabric is routekeeper's local Azure Resource Manager: an
// http.Handler that serves the Microsoft.Network paths routekeeper uses
// (resource groups, virtual networks, subnets, route tables, routes and the
// async-operation endpoints) closely enough that the official Azure SDK for
// Go cannot tell it from Azure.
//
// It keeps Azure's behaviour where a controller could otherwise pass its
// tests and fail in production: etags on every resource and If-Match /
// If-None-Match preconditions (412 PreconditionFailed), long-running PUT and
// DELETE with Azure-AsyncOperation polling and provisioning states, 409
// AnotherOperationInProgress, the subnet ↔ route table association in both
// directions (a subnet PUT without routeTable drops it, as an IaC redeploy
// does), and Azure's validation errors (RouteConflict, route limit,
// InUseRouteTableCannotBeDeleted, ...). Faults can be injected: latency, 429
// throttling from a token bucket, random 5xx, failed operations and an
// "intruder" that rewrites a route table between a client's GET and PUT.
//
// State lives in SQLite (modernc.org/sqlite, no cgo): one file that several
// processes may share, every write one transaction; or in memory for tests.
// Long-running operations are rows in the same database and finish lazily,
// on the first request after their end time, in whichever process serves it.
//
// Reach it over loopback (routekeeper fabric serve, with --tls over HTTPS
// with a CA of its own: EnsureTLS, EndpointClientOptions) or in-process
// through Server.RoundTripper; ClientOptions and Credential point the SDK at
// it. For the Azure CLI it also serves an ADFS-style login authority, the
// cloud metadata document, subscriptions, locations, providers and generic
// resource listings (identity.go). Incidents replays the writes that break
// pod routing (an IaC redeploy, a detach, a table swap or delete).
//
// Identity is part of fidelity: tokens name a principal (principal.go) and
// every request is checked as ARM checks it (authorize.go): role
// assignments (403 AuthorizationFailed), the join actions of what a write
// references (403 LinkedAuthorizationFailed), management locks (409
// ScopeLocked) and deny policies (403 RequestDisallowedByPolicy, policy.go),
// with Microsoft.Authorization served at every scope (authz_api*.go) and
// RBAC's rules in internal/azrbac. A fabric that holds no role assignment,
// lock or policy lets everyone do everything.
//
// Request bodies are read as ARM reads them: property names without regard
// to case (jsonfold.go), Azure's empty lists, a no-op PUT answered 200
// Succeeded.
package fabric
