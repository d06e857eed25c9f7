package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestDoctorPermissions: doctor tells, before anything breaks, what the
// identity may not do (the permissions API), and which writes a lock or a
// deny policy would refuse; a Reader gets a full read-only report, not a
// crash.
func TestDoctorPermissions(t *testing.T) {
	cfg := kthw(t)
	state := filepath.Join(filepath.Dir(cfg), "fabric.db")
	wantExit(t, ExitOK, "fabric", "apply", "-f", "testdata/fabric/kthw-authz.yaml", "--state", state)
	incident := func(args ...string) {
		t.Helper()
		wantExit(t, ExitOK, append(append([]string{"fabric", "incident"}, args...), "--state", state)...)
	}
	type finding struct{ Severity, Rule, Resource, Message, Fix string }
	doctor := func(t *testing.T) (int, []finding) {
		t.Helper()
		res := runCLI(t, nil, "", "doctor", "-o", "json", "--config", cfg, "--local-client-id", "routekeeper-app")
		var rep struct{ Findings []finding }
		if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
			t.Fatalf("doctor: exit %d, %v\n%s%s", res.code, err, res.stdout, res.stderr)
		}
		var perms []finding
		for _, f := range rep.Findings {
			if f.Rule == "permission" {
				perms = append(perms, f)
			}
		}
		return res.code, perms
	}
	has := func(fs []finding, sev string, words ...string) bool {
		for _, f := range fs {
			all := f.Severity == sev
			for _, w := range words {
				all = all && strings.Contains(f.Message+" "+f.Fix, w)
			}
			if all {
				return true
			}
		}
		return false
	}

	t.Run("the role of the example: no permission finding", func(t *testing.T) {
		if _, fs := doctor(t); len(fs) != 0 {
			t.Errorf("permission findings with routekeeper's role: %+v", fs)
		}
	})
	t.Run("a deny policy on appliance next hops refuses the table write", func(t *testing.T) {
		incident("deny-policy", "--next-hop", "VirtualAppliance", "--name", "no-nva")
		code, fs := doctor(t)
		if code != ExitFindings || !has(fs, "error", "write the node routes into kubernetes-routes", "deny policy assignment", "az policy exemption create") {
			t.Errorf("doctor: exit %d, findings %+v; want the policy named with an exemption", code, fs)
		}
		undo(t, state, "DELETE", "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Authorization/policyAssignments/no-nva?api-version=2023-04-01")
	})
	t.Run("a ReadOnly lock on the group refuses every write", func(t *testing.T) {
		incident("lock", "--level", "ReadOnly", "--name", "freeze")
		code, fs := doctor(t)
		if code != ExitFindings || !has(fs, "error", "keep subnet kubernetes-subnet associated", "ReadOnly lock freeze", "az lock delete --ids") ||
			!has(fs, "error", "write the node routes", "ReadOnly lock freeze") {
			t.Errorf("doctor: exit %d, findings %+v; want the lock named on both writes", code, fs)
		}
		undo(t, state, "DELETE", "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Authorization/locks/freeze?api-version=2016-09-01")
	})
	t.Run("a Reader only: a full read-only report", func(t *testing.T) {
		incident("revoke-role", "routekeeper-app", "--role", "routekeeper")
		code, fs := doctor(t)
		if code != ExitFindings {
			t.Fatalf("doctor as a Reader: exit %d", code)
		}
		// A Reader reads everything (*/read, operations included).
		for _, want := range []string{"Microsoft.Network/routeTables/write", "Microsoft.Network/virtualNetworks/subnets/write", "Microsoft.Network/routeTables/join/action"} {
			if !has(fs, "error", "lacks "+want, "az role assignment create") {
				t.Errorf("no finding for %s: %+v", want, fs)
			}
		}
		if has(fs, "error", "/read on") {
			t.Errorf("a read finding for a Reader: %+v", fs)
		}
	})
}
