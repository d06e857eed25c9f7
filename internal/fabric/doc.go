// Package fabric is routekeeper's local Azure Resource Manager: an
// http.Handler (Server) that serves the Microsoft.Network paths routekeeper
// uses (resource groups, virtual networks, subnets, route tables, routes and
// the async-operation endpoints) closely enough that the official Azure SDK
// for Go cannot tell it from Azure.
//
// This package is the server and its request pipeline only: New, Options,
// ServeHTTP, the in-process transport (RoundTripper, ClientOptions,
// Credential), the control endpoint (/_fabric/...), the routing of a path to
// the provider of its namespace, and the steps every ARM request goes
// through in order: the body limit, authentication, the api-version, the
// check for unknown requests (unknown.go), injected faults and throttling
// (faults.go), authorization, then the provider; the answer is written as
// ARM writes it and logged, unless the faults lose the answer of a write
// that took effect: then the connection (or stream) is reset instead
// (lostanswer.go). Dispatch runs an internal sub-request through
// the same pipeline, as the parent request's principal. The subscription
// endpoints (tenants, locations, providers, generic resources) are served
// here too (subscriptions.go, providers.go).
//
// Everything else lives in packages below it, which never import it:
//
//	api/        the wire: Request, Response, Handler, ARM errors, resource IDs,
//	            preconditions, tags, JSON folding (property names without regard
//	            to case), bearer-token claims
//	store/      the SQLite state: schema, transactions (Txn), rows, the
//	            document cache; shared by several processes on one file
//	network/    the Microsoft.Network provider and resource groups: every
//	            resource type (one table, types.go), the PUT pipeline, the
//	            long-running operations, next hop and effective routes, the
//	            interconnect (peerings, gateways, sites, connections) and the
//	            State the data plane forwards by
//	authz/      principals, role assignments, locks and deny policies: the
//	            checks every request passes, and Microsoft.Authorization at
//	            every scope
//	identity/   the login authority, token endpoints and cloud metadata for az,
//	            Credential, and the fabric's TLS certificate authority
//	topology/   client-side tooling over the SDK: topology files and Apply,
//	            Snapshot, and the incidents that break pod routing
//	dataplane/  the Linux data plane (network namespaces) built from
//	            network.State
//
// A provider is registered in New by its namespace; what it needs of the
// server (the store, the clock, limits, fault injection, poll
// authorization, sub-requests) it declares as a small interface or Config
// in its own package. docs/design.md draws the arrows.
//
// State lives in SQLite (modernc.org/sqlite, no cgo): one file that several
// processes may share, every write one transaction; or in memory for tests.
// Long-running operations are rows in the same database and finish lazily,
// on the first request after their end time, in whichever process serves it.
//
// Reach it over loopback (routekeeper fabric serve, with --tls over HTTPS
// with a CA of its own: identity.EnsureTLS, EndpointClientOptions) or
// in-process through Server.RoundTripper; ClientOptions and Credential point
// the SDK at it. A fabric that holds no role assignment, lock or policy
// lets everyone do everything.
package fabric
