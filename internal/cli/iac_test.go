package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/armid"
)

func iacPlan(name string) string { return filepath.Join("..", "iac", "testdata", name+".json") }

// TestIacCheck: the plans recorded from the real OpenTofu runs, checked
// against the cloud as it stands (the example after routekeeper run) and
// offline: the hazards exit 3 naming the resource, subnet and nodes, the
// fixes exit 0; SARIF for code scanning; a file that is not a plan exits
// 2.
func TestIacCheck(t *testing.T) {
	cfg := ranKTHW(t)
	for _, tc := range []struct {
		plan string
		code int
		has  []string
	}{
		{"detach-inline-subnets", ExitFindings, []string{"vnet-inline-subnet-detaches", "azurerm_virtual_network.kubernetes", "kubernetes-subnet", "2: worker-0, worker-1", "RouteTableDetached", "ignore_changes = [subnet]"}},
		{"inline-routes", ExitFindings, []string{"inline-routes-delete-pod-routes", "azurerm_route_table.kubernetes", "worker-0____102000024", "ignore_changes = [route]"}},
		{"fix-ignore-changes", ExitOK, []string{"No findings"}},
		{"fix-association-resource", ExitOK, []string{"No findings"}},
		{"fix-routes-left-out", ExitOK, []string{"No findings"}},
		{"create", ExitOK, []string{"No findings"}},
	} {
		goldenFile := ""
		if tc.plan == "detach-inline-subnets" {
			goldenFile = "detach.golden"
		}
		checkIacLiveAndOffline(t, tc.plan, iacPlan(tc.plan), cfg, tc.code, tc.has, goldenFile)
	}
	t.Run("sarif", func(t *testing.T) {
		res := runCLI(t, nil, "", "iac", "check", iacPlan("detach-inline-subnets"), "--config", cfg, "-o", "sarif")
		var log struct {
			Version string
			Runs    []struct {
				Tool    struct{ Driver struct{ Name string } }
				Results []struct {
					RuleID  string `json:"ruleId"`
					Level   string
					Message struct{ Text string }
				}
			}
		}
		if err := json.Unmarshal([]byte(res.stdout), &log); err != nil || res.code != ExitFindings {
			t.Fatalf("sarif: exit %d, %v\n%s", res.code, err, res.stdout)
		}
		if log.Version != "2.1.0" || len(log.Runs) != 1 || len(log.Runs[0].Results) != 1 || log.Runs[0].Results[0].RuleID != "vnet-inline-subnet-detaches" || log.Runs[0].Results[0].Level != "error" {
			t.Errorf("sarif log: %+v", log)
		}
		golden(t, filepath.Join("testdata", "iac", "detach.sarif.golden"), []byte(res.stdout))
	})
	t.Run("not a plan", func(t *testing.T) {
		state := filepath.Join(t.TempDir(), "state.json")
		writeFile(t, state, `{"format_version":"1.0","terraform_version":"1.12.6","values":{"root_module":{}}}`)
		for _, f := range []string{state, filepath.Join(t.TempDir(), "missing.json"), cfg} {
			res := runCLI(t, nil, "", "iac", "check", f, "--config", cfg)
			if res.code != ExitUsage || !strings.Contains(res.stderr, filepath.Base(f)) {
				t.Errorf("iac check %s: exit %d, want 2 naming the file\n%s", f, res.code, res.stderr)
			}
		}
		if res := runCLI(t, nil, "", "diff", "--config", cfg, "-o", "sarif"); res.code != ExitUsage {
			t.Errorf("diff -o sarif: exit %d, want 2", res.code)
		}
	})
}

// appGWPlan is the recorded detach plan with the App Gateway example's
// gateway subnet in the network's inline blocks too: before on its
// mirror table, after with route_table_id set to after.
func appGWPlan(t *testing.T, after string) string {
	t.Helper()
	b, err := os.ReadFile(iacPlan("detach-inline-subnets"))
	if err != nil {
		t.Fatal(err)
	}
	var p map[string]any
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	const subnet = "/subscriptions/00000000-0000-0000-0000-000000000000/resourceGroups/kubernetes/providers/Microsoft.Network/virtualNetworks/kubernetes-vnet/subnets/appgw-subnet"
	for _, rc := range p["resource_changes"].([]any) {
		rc := rc.(map[string]any)
		if rc["address"] != "azurerm_virtual_network.kubernetes" {
			continue
		}
		c := rc["change"].(map[string]any)
		for key, rt := range map[string]string{"before": appGWTableID, "after": after} {
			v := c[key].(map[string]any)
			v["subnet"] = append(v["subnet"].([]any), map[string]any{"name": "appgw-subnet", "id": subnet, "address_prefixes": []any{"10.240.2.0/24"}, "route_table_id": rt})
		}
	}
	out, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "plan.json")
	writeFile(t, file, string(out))
	return file
}

// TestIacCheckMirrors: on the App Gateway example, a plan whose inline
// subnet blocks leave the gateway's subnet without route_table_id is
// flagged for the mirror table too (live and offline); one that keeps it
// flags only the node subnet.
func TestIacCheckMirrors(t *testing.T) {
	cfg := kthwAppGW(t)
	if res := runCLI(t, nil, "", "run", "--once", "--config", cfg); res.code != ExitOK {
		t.Fatalf("run --once: exit %d\n%s", res.code, res.stderr)
	}
	for _, mode := range []string{"live", "offline"} {
		for _, tc := range []struct {
			name   string
			after  string
			mirror bool
		}{{"gateway detached", "", true}, {"gateway kept", appGWTableID, false}} {
			t.Run(mode+"/"+tc.name, func(t *testing.T) {
				args := []string{"iac", "check", appGWPlan(t, tc.after), "--config", cfg, "-o", "json"}
				if mode == "offline" {
					args = append(args, "--offline")
				}
				res := runCLI(t, nil, "", args...)
				if res.code != ExitFindings {
					t.Fatalf("exit %d, want 3\n%s%s", res.code, res.stdout, res.stderr)
				}
				var rep struct {
					Findings []struct {
						Rule     string
						Evidence struct{ Subnet, RouteTable string }
					}
				}
				if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
					t.Fatalf("%v\n%s", err, res.stdout)
				}
				var got []string
				for _, f := range rep.Findings {
					got = append(got, armid.Name(f.Evidence.RouteTable)+"/"+armid.Name(f.Evidence.Subnet))
				}
				want := []string{"kubernetes-routes/kubernetes-subnet"}
				if tc.mirror {
					want = append(want, "appgw-routes/appgw-subnet")
				}
				if strings.Join(got, " ") != strings.Join(want, " ") {
					t.Errorf("findings on %v, want %v\n%s", got, want, res.stdout)
				}
			})
		}
	}
}

// TestIacCheckUnreadableMirror: run as a principal that may read the node
// table but not the gateway's mirror table, iac check judges the main
// table and says that the mirror was not checked, instead of finding
// nothing on it.
func TestIacCheckUnreadableMirror(t *testing.T) {
	cfg := kthwAppGW(t)
	state := filepath.Join(filepath.Dir(cfg), "fabric.db")
	wantExit(t, ExitOK, "fabric", "apply", "-f", "testdata/fabric/kthw-appgw-mirror-unreadable.yaml", "--state", state)
	wantExit(t, ExitOK, "run", "--once", "--config", cfg)
	res := runCLI(t, nil, "", "iac", "check", appGWPlan(t, ""), "--config", cfg, "--local-client-id", "iac-reader", "-o", "json")
	if res.code != ExitFindings {
		t.Fatalf("exit %d, want 3\n%s%s", res.code, res.stdout, res.stderr)
	}
	var rep struct {
		Live     bool
		Findings []struct {
			Evidence struct{ RouteTable string }
		}
		Notes []string
	}
	if err := json.Unmarshal([]byte(res.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, res.stdout)
	}
	if !rep.Live || len(rep.Findings) != 1 || armid.Name(rep.Findings[0].Evidence.RouteTable) != "kubernetes-routes" {
		t.Errorf("want the cloud read and one finding on kubernetes-routes: %s", res.stdout)
	}
	if len(rep.Notes) != 1 || !strings.Contains(rep.Notes[0], "appgw-routes could not be read") || !strings.Contains(rep.Notes[0], "not checked") {
		t.Errorf("notes %q; want one saying the mirror appgw-routes was not checked", rep.Notes)
	}
}

// checkIacLiveAndOffline runs iac check on file (a plan or a what-if
// result) against the cloud of cfg and with --offline: each must exit with
// code and print every string of has; the live output is compared with
// testdata/iac/goldenFile when one is named.
func checkIacLiveAndOffline(t *testing.T, name, file, cfg string, code int, has []string, goldenFile string) {
	t.Helper()
	for _, mode := range []string{"live", "offline"} {
		t.Run(name+"/"+mode, func(t *testing.T) {
			args := []string{"iac", "check", file, "--config", cfg}
			if mode == "offline" {
				args = append(args, "--offline")
			}
			res := runCLI(t, nil, "", args...)
			if res.code != code {
				t.Fatalf("exit %d, want %d\n%s%s", res.code, code, res.stdout, res.stderr)
			}
			for _, w := range has {
				if !strings.Contains(res.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, res.stdout)
				}
			}
			if mode == "live" && goldenFile != "" {
				golden(t, filepath.Join("testdata", "iac", goldenFile), []byte(res.stdout))
			}
		})
	}
}
