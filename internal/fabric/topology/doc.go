// Package topology is the fabric's client-side tooling: topology files
// (a YAML description of resource groups, networks, route tables, NICs,
// the interconnect and authorization: LoadTopology, ParseTopology, and
// their validation), Apply, which writes a topology through the Azure SDK
// as any client would, Snapshot, which reads a fabric (or Azure) back into
// a network.State, and Incidents, which replays the writes that break pod
// routing (an IaC redeploy, a detach, a table swap or delete, a deny
// policy).
//
// It talks to a fabric only over ARM (the SDK's clients); it uses the
// providers' documents and rules (network, authz) so a topology is checked
// as the fabric would check it, and never imports the server.
package topology
