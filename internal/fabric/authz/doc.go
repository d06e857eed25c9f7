// Package authz is the fabric's identity-aware authorization, checked as
// ARM checks it before any provider sees a request (Provider.Authorize):
// the caller's role assignments (403 AuthorizationFailed), the join actions
// of what a write references (403 LinkedAuthorizationFailed), management
// locks (409 ScopeLocked) and deny policies (403
// RequestDisallowedByPolicy). It serves Microsoft.Authorization at every
// scope (role definitions and assignments, locks, policy definitions and
// assignments, permissions) and the principals of the control endpoint.
// RBAC's rules are internal/azrbac's, policy's internal/azpolicy's.
//
// A fabric that holds no role assignment, lock or policy lets everyone do
// everything. The state lives in the store's authz rows and is cached in
// the Provider until another writer changes it. What it needs of resource
// groups it asks through Groups; it imports no provider.
package authz
