package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
)

// fabricRequest is one "fabric request" line of a served fabric's debug
// log (--log-format json): an ARM request that reached it.
type fabricRequest struct {
	Msg     string `json:"msg"`
	Method  string `json:"method"`
	Path    string `json:"path"`
	IfMatch string `json:"ifMatch"`
	Status  int    `json:"status"`
	Lost    bool   `json:"lost"`
}

func (r fabricRequest) String() string {
	lost := ""
	if r.Lost {
		lost = " (answer lost)"
	}
	return fmt.Sprintf("%s %s if-match=%q %d%s", r.Method, r.Path, r.IfMatch, r.Status, lost)
}

func (r fabricRequest) write() bool {
	return r.Method != http.MethodGet && r.Method != http.MethodHead
}

// fabricRequests parses the request lines of a served fabric's log.
func fabricRequests(log string) []fabricRequest {
	var out []fabricRequest
	for _, line := range strings.Split(log, "\n") {
		var r fabricRequest
		if json.Unmarshal([]byte(line), &r) == nil && r.Msg == "fabric request" {
			out = append(out, r)
		}
	}
	return out
}

// staleWrites returns the conditional writes that reached the fabric
// with an If-Match an earlier write of the same resource had already
// used up: that write was carried out (2xx, its answer lost or not), so
// the etag had moved, and the client sent the same precondition again
// without knowing the resource's state — a blind re-send.
func staleWrites(reqs []fabricRequest) []fabricRequest {
	applied := map[string]bool{}
	var out []fabricRequest
	for _, r := range reqs {
		if !r.write() || r.IfMatch == "" {
			continue
		}
		k := strings.ToLower(r.Path) + " " + r.IfMatch
		if applied[k] {
			out = append(out, r)
		}
		if r.Status >= 200 && r.Status < 300 {
			applied[k] = true
		}
	}
	return out
}

// writeNodes writes an inventory of n KTHW workers: worker-i on
// 10.240.0.(20+i) with pod CIDR 10.200.i.0/24.
func writeNodes(t *testing.T, path string, n int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("nodes:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: worker-%d\n    internalIP: 10.240.0.%d\n    podCIDR: 10.200.%d.0/24\n", i, 20+i, i)
	}
	writeFile(t, path, b.String())
}

// TestRunOnceAgainstAFabricThatLosesAnswers: `fabric serve --lose-answers
// 0.5`, with throttled writes (429 with Retry-After), 5xx and failed
// operations on top, and `run --once` against its endpoint, round after
// round of added nodes. Each round converges — a run exits 0, every node
// routed — within a bound of seconds (a run that fails on a fault is run
// again, as the daemon would after its backoff), and no conditional write
// reaches the fabric with an If-Match a write it carried out had used up:
// after a lost answer routekeeper reads the resource back and never
// re-sends the write blind. It goes on until the fabric has lost the
// answers of a few conditional writes, so the claim is never vacuous.
func TestRunOnceAgainstAFabricThatLosesAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("rounds against a served fabric take seconds")
	}
	cfg := kthw(t)
	dir := filepath.Dir(cfg)
	state := filepath.Join(t.TempDir(), "fabric.db")
	wantExit(t, ExitOK, "fabric", "apply", "-f", filepath.Join(dir, "topology.yaml"), "--state", state)

	var out, errOut syncbuf.Buffer
	serve := startCLI(&out, &errOut, nil, "fabric", "serve", "--state", state, "--listen", "127.0.0.1:0",
		"--operation-duration", "100ms", "--seed", "7", "--log-level", "debug", "--log-format", "json",
		"--lose-answers", "0.5", "--error-rate", "0.1", "--fail-operations", "0.1", "--write-bucket", "3", "--write-refill", "2")
	defer serve.cancel()
	endpoint := waitListening(t, listeningRE, &out, &errOut, serve.done)
	if !strings.Contains(out.String(), "lost answers 0.5") {
		t.Errorf("the banner does not show the lost answers:\n%s", out.String())
	}
	resp, err := http.Get(endpoint + "/_fabric/faults")
	if err != nil {
		t.Fatal(err)
	}
	var faults fabric.Faults
	err = json.NewDecoder(resp.Body).Decode(&faults)
	resp.Body.Close()
	if err != nil || faults.LoseAnswers != 0.5 {
		t.Fatalf("GET /_fabric/faults = %+v, %v; want loseAnswers 0.5", faults, err)
	}

	const (
		minRounds    = 4
		maxRounds    = 20
		wantLost     = 3                // conditional writes whose answer was lost
		roundTimeout = 60 * time.Second // an upper bound only
	)
	env := map[string]string{"ROUTEKEEPER_ENDPOINT": endpoint}
	nodes := filepath.Join(dir, "nodes.yaml")
	lostConditional := func() int {
		n := 0
		for _, r := range fabricRequests(errOut.String()) {
			if r.Lost && r.IfMatch != "" {
				n++
			}
		}
		return n
	}
	workers := 2
	for round := 0; round < minRounds || lostConditional() < wantLost; round++ {
		if round == maxRounds {
			t.Fatalf("%d rounds and only %d conditional writes lost their answers: is --lose-answers applied?", round, lostConditional())
		}
		workers++
		writeNodes(t, nodes, workers)
		newest := fmt.Sprintf("worker-%d____10200%d024", workers-1, workers-1)
		start := time.Now()
		for run := 1; ; run++ {
			res := runCLI(t, env, "", "run", "--once", "--config", cfg)
			if res.code == ExitOK {
				if !strings.Contains(res.stdout, newest) {
					t.Fatalf("round %d: run --once exited 0 without the route %s:\n%s", round, newest, res.stdout)
				}
				t.Logf("round %d: %d nodes routed after %d runs, %s", round, workers, run, time.Since(start).Round(time.Millisecond))
				break
			}
			if res.code != ExitError && res.code != ExitFindings {
				t.Fatalf("round %d: run --once exited %d:\n%s", round, res.code, res.stderr)
			}
			if time.Since(start) > roundTimeout {
				t.Fatalf("round %d: not converged within %s (%d runs); the last:\n%s", round, roundTimeout, run, res.stderr)
			}
		}
	}

	// What the table holds, read with the faults off: every node's route,
	// Succeeded, and the subnet on the table.
	req, _ := http.NewRequest(http.MethodPut, endpoint+"/_fabric/faults", strings.NewReader(`{}`))
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("turning the faults off: %s", resp.Status)
	}
	res := wantExit(t, ExitOK, "fabric", "show", "-o", "json", "--endpoint", endpoint)
	var st network.State
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil {
		t.Fatal(err)
	}
	var want, got []string
	for i := range workers {
		want = append(want, fmt.Sprintf("10.200.%d.0/24 via 10.240.0.%d Succeeded", i, 20+i))
	}
	if len(st.RouteTables) != 1 {
		t.Fatalf("route tables: %+v", st.RouteTables)
	}
	for _, r := range st.RouteTables[0].Routes {
		got = append(got, r.AddressPrefix+" via "+r.NextHopIPAddress+" "+r.ProvisioningState)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) || len(st.RouteTables[0].Subnets) != 1 {
		t.Errorf("table %s: routes %v, subnets %v; want %v on kubernetes-subnet", st.RouteTables[0].Name, got, st.RouteTables[0].Subnets, want)
	}

	serve.stop(t, 10*time.Second, "serve", &errOut)
	reqs := fabricRequests(errOut.String())
	if stale := staleWrites(reqs); len(stale) > 0 {
		t.Errorf("conditional writes re-sent with an If-Match already used up by a write carried out:\n%s", joinLines(stale))
	}
	var writes, lost, throttled, failed int
	for _, r := range reqs {
		switch {
		case r.Lost:
			lost++
		case r.Status == http.StatusTooManyRequests:
			throttled++
		case r.Status >= 500:
			failed++
		}
		if r.write() {
			writes++
		}
	}
	t.Logf("at the fabric: %d requests, %d writes, %d answers lost (%d conditional), %d throttled, %d 5xx", len(reqs), writes, lost, lostConditional(), throttled, failed)
	if _, err := os.Stat(filepath.Join(dir, "fabric.db")); err == nil {
		t.Error("the config's state file was created: run ignored the endpoint")
	}
}

func joinLines[T fmt.Stringer](v []T) string {
	var b strings.Builder
	for _, x := range v {
		b.WriteString("  " + x.String() + "\n")
	}
	return b.String()
}

// TestStaleWrites: the check above finds a conditional write sent again
// after the first with the same If-Match was carried out, whether or not
// its answer was lost, and nothing else.
func TestStaleWrites(t *testing.T) {
	const p = "/subscriptions/s/resourceGroups/g/providers/Microsoft.Network/routeTables/rt"
	for _, tc := range []struct {
		name string
		reqs []fabricRequest
		want int
	}{
		{"re-sent after a lost answer", []fabricRequest{{Method: "PUT", Path: p, IfMatch: "e1", Status: 201, Lost: true}, {Method: "PUT", Path: p, IfMatch: "e1", Status: 412}}, 1},
		{"re-sent after the answer", []fabricRequest{{Method: "PUT", Path: p, IfMatch: "e1", Status: 200}, {Method: "GET", Path: p, Status: 200}, {Method: "PUT", Path: p, IfMatch: "e1", Status: 412}}, 1},
		{"re-sent after a 429", []fabricRequest{{Method: "PUT", Path: p, IfMatch: "e1", Status: 429}, {Method: "PUT", Path: p, IfMatch: "e1", Status: 201}}, 0},
		{"re-sent after an injected 5xx", []fabricRequest{{Method: "PUT", Path: p, IfMatch: "e1", Status: 503}, {Method: "GET", Path: p, Status: 200}, {Method: "PUT", Path: p, IfMatch: "e1", Status: 201}}, 0},
		{"read back and written with the new etag", []fabricRequest{{Method: "PUT", Path: p, IfMatch: "e1", Status: 201, Lost: true}, {Method: "GET", Path: p, Status: 200}, {Method: "PUT", Path: p, IfMatch: "e2", Status: 201}}, 0},
		{"another resource", []fabricRequest{{Method: "PUT", Path: p, IfMatch: "e1", Status: 201, Lost: true}, {Method: "PUT", Path: p + "2", IfMatch: "e1", Status: 201}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := staleWrites(tc.reqs); len(got) != tc.want {
				t.Errorf("staleWrites = %v, want %d", got, tc.want)
			}
		})
	}
}
