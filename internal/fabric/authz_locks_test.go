package fabric

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
)

const lockTopology = authzNetwork + `    routeTables:
      - name: rt
        routes:
          - {name: r1, addressPrefix: 10.244.0.0/24, nextHopType: VirtualAppliance, nextHopIpAddress: 10.240.0.4}
      - name: rt2
    networkInterfaces:
      - {name: nic0, subnet: vnet/nodes, privateIPAddress: 10.240.0.10}
  - name: other
    routeTables:
      - name: rt
`

func lockPath(scope, name string) string {
	return scope + "/providers/Microsoft.Authorization/locks/" + name + "?api-version=2016-09-01"
}

// TestLocks: CanNotDelete refuses deletes, ReadOnly also writes and
// POSTs, inherited from the subscription, the group or the resource, for
// everyone (the administrator included); a group holding a locked resource
// cannot be deleted.
func TestLocks(t *testing.T) {
	rg := "/subscriptions/" + sub0 + "/resourceGroups/kubernetes"
	table := netID("kubernetes", api.TypeRouteTables, "rt")
	for _, tc := range []struct {
		name, scope, level string
		method, path       string
		body               any
		wantLocked         string // the operation refused, "" when allowed
	}{
		{"CanNotDelete on the group refuses a table delete", rg, "CanNotDelete", "DELETE", table, nil, "delete"},
		{"CanNotDelete on the group allows a table write", rg, "CanNotDelete", "PUT", table, tableBody(), ""},
		{"CanNotDelete on the table refuses a route delete", table, "CanNotDelete", "DELETE", table + "/routes/r1", nil, "delete"},
		{"CanNotDelete on the subscription refuses a delete below", "/subscriptions/" + sub0, "CanNotDelete", "DELETE", netID("kubernetes", api.TypeRouteTables, "rt2"), nil, "delete"},
		{"CanNotDelete on a table refuses deleting its group", table, "CanNotDelete", "DELETE", rg, nil, "delete"},
		{"CanNotDelete elsewhere does not apply", "/subscriptions/" + sub0 + "/resourceGroups/other", "CanNotDelete", "DELETE", table, nil, ""},
		{"ReadOnly on the group refuses a table write", rg, "ReadOnly", "PUT", table, tableBody(), "write"},
		{"ReadOnly on the group refuses a tags PATCH", rg, "ReadOnly", "PATCH", table, map[string]any{"tags": map[string]string{"a": "b"}}, "write"},
		{"ReadOnly on the table refuses a route write", table, "ReadOnly", "PUT", table + "/routes/r2", routeBody("10.244.1.0/24"), "write"},
		{"ReadOnly on the group refuses a POST action", rg, "ReadOnly", "POST", netID("kubernetes", network.TypeNetworkInterfaces, "nic0") + "/effectiveRouteTable", nil, "write"},
		{"ReadOnly refuses a delete", rg, "ReadOnly", "DELETE", table, nil, "delete"},
		{"ReadOnly allows reads", rg, "ReadOnly", "GET", table, nil, ""},
		{"ReadOnly on a sibling does not apply", netID("kubernetes", api.TypeRouteTables, "rt2"), "ReadOnly", "PUT", table, tableBody(), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newAuthzEnv(t, lockTopology)
			if status, body := e.raw("", "PUT", lockPath(tc.scope, "lock1"), map[string]any{"properties": map[string]any{"level": tc.level, "notes": "test"}}); status != 201 {
				t.Fatalf("creating the lock: %d %v", status, body)
			}
			status, body := e.raw("", tc.method, tc.path+"?api-version=2024-05-01", tc.body)
			if tc.wantLocked == "" {
				if status >= 300 {
					t.Fatalf("%s %s = %d %v, want it allowed", tc.method, tc.path, status, body)
				}
				return
			}
			er, _ := body["error"].(map[string]any)
			want := fmt.Sprintf("The scope '%s' cannot perform %s operation because following scope(s) are locked: '%s'. Please remove the lock and try again.", tc.path, tc.wantLocked, tc.scope)
			if status != http.StatusConflict || er["code"] != "ScopeLocked" || er["message"] != want {
				t.Fatalf("%s %s = %d %v\nwant 409 ScopeLocked %q", tc.method, tc.path, status, er, want)
			}
			// Removing the lock lets the request through.
			if status, _ := e.raw("", "DELETE", lockPath(tc.scope, "lock1"), nil); status != 200 {
				t.Fatalf("deleting the lock: %d", status)
			}
			if status, body := e.raw("", tc.method, tc.path+"?api-version=2024-05-01", tc.body); status >= 300 && status != 404 {
				t.Errorf("after the lock is gone: %d %v", status, body)
			}
		})
	}
}

func tableBody() map[string]any {
	return map[string]any{"location": "eastus", "properties": map[string]any{"routes": []any{}}}
}

func routeBody(prefix string) map[string]any {
	return map[string]any{"properties": map[string]any{"addressPrefix": prefix, "nextHopType": "VnetLocal"}}
}

// TestLocksAPI: the shapes of Microsoft.Authorization/locks at every scope
// and the lists az uses.
func TestLocksAPI(t *testing.T) {
	e := newAuthzEnv(t, lockTopology)
	sub := "/subscriptions/" + sub0
	rg := sub + "/resourceGroups/kubernetes"
	table := netID("kubernetes", api.TypeRouteTables, "rt")
	for _, l := range []struct{ scope, name, level string }{{sub, "s", "CanNotDelete"}, {rg, "g", "readonly"}, {table, "t", "CanNotDelete"}} {
		status, body := e.raw("", "PUT", lockPath(l.scope, l.name), map[string]any{"properties": map[string]any{"level": l.level}})
		if status != 201 || body["id"] != l.scope+"/providers/Microsoft.Authorization/locks/"+l.name || body["type"] != "Microsoft.Authorization/locks" {
			t.Fatalf("PUT lock at %s = %d %v", l.scope, status, body)
		}
	}
	count := func(path string) int {
		status, body := e.raw("", "GET", path, nil)
		if status != 200 {
			t.Fatalf("GET %s = %d %v", path, status, body)
		}
		v, _ := body["value"].([]any)
		return len(v)
	}
	for _, tc := range []struct {
		path string
		want int
	}{
		{sub + "/providers/Microsoft.Authorization/locks?api-version=2016-09-01", 3},
		{rg + "/providers/Microsoft.Authorization/locks?api-version=2016-09-01", 2},
		{table + "/providers/Microsoft.Authorization/locks?api-version=2016-09-01", 1},
		{table + "/providers/Microsoft.Authorization/locks?api-version=2016-09-01&$filter=atScope()", 3},
	} {
		if got := count(tc.path); got != tc.want {
			t.Errorf("GET %s: %d locks, want %d", tc.path, got, tc.want)
		}
	}
	status, body := e.raw("", "GET", lockPath(rg, "g"), nil)
	if props, _ := body["properties"].(map[string]any); status != 200 || props["level"] != "ReadOnly" {
		t.Errorf("GET lock = %d %v (level canonical ReadOnly)", status, body)
	}
	for _, tc := range []struct {
		name, path string
		body       any
		status     int
		code       string
	}{
		{"bad level", lockPath(rg, "x"), map[string]any{"properties": map[string]any{"level": "NoWrite"}}, 400, "LockLevelInvalid"},
		{"missing group", lockPath(sub+"/resourceGroups/nope", "x"), map[string]any{"properties": map[string]any{"level": "ReadOnly"}}, 404, "ResourceGroupNotFound"},
		{"missing resource", lockPath(netID("kubernetes", api.TypeRouteTables, "nope"), "x"), map[string]any{"properties": map[string]any{"level": "ReadOnly"}}, 404, "ResourceNotFound"},
		{"bad name", lockPath(rg, "a:b"), map[string]any{"properties": map[string]any{"level": "ReadOnly"}}, 400, "InvalidLockName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := e.raw("", "PUT", tc.path, tc.body)
			er, _ := body["error"].(map[string]any)
			if status != tc.status || er["code"] != tc.code {
				t.Errorf("= %d %v, want %d %s", status, er, tc.status, tc.code)
			}
		})
	}
	if status, _ := e.raw("", "DELETE", lockPath(rg, "nope"), nil); status != 204 {
		t.Errorf("deleting a missing lock = %d, want 204", status)
	}
}
