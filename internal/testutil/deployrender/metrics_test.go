package deployrender

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/metrics"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// knownMetrics returns every metric routekeeper's /metrics serves, with
// its label names: internal/metrics exercised until every family has a
// sample, then gathered. Histograms contribute their _bucket (with le),
// _sum and _count series.
func knownMetrics(t *testing.T) map[string][]string {
	t.Helper()
	m := metrics.New()
	m.SetLeader(true)
	for _, code := range []int{200, 412, 429} {
		m.ObserveARMCall("PUT", code, 10*time.Millisecond)
	}
	m.ObserveTableARMCall("kubernetes-routes", "GET")
	m.Report(context.Background(), &controller.Result{
		Start: time.Now(), Duration: time.Second,
		Nodes:        map[string]verdict.Node{"a": {Routed: true}, "b": {Reason: "RouteLimit"}},
		Routes:       &verdict.RouteCounts{Desired: 2, Present: 1, Owned: 1},
		Associations: []verdict.Subnet{{SubnetDecision: assoc.SubnetDecision{Subnet: "s1", State: assoc.Reassociated}, Repaired: true}, {SubnetDecision: assoc.SubnetDecision{Subnet: "s2", State: assoc.Detached}}},
		// A held deletion, so that deletes_held has a sample.
		Plan: &plan.Plan{HeldDeletes: []plan.Change{{}}, HeldReason: reason.TooManyDeletes},
		// A refused association, so that writes_denied has one.
		Verdict: &verdict.Verdict{Denials: []verdict.Denial{{Op: verdict.OpSubnetWrite, Resource: "s2", Code: "AuthorizationFailed"}}},
	})
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string][]string{}
	for _, f := range fams {
		var names []string
		for _, metric := range f.GetMetric() {
			for _, l := range metric.GetLabel() {
				if !slices.Contains(names, l.GetName()) {
					names = append(names, l.GetName())
				}
			}
		}
		if f.GetType() == dto.MetricType_HISTOGRAM {
			known[f.GetName()+"_bucket"] = append(slices.Clone(names), "le")
			known[f.GetName()+"_sum"] = names
			known[f.GetName()+"_count"] = names
			continue
		}
		known[f.GetName()] = names
	}
	for _, want := range []string{"routekeeper_association_problems", "routekeeper_nodes_not_routed", "routekeeper_leader", "routekeeper_arm_throttled_total"} {
		if _, ok := known[want]; !ok {
			t.Fatalf("gathering internal/metrics did not produce %s: exercise it above", want)
		}
	}
	return known
}

var (
	metricName = regexp.MustCompile(`\b((?:routekeeper|go|process)_[a-z0-9_]+)\b(\{[^}]*\})?`)
	matcher    = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)`)
	grouping   = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
)

// targetLabels are the labels Prometheus itself adds to every scraped
// series (the job, the instance, and what the Kubernetes service discovery
// of prometheus-operator's monitors attaches).
var targetLabels = []string{"job", "instance", "namespace", "pod", "container", "endpoint", "service"}

// checkQuery checks that a PromQL expression queries only metrics that
// exist, with label names they have; it returns the problems.
func checkQuery(known map[string][]string, what, expr string) []string {
	var problems []string
	found := metricName.FindAllStringSubmatch(expr, -1)
	if len(found) == 0 {
		problems = append(problems, fmt.Sprintf("%s: %q queries none of routekeeper's metrics", what, expr))
	}
	var all []string
	for _, m := range found {
		name := m[1]
		lbls, ok := known[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: %q queries %s, which internal/metrics does not serve", what, expr, name))
			continue
		}
		all = append(all, lbls...)
		for _, lm := range matcher.FindAllStringSubmatch(m[2], -1) {
			if !slices.Contains(lbls, lm[1]) && !slices.Contains(targetLabels, lm[1]) {
				problems = append(problems, fmt.Sprintf("%s: %q selects %s by label %s, which it does not have (it has %v)", what, expr, name, lm[1], lbls))
			}
		}
	}
	for _, g := range grouping.FindAllStringSubmatch(expr, -1) {
		for l := range strings.SplitSeq(g[1], ",") {
			l = strings.TrimSpace(l)
			if l != "" && !slices.Contains(all, l) && !slices.Contains(targetLabels, l) {
				problems = append(problems, fmt.Sprintf("%s: %q groups by %s, which none of its metrics has", what, expr, l))
			}
		}
	}
	return problems
}

// TestCheckQueryCatchesWrongNames: the checker the dashboard and alert
// tests rely on refuses metrics and labels that do not exist.
func TestCheckQueryCatchesWrongNames(t *testing.T) {
	known := knownMetrics(t)
	for _, tc := range []struct {
		expr string
		ok   bool
	}{
		{`max by (state) (routekeeper_association_problems{job="x"}) > 0`, true},
		{`histogram_quantile(0.99, sum by (le, method) (rate(routekeeper_arm_request_duration_seconds_bucket[5m])))`, true},
		{`routekeeper_association_problem > 0`, false},
		{`max by (reason) (routekeeper_association_problems)`, false},
		{`routekeeper_nodes{kind="routed"}`, false},
		{`sum(rate(http_requests_total[5m]))`, false},
	} {
		t.Run(tc.expr, func(t *testing.T) {
			problems := checkQuery(known, "test", tc.expr)
			if (len(problems) == 0) != tc.ok {
				t.Errorf("checkQuery(%q) = %q, want ok %v", tc.expr, problems, tc.ok)
			}
		})
	}
}

// TestGrafanaDashboard: deploy/grafana/routekeeper.json is a Grafana
// dashboard whose every query asks for metrics routekeeper serves.
func TestGrafanaDashboard(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "deploy", "grafana", "routekeeper.json"))
	if err != nil {
		t.Fatal(err)
	}
	type target struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	}
	type panel struct {
		ID      int      `json:"id"`
		Type    string   `json:"type"`
		Title   string   `json:"title"`
		Targets []target `json:"targets"`
		GridPos struct{ X, Y, W, H int }
	}
	var d struct {
		UID           string  `json:"uid"`
		Title         string  `json:"title"`
		SchemaVersion int     `json:"schemaVersion"`
		Panels        []panel `json:"panels"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("routekeeper.json: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("uid %q, title %q, schemaVersion %d: Grafana needs all three", d.UID, d.Title, d.SchemaVersion)
	}
	known := knownMetrics(t)
	queried := map[string]bool{}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if len(p.Targets) == 0 || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %q: %d queries, size %dx%d", p.Title, len(p.Targets), p.GridPos.W, p.GridPos.H)
		}
		for _, tg := range p.Targets {
			for _, p := range checkQuery(known, "panel "+p.Title, tg.Expr) {
				t.Error(p)
			}
			for _, m := range metricName.FindAllStringSubmatch(tg.Expr, -1) {
				queried[strings.TrimSuffix(m[1], "_bucket")] = true
			}
		}
	}
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(map[string]any)
		expr, _ := q["query"].(string)
		for _, p := range checkQuery(known, "variable "+v.Name, expr) {
			t.Error(p)
		}
	}
	// Every routekeeper metric is on the dashboard.
	for name := range known {
		if strings.HasPrefix(name, "routekeeper_") && !strings.HasSuffix(name, "_sum") && !strings.HasSuffix(name, "_count") &&
			!queried[strings.TrimSuffix(name, "_bucket")] {
			t.Errorf("routekeeper metric %s is on no panel", name)
		}
	}
}
