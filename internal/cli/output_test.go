package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputFormatsAndQuery runs `routes list` on the example cluster with
// every -o and --query form a script would use, and compares each with a
// golden file: the query applies to the JSON form, -o renders its result.
func TestOutputFormatsAndQuery(t *testing.T) {
	cfg := ranKTHW(t)
	tests := []struct {
		name string
		args []string
	}{
		{"tsv", []string{"-o", "tsv"}},
		{"query-names-tsv", []string{"--query", "[].name", "-o", "tsv"}},
		{"query-scalar-tsv", []string{"--query", "[0].nextHopIpAddress", "-o", "tsv"}},
		{"query-hash-tsv", []string{"--query", "[].{prefix:addressPrefix, hop:nextHopIpAddress}", "-o", "tsv"}},
		{"query-hash-json", []string{"--query", "[].{prefix:addressPrefix, hop:nextHopIpAddress}", "-o", "json"}},
		{"query-hash-yaml", []string{"--query", "[].{prefix:addressPrefix, hop:nextHopIpAddress}", "-o", "yaml"}},
		{"query-hash-table", []string{"--query", "[].{prefix:addressPrefix, hop:nextHopIpAddress}"}},
		{"query-filter-table", []string{"--query", "[?nextHopIpAddress=='10.240.0.21'].name"}},
		{"query-length-json", []string{"--query", "length(@)", "-o", "json"}},
		{"query-no-match-tsv", []string{"--query", "[?name=='absent'].name", "-o", "tsv"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"routes", "list", "--config", cfg}, tc.args...)
			res := wantExit(t, ExitOK, args...)
			golden(t, filepath.Join("testdata", "output", tc.name+".golden"), []byte(res.stdout))
		})
	}
}

// TestQueryDropsProse checks that with --query or a script format, diff and
// doctor print their result alone, without the sentences meant for people.
func TestQueryDropsProse(t *testing.T) {
	cfg := ranKTHW(t)
	// As in az, a top-level list prints one item per line; a list in a
	// list is one tab-separated line.
	for query, want := range map[string]string{"[routed, nodes]": "2\n2\n", "[[routed, nodes]]": "2\t2\n"} {
		res := runCLI(t, nil, "", "doctor", "--config", cfg, "--query", query, "-o", "tsv")
		if res.code != ExitOK || res.stdout != want {
			t.Errorf("doctor --query %s -o tsv: exit %d, stdout %q; want 0 and %q", query, res.code, res.stdout, want)
		}
	}
	res := runCLI(t, nil, "", "diff", "--config", cfg, "--query", "changes", "-o", "json")
	if res.code != ExitOK || strings.TrimSpace(res.stdout) != "[]" {
		t.Errorf("diff --query changes -o json: exit %d, stdout %q; want 0 and []", res.code, res.stdout)
	}
}

func TestOutputFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown format", []string{"version", "-o", "xml"}, `flag --output: "xml" is not one of table, json, yaml, tsv`},
		{"bad query", []string{"version", "--query", "[?"}, `flag --query: "[?" is not a valid JMESPath expression`},
		{"query of the wrong type", []string{"version", "-o", "json", "--query", "abs(version)"}, `flag --query: "abs(version)"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := runCLI(t, nil, "", tc.args...)
			if res.code != ExitUsage || !strings.Contains(res.stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", res.code, res.stderr, ExitUsage, tc.want)
			}
		})
	}
}

// TestVersion checks --version and `version` in every format. The build
// information of a test binary has no module version, so the version is
// "(devel)"; the Go version and platform vary and are replaced.
func TestVersion(t *testing.T) {
	info := buildVersion()
	normalize := strings.NewReplacer(info.GoVersion, "GOVERSION", info.Platform, "PLATFORM")
	tests := []struct {
		name string
		args []string
	}{
		{"flag", []string{"--version"}},
		{"table", []string{"version"}},
		{"json", []string{"version", "-o", "json"}},
		{"yaml", []string{"version", "-o", "yaml"}},
		{"query-tsv", []string{"version", "--query", "version", "-o", "tsv"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := wantExit(t, ExitOK, tc.args...)
			got := normalize.Replace(res.stdout)
			if info.Commit != "" {
				got = strings.ReplaceAll(got, info.Commit, "COMMIT")
			}
			golden(t, filepath.Join("testdata", "version", tc.name+".golden"), []byte(got))
		})
	}
}

// TestEnvironment checks the warnings for ROUTEKEEPER_* variables nothing
// reads and the message for a boolean variable or flag that is not true or
// false.
func TestEnvironment(t *testing.T) {
	cfg := kthw(t)
	tests := []struct {
		name    string
		env     map[string]string
		args    []string
		code    int
		want    string
		notWant string
	}{
		{"misspelled variable", map[string]string{"ROUTEKEEPER_ROUT_TABLE": "x"}, []string{"version"}, ExitOK,
			"environment variable ROUTEKEEPER_ROUT_TABLE is not one routekeeper reads; it is ignored (did you mean ROUTEKEEPER_ROUTE_TABLE?)", ""},
		{"unrelated variable", map[string]string{"ROUTEKEEPER_SOMETHING_ELSE_ENTIRELY": "x"}, []string{"version"}, ExitOK,
			"environment variable ROUTEKEEPER_SOMETHING_ELSE_ENTIRELY is not one routekeeper reads; it is ignored\"", "did you mean"},
		{"another command's variable is known", map[string]string{"ROUTEKEEPER_LISTEN": "127.0.0.1:0", "ROUTEKEEPER_ENDPOINT": "http://127.0.0.1:1"}, []string{"version"}, ExitOK,
			"", "not one routekeeper reads"},
		{"the test tooling's variables are known", map[string]string{"ROUTEKEEPER_KUBE_APISERVER": "/x", "ROUTEKEEPER_E2E_MEMORY_NODES": "1", "ROUTEKEEPER_FABRIC_TEST_CHILD": "1", "ROUTEKEEPER_TOFU": "/t", "ROUTEKEEPER_AZURERM": "/a"}, []string{"version"}, ExitOK,
			"", "not one routekeeper reads"},
		{"boolean variable", map[string]string{"ROUTEKEEPER_CREATE_ROUTE_TABLE": "yes"}, []string{"diff", "--config", cfg}, ExitUsage,
			"environment variable ROUTEKEEPER_CREATE_ROUTE_TABLE=yes: use true or false", "strconv"},
		{"boolean flag", nil, []string{"diff", "--config", cfg, "--create-route-table=yes"}, ExitUsage,
			"flag --create-route-table=yes: use true or false", "strconv"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var environ []string
			for k, v := range tc.env {
				environ = append(environ, k+"="+v)
			}
			var out, errOut strings.Builder
			code := runWith(context.Background(), tc.args, strings.NewReader(""), &out, &errOut, func(k string) string { return tc.env[k] }, environ)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, errOut.String())
			}
			if tc.want != "" && !strings.Contains(errOut.String(), tc.want) {
				t.Errorf("stderr does not contain %q:\n%s", tc.want, errOut.String())
			}
			if tc.notWant != "" && strings.Contains(errOut.String(), tc.notWant) {
				t.Errorf("stderr contains %q:\n%s", tc.notWant, errOut.String())
			}
		})
	}
}

// TestHelpListsOnlyUsedFlags checks that each command's --help lists the
// flags of the settings it reads and none of the controller's.
func TestHelpListsOnlyUsedFlags(t *testing.T) {
	controllerOnly := []string{"--leader-elect", "--batch-window", "--resync", "--metrics-address", "--association-interval"}
	tests := []struct {
		args    []string
		want    []string
		notWant []string
	}{
		{[]string{"run", "--help"}, append([]string{"--route-table", "--resource-group", "--inventory", "--use-managed-identity", "--association-policy"}, controllerOnly...), nil},
		{[]string{"diff", "--help"}, []string{"--route-table", "-g, --resource-group", "--inventory", "--association-policy", "--subscription"}, controllerOnly},
		// doctor and routes list make run's observe and decide, so that the
		// commands agree: the association policy, the nodes and the plan
		// settings are theirs too.
		{[]string{"doctor", "--help"}, []string{"--route-table", "--inventory", "--kubeconfig", "--subscription", "--route-limit", "--association-policy"}, append([]string{"--topology", "--operation-duration"}, controllerOnly...)},
		{[]string{"routes", "list", "--help"}, []string{"-n, --route-table", "--cluster-cidr", "--state", "--inventory", "--association-policy"}, append([]string{"--topology", "--operation-duration"}, controllerOnly...)},
		{[]string{"migrate", "--help"}, []string{"--to", "--route-table", "--subnet", "--route-limit", "--operation-duration"}, append([]string{"--inventory", "--association-policy", "--topology"}, controllerOnly...)},
	}
	for _, tc := range tests {
		t.Run(strings.Join(tc.args[:len(tc.args)-1], " "), func(t *testing.T) {
			res := wantExit(t, ExitOK, tc.args...)
			for _, w := range tc.want {
				if !strings.Contains(res.stdout, w) {
					t.Errorf("help does not list %s", w)
				}
			}
			for _, w := range tc.notWant {
				if strings.Contains(res.stdout, w+" ") {
					t.Errorf("help lists %s, which this command does not use", w)
				}
			}
		})
	}
	// A controller flag on a read-only command is a usage error, not
	// silently ignored.
	if res := runCLI(t, nil, "", "doctor", "--resync", "1m"); res.code != ExitUsage || !strings.Contains(res.stderr, "unknown flag: --resync") {
		t.Errorf("doctor --resync: exit %d, stderr %q; want 2 and unknown flag", res.code, res.stderr)
	}
}
