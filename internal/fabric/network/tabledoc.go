package network

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Route tables are the fabric's hot path (every reconcile GETs one, and a
// table can hold hundreds of routes), and all their properties are known,
// so they are kept in these plain documents rather than the SDK's models,
// whose JSON decoding is several times slower. The JSON is ARM's.

type tableDoc struct {
	ID         string            `json:"id"`
	Name       string            `json:"name"`
	Type       string            `json:"type"`
	Location   string            `json:"location"`
	Tags       map[string]string `json:"tags,omitempty"`
	Etag       string            `json:"etag"`
	Properties tableProps        `json:"properties"`
}

type tableProps struct {
	ProvisioningState          string      `json:"provisioningState"`
	ResourceGUID               string      `json:"resourceGuid"`
	DisableBgpRoutePropagation bool        `json:"disableBgpRoutePropagation"`
	Routes                     []*RouteDoc `json:"routes"`
	Subnets                    []idRef     `json:"subnets,omitempty"`
}

type RouteDoc struct {
	ID         string     `json:"id"`
	Name       string     `json:"name"`
	Type       string     `json:"type"`
	Etag       string     `json:"etag"`
	Properties RouteProps `json:"properties"`
}

type RouteProps struct {
	ProvisioningState string `json:"provisioningState"`
	AddressPrefix     string `json:"addressPrefix"`
	NextHopType       string `json:"nextHopType"`
	NextHopIPAddress  string `json:"nextHopIpAddress,omitempty"`
	HasBgpOverride    bool   `json:"hasBgpOverride"`
}

type idRef struct {
	ID string `json:"id"`
}

// tableIn is a route table as a client sends it; pointers tell a missing
// property from an empty one.
type tableIn struct {
	Location   *string            `json:"location"`
	Tags       map[string]*string `json:"tags"`
	Properties *struct {
		DisableBgpRoutePropagation *bool      `json:"disableBgpRoutePropagation"`
		Routes                     []*routeIn `json:"routes"`
	} `json:"properties"`
}

type routeIn struct {
	Name       *string       `json:"name"`
	Properties *routePropsIn `json:"properties"`
}

type routePropsIn struct {
	AddressPrefix    *string `json:"addressPrefix"`
	NextHopType      *string `json:"nextHopType"`
	NextHopIPAddress *string `json:"nextHopIpAddress"`
}

func DecodeTable(doc []byte) (*tableDoc, error) {
	var t tableDoc
	if err := json.Unmarshal(doc, &t); err != nil {
		return nil, fmt.Errorf("decoding stored route table: %w", err)
	}
	if t.Properties.Routes == nil {
		t.Properties.Routes = []*RouteDoc{}
	}
	return &t, nil
}

// settleTable: see settleDoc. After a failed operation on one of its
// routes (child), that route is Failed too, as the table is: its content is
// the previous one, and its last write did not complete.
func settleTable(t *tableDoc, child, etag string) {
	if etag != "" {
		t.Etag = etag
		t.Properties.ProvisioningState = stateFailed
		if r := findRoute(t.Properties.Routes, child); child != "" && r != nil {
			r.Properties.ProvisioningState = stateFailed
		}
		return
	}
	removeChild := child
	t.Properties.ProvisioningState = StateSucceeded
	routes := t.Properties.Routes[:0]
	for _, r := range t.Properties.Routes {
		if removeChild != "" && strings.EqualFold(r.Name, removeChild) {
			continue
		}
		r.Properties.ProvisioningState = StateSucceeded
		routes = append(routes, r)
	}
	t.Properties.Routes = routes
}

func findRoute(routes []*RouteDoc, name string) *RouteDoc {
	for _, r := range routes {
		if strings.EqualFold(r.Name, name) {
			return r
		}
	}
	return nil
}

// Provisioning states.
const (
	StateSucceeded = "Succeeded"
	stateUpdating  = "Updating"
	stateDeleting  = "Deleting"
	stateFailed    = "Failed"
)
