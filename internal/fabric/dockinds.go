package fabric

import (
	"encoding/json"
	"fmt"
)

// docKind is how the operations of a resource type kept as a plain ARM
// document (no decoding into an SDK model) settle: the gateways, local
// network gateways and connections of gateways.go. settleSimpleDoc and
// markSimpleDeleting fall back to it.
type docKind struct {
	settle   func(doc []byte, etag string) ([]byte, error)
	deleting func(doc []byte) (location string, out []byte, err error)
}

var docKinds = map[string]docKind{
	typeVNetGateways:  {settle: settleGeneric, deleting: deletingGeneric},
	typeLocalGateways: {settle: settleGeneric, deleting: deletingGeneric},
	typeConnections:   {settle: settleGeneric, deleting: deletingGeneric},
}

// settleGeneric finishes a document: without etag every provisioningState
// becomes Succeeded; with etag (a failed operation) the top-level one
// becomes Failed and the etag is replaced.
func settleGeneric(doc []byte, etag string) ([]byte, error) {
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
