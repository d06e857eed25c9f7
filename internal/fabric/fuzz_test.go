package fabric

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// FuzzHandler sends arbitrary methods, paths, headers and bodies to the
// handler: no input may crash it, every answer has a valid status, and
// every JSON answer is valid JSON. Run in CI as
//
//	go test ./internal/fabric -run '^$' -fuzz FuzzHandler -fuzztime 20s
func FuzzHandler(f *testing.F) {
	ctx := context.Background()
	st, err := store.OpenMemory(ctx)
	if err != nil {
		f.Fatal(err)
	}
	defer st.Close()
	srv := New(st, Options{PageSize: 2, RouteLimit: 5})
	seed := func(method, path, body string) {
		req, _ := http.NewRequest(method, "http://fabric"+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer x")
		rec := &recorder{header: http.Header{}}
		srv.ServeHTTP(rec, req)
		if rec.status >= 300 {
			f.Fatalf("seeding %s %s: %d %s", method, path, rec.status, rec.body.String())
		}
	}
	sub := "/subscriptions/" + testSub
	rg := sub + "/resourceGroups/kubernetes"
	net := rg + "/providers/Microsoft.Network"
	seed("PUT", rg+"?api-version=1", `{"location":"eastus"}`)
	seed("PUT", net+"/routeTables/rt?api-version=1", `{"location":"eastus","properties":{"routes":[{"name":"r","properties":{"addressPrefix":"10.0.0.0/24","nextHopType":"VirtualAppliance","nextHopIpAddress":"10.1.0.4"}}]}}`)
	seed("PUT", net+"/virtualNetworks/v?api-version=1", `{"location":"eastus","properties":{"addressSpace":{"addressPrefixes":["10.1.0.0/16"]},"subnets":[{"name":"s","properties":{"addressPrefix":"10.1.0.0/24"}}]}}`)

	for _, c := range []struct{ method, path, header, body string }{
		{"GET", net + "/routeTables/rt?api-version=2024-05-01", "", ""},
		{"GET", net + "/routeTables?api-version=2024-05-01&$skiptoken=kubernetes%2Fa", "", ""},
		{"GET", net + "/routeTables/rt/routes?api-version=1&$skiptoken=-5", "", ""},
		{"PUT", net + "/routeTables/rt?api-version=1", "If-Match: W/\"x\"", `{"location":"eastus","properties":{"routes":[null,{"name":"a"}]}}`},
		{"PUT", net + "/routeTables/rt2?api-version=1", "If-None-Match: *", `{"location":"eastus","tags":{"a":null},"properties":{"disableBgpRoutePropagation":true,"routes":[{"name":"x","properties":{"addressPrefix":"AzureCloud","nextHopType":"internet"}}]}}`},
		{"PUT", net + "/routeTables/rt/routes/r2?api-version=1", "", `{"properties":{"addressPrefix":"fe80::1%eth0/64","nextHopType":"VirtualAppliance","nextHopIpAddress":"::1"}}`},
		{"PATCH", net + "/routeTables/rt?api-version=1", "", `{"tags":{"k":"v"}}`},
		{"DELETE", net + "/routeTables/rt/routes/r?api-version=1", "If-Match: *", ""},
		{"PUT", net + "/virtualNetworks/v/subnets/s2?api-version=1", "", `{"properties":{"addressPrefixes":["10.1.1.0/24",null],"routeTable":{"id":"/subscriptions/x/resourceGroups/kubernetes/providers/Microsoft.Network/routeTables/rt"}}}`},
		{"PUT", net + "/virtualNetworks/v?api-version=1", "", `{"location":"eastus","properties":{"addressSpace":{"addressPrefixes":[null]},"subnets":[{"properties":null}]}}`},
		{"DELETE", rg + "?api-version=1", "", ""},
		{"GET", sub + "/providers/Microsoft.Network/locations/eastus/operations/x?api-version=1", "", ""},
		{"PUT", rg + "/providers/Microsoft.Resources/deployments/d?api-version=2021-04-01", "", `{"properties": {"mode": "Complete", template:{
  // az splices the template in so
  "parameters": {"p": {"type": "string", "defaultValue": "[resourceGroup().location]"}},
  "resources": [{"type": "Microsoft.Network/routeTables", "apiVersion": "2024-05-01", "name": "[concat('rt', 'x')]", "location": "[parameters('p')]",
    "properties": {"routes": [{"name": "r", "properties": {"addressPrefix": "10.0.0.0/24", "nextHopType": "None"}}]}}],
  "outputs": {"o": {"type": "string", "value": "[reference('rtx').routes[0].name]"}}}}}`},
		{"POST", rg + "/providers/Microsoft.Resources/deployments/d/whatIf?api-version=2021-04-01", "", `{"properties": {"mode": "Incremental", "template": {"resources": [{"type": "Microsoft.Network/virtualNetworks", "apiVersion": "1", "name": "v", "properties": {"subnets": [{"name": "s"}]}}]}}}`},
		{"GET", rg + "/deployments/d/operations?api-version=2021-04-01", "", ""},
		{"GET", "/_fabric/faults", "", ""},
		{"PUT", "/_fabric/faults", "", `{"latency":"1ns"}`},
		{"POST", "//subscriptions//resourceGroups/", "Authorization: Basic", "{"},
	} {
		f.Add(c.method, c.path, c.header, c.body)
	}

	f.Fuzz(func(t *testing.T, method, path, header, body string) {
		if strings.HasPrefix(path, "/_fabric/faults") && method != "GET" {
			return // changing faults (latency) would only slow the fuzzer down
		}
		u, err := url.ParseRequestURI(path)
		if err != nil || method == "" || strings.ContainsAny(method, " \t\r\n") {
			return // net/http would refuse the request line
		}
		req := &http.Request{
			Method: method, URL: u, Host: "fabric", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Authorization": {"Bearer fuzz"}},
			Body:   io.NopCloser(strings.NewReader(body)),
		}
		if k, v, ok := strings.Cut(header, ":"); ok {
			req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
		rec := &recorder{header: http.Header{}}
		srv.ServeHTTP(rec, req)
		if rec.status == 0 {
			rec.status = 200
		}
		if rec.status < 100 || rec.status > 599 {
			t.Fatalf("status %d", rec.status)
		}
		if b := bytes.TrimSpace(rec.body.Bytes()); len(b) > 0 && strings.HasPrefix(rec.header.Get("Content-Type"), "application/json") && !json.Valid(b) {
			t.Fatalf("invalid JSON answer: %s", b)
		}
		if rec.status >= 500 && rec.status != 503 {
			t.Fatalf("%s %s: server error %d %s", method, path, rec.status, rec.body.String())
		}
	})
}
