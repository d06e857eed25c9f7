package network

import (
	"encoding/json"
	"fmt"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// docKind is how the operations of a resource type change its stored
// document. settle finishes it when an operation ends: without etag,
// every provisioning state becomes Succeeded and the child named
// removeChild (if any) is dropped; with etag (a failed operation), the
// top-level state becomes Failed, the children keep theirs, and the etag
// is replaced. deleting marks it Deleting when a DELETE starts, and
// returns its location.
type docKind struct {
	settle   func(doc []byte, removeChild, etag string) ([]byte, error)
	deleting func(doc []byte) (location string, out []byte, err error)
}

var docKinds = map[string]docKind{
	api.TypeRouteTables: modelDoc(DecodeTable, settleTable, func(t *tableDoc) string {
		t.Properties.ProvisioningState = stateDeleting
		return t.Location
	}),
	api.TypeVirtualNetworks: modelDoc(decodeVNet, settleVNet, func(v *armnetwork.VirtualNetwork) string {
		v.Properties.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateDeleting)
		return api.Str(v.Location)
	}),
	TypeNetworkSecurityGroups: modelDoc(decodeNSG, settleNSG, func(g *armnetwork.SecurityGroup) string {
		g.Properties.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateDeleting)
		return api.Str(g.Location)
	}),
	TypeNetworkInterfaces: modelDoc(decodeNIC, settleNIC, func(n *armnetwork.Interface) string {
		n.Properties.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateDeleting)
		return api.Str(n.Location)
	}),
	typeNetworkWatchers: modelDoc(decodeWatcher, settleWatcher, func(w *armnetwork.Watcher) string {
		w.Properties.ProvisioningState = api.Ptr(armnetwork.ProvisioningStateDeleting)
		return api.Str(w.Location)
	}),
	TypeNatGateways: modelDoc(decodeNatGateway, settleNatGateway, func(g *natGatewayDoc) string {
		g.Properties.ProvisioningState = stateDeleting
		return g.Location
	}),
	// Kept as plain ARM documents (no decoding into an SDK model).
	TypeVNetGateways:  {settle: settleGeneric, deleting: deletingGeneric},
	TypeLocalGateways: {settle: settleGeneric, deleting: deletingGeneric},
	TypeConnections:   {settle: settleGeneric, deleting: deletingGeneric},
}

// settleState settles the provisioning state and etag of a top-level SDK
// document: Succeeded after a successful operation; Failed, with the new
// etag, after a failed one. It reports whether the operation failed (the
// children then keep their states).
func settleState(etag string, docEtag **string, state **armnetwork.ProvisioningState) (failed bool) {
	if etag != "" {
		*docEtag, *state = api.Ptr(etag), api.Ptr(armnetwork.ProvisioningStateFailed)
		return true
	}
	*state = api.Ptr(armnetwork.ProvisioningStateSucceeded)
	return false
}

// modelDoc is the docKind of a document decoded as a T: settle and
// deleting change the decoded document, which is then encoded again.
func modelDoc[T any](decode func([]byte) (*T, error), settle func(v *T, removeChild, etag string), deleting func(*T) (location string)) docKind {
	return docKind{
		settle: func(doc []byte, removeChild, etag string) ([]byte, error) {
			v, err := decode(doc)
			if err != nil {
				return nil, err
			}
			settle(v, removeChild, etag)
			return api.Encode(v)
		},
		deleting: func(doc []byte) (string, []byte, error) {
			v, err := decode(doc)
			if err != nil {
				return "", nil, err
			}
			loc := deleting(v)
			out, err := api.Encode(v)
			return loc, out, err
		},
	}
}

// settleDoc settles a document of type typ (docKind): without etag (a
// successful operation) child is the child to drop, if any; with etag (a
// failed one) it is the child whose write failed, which a route table marks
// Failed beside itself.
func settleDoc(typ string, doc []byte, child, etag string) ([]byte, error) {
	k, ok := docKinds[typ]
	if !ok {
		return nil, fmt.Errorf("unknown resource type %q", typ)
	}
	return k.settle(doc, child, etag)
}

// markDeleting sets a resource's provisioning state to Deleting and
// returns its location.
func markDeleting(row *store.ResourceRow) (string, []byte, error) {
	k, ok := docKinds[row.Type]
	if !ok {
		return "", nil, fmt.Errorf("unknown resource type %q", row.Type)
	}
	return k.deleting(row.Doc)
}

// decodeStored decodes a stored document into the SDK model T; props
// gives it empty properties when it has none, so that readers need not
// check.
func decodeStored[T any](doc []byte, what string, props func(*T)) (*T, error) {
	var v T
	if err := json.Unmarshal(doc, &v); err != nil {
		return nil, fmt.Errorf("decoding stored %s: %w", what, err)
	}
	props(&v)
	return &v, nil
}

// settleGeneric settles a plain document: without etag every
// provisioningState becomes Succeeded; with etag (a failed operation) the
// top-level one becomes Failed and the etag is replaced. These types have
// no children to remove.
func settleGeneric(doc []byte, _, etag string) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("decoding stored document: %w", err)
	}
	props, _ := m["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		m["properties"] = props
	}
	if etag != "" {
		m["etag"] = etag
		props["provisioningState"] = "Failed"
		return json.Marshal(m)
	}
	var walk func(v any)
	walk = func(v any) {
		switch t := v.(type) {
		case map[string]any:
			if _, ok := t["provisioningState"]; ok {
				t["provisioningState"] = "Succeeded"
			}
			for _, c := range t {
				walk(c)
			}
		case []any:
			for _, c := range t {
				walk(c)
			}
		}
	}
	walk(props)
	return json.Marshal(m)
}

// deletingGeneric marks a document Deleting and returns its location.
func deletingGeneric(doc []byte) (string, []byte, error) {
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		return "", nil, fmt.Errorf("decoding stored document: %w", err)
	}
	props, _ := m["properties"].(map[string]any)
	if props == nil {
		props = map[string]any{}
		m["properties"] = props
	}
	props["provisioningState"] = "Deleting"
	loc, _ := m["location"].(string)
	out, err := json.Marshal(m)
	return loc, out, err
}
