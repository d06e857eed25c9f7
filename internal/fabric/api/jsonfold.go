package api

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"
)

// ARM's deserializer ignores the case of property names: a subnet PUT with
// "RouteTable":{"id":…} associates the table. The SDK's models decode only
// the exact spelling (their UnmarshalJSON switches on it), so a body meant
// for one of them first has its property names folded to the SDK's
// spelling. Without this, such a PUT would silently drop the association.
// The same holds for network interfaces and Network Watcher bodies.
// Route tables and resource groups decode into the fabric's own structs,
// which encoding/json already matches without regard to case.

// canonicalNames maps the lower-case form of every property name the SDK
// models of virtual networks, subnets, network interfaces and network
// watchers (with next-hop requests) know to its spelling.
var canonicalNames = sync.OnceValue(func() map[string]string {
	names := map[string]string{}
	for _, v := range []any{&armnetwork.VirtualNetwork{}, &armnetwork.Subnet{}, &armnetwork.Interface{},
		&armnetwork.Watcher{}, &armnetwork.NextHopParameters{}} {
		FillModel(reflect.ValueOf(v).Elem(), 0)
		b, err := json.Marshal(v)
		if err != nil {
			panic("fabric: marshalling a filled SDK model: " + err.Error())
		}
		var doc any
		if err := json.Unmarshal(b, &doc); err != nil {
			panic("fabric: reading a filled SDK model: " + err.Error())
		}
		collectNames(doc, names)
	}
	return names
})

// fillDepth bounds the recursion of fill: the models nest (a subnet holds
// a route table that holds subnets); every property appears within it.
const fillDepth = 7

// FillModel sets every field of an SDK model to a non-nil value, so that its
// MarshalJSON writes every property name it knows.
func FillModel(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > fillDepth {
			return
		}
		n := reflect.New(v.Type().Elem())
		FillModel(n.Elem(), depth+1)
		v.Set(n)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				FillModel(v.Field(i), depth)
			}
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type())) // written as {}: its name is collected
	case reflect.Slice:
		if depth > fillDepth || v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		s := reflect.MakeSlice(v.Type(), 1, 1)
		FillModel(s.Index(0), depth+1)
		v.Set(s)
	}
}

func collectNames(doc any, names map[string]string) {
	switch d := doc.(type) {
	case map[string]any:
		for k, v := range d {
			if _, ok := names[strings.ToLower(k)]; !ok {
				names[strings.ToLower(k)] = k
			}
			collectNames(v, names)
		}
	case []any:
		for _, v := range d {
			collectNames(v, names)
		}
	}
}

// foldNames rewrites the property names of a JSON body to the SDK's
// spelling. Names it does not know, and the keys of "tags" (the user's own),
// are kept as sent. A body that is not JSON is returned unchanged, for the
// decoder to report.
func foldNames(body []byte) []byte {
	var doc any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&doc); err != nil {
		return body
	}
	if !foldDoc(doc, canonicalNames()) {
		return body
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return body
	}
	return b
}

// foldDoc folds doc in place and reports whether it changed anything.
func foldDoc(doc any, names map[string]string) bool {
	changed := false
	switch d := doc.(type) {
	case map[string]any:
		for k, v := range d {
			if !strings.EqualFold(k, "tags") && foldDoc(v, names) {
				changed = true
			}
			c, ok := names[strings.ToLower(k)]
			if !ok || c == k {
				continue
			}
			delete(d, k)
			if _, dup := d[c]; !dup { // the exact spelling wins
				d[c] = v
			}
			changed = true
		}
	case []any:
		for _, v := range d {
			if foldDoc(v, names) {
				changed = true
			}
		}
	}
	return changed
}

// DecodeModel is decodeObject for a body decoded into an SDK model.
func DecodeModel(body []byte, v any) error {
	return DecodeObject(foldNames(body), v)
}
