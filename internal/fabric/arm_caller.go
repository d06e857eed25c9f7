package fabric

import "strings"

// AdminClientID is the client the fabric's own tools authenticate as
// (Credential{}, `fabric az`, `fabric apply`, `fabric incident`): the
// fabric's administrator. Once the fabric enforces role-based access
// control, the administrator holds Owner at the root scope "/", as the
// account that created a subscription owns it in Azure; locks and deny
// policies apply to it as to everyone. Its object ID is the same string;
// a topology may not declare a principal with either.
const AdminClientID = "routekeeper-fabric"

// caller is the principal of a request.
type caller struct {
	objectID string // the principal ID role assignments name
	clientID string // the application (client) ID, "" when the token names none
	known    bool   // the bearer token is a JWT that names a principal
}

func (c caller) admin() bool { return c.known && strings.EqualFold(c.objectID, AdminClientID) }

// display is the principal as ARM's messages name it: "The client '<client>'
// with object id '<oid>'".
func (c caller) display() string {
	if c.clientID != "" {
		return c.clientID
	}
	return c.objectID
}
