package api

import "strings"

// AdminClientID is the client the fabric's own tools authenticate as
// (Credential{}, `fabric az`, `fabric apply`, `fabric incident`): the
// fabric's administrator. Once the fabric enforces role-based access
// control, the administrator holds Owner at the root scope "/", as the
// account that created a subscription owns it in Azure; locks and deny
// policies apply to it as to everyone. Its object ID is the same string;
// a topology may not declare a principal with either.
const AdminClientID = "routekeeper-fabric"

// Caller is the principal of a request.
type Caller struct {
	ObjectID string // the principal ID role assignments name
	ClientID string // the application (client) ID, "" when the token names none
	Known    bool   // the bearer token is a JWT that names a principal
}

func (c Caller) Admin() bool { return c.Known && strings.EqualFold(c.ObjectID, AdminClientID) }

// Display is the principal as ARM's messages name it: "The client '<client>'
// with object id '<oid>'".
func (c Caller) Display() string {
	if c.ClientID != "" {
		return c.ClientID
	}
	return c.ObjectID
}
