package verdict_test

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/observe/memcloud"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/route"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected output of testdata/scenarios/*.txt with what the verdict says now")

// TestScenarios replays the scripts in testdata/scenarios: each is a
// sequence of steps — the configuration, what the cloud looks like, the
// nodes, the outcome of a write — and after each `judge` the verdict it
// expects, rendered as text. Run with -rewrite when a change is intended,
// and read the diff.
//
// The steps (one command line, its input lines, "----", the expected
// output, a blank line):
//
//	config key=value...   cluster, cidrs, table, subnets, policy, restore,
//	                      create, mode, adopt, claim, limit, maxDeletes,
//	                      allowEmptySource, confirmStandDown, previous,
//	                      followedFrom, existed
//	cloud                 the whole cloud, replacing the last one:
//	                        vnet NAME PREFIX[,PREFIX]
//	                        subnet NAME PREFIX [vnet=V] [table=T] [missing] [unreadable]
//	                        table NAME [claim=C] [tag=K:V] [missing] [unreadable]
//	                          route NAME PREFIX HOP|TYPE [state=S]
//	                        peering NAME vnet=V remote=R space=PREFIX[,PREFIX] [state=S]
//	nodes                 NAME IP[,IP] [CIDR[,CIDR]] [problem=REASON] [available]
//	                      (available: its NetworkUnavailable condition is
//	                      False, the cluster holds it routed)
//	judge                 observe the cloud and judge with no outcome yet
//	outcome               the writes of the last judged verdict's actions:
//	                        table ok|412|denied|failed
//	                        subnet NAME ok|412|denied|failed
//	                      then judge again with that outcome (printed)
//	apply                 make the cloud what the last outcome wrote
//
// Names are short: table rt is .../routeTables/rt, subnet nodes in vnet
// v is .../virtualNetworks/v/subnets/nodes, all in one resource group.
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 40 {
		t.Errorf("%d scenario scripts, want at least 40", len(files))
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			runScript(t, f)
		})
	}
}

const (
	scnPrefix = "/subscriptions/s/resourceGroups/rg/providers/Microsoft.Network/"
	scnVNet   = "v"
)

func tableID(name string) string { return scnPrefix + "routeTables/" + name }
func vnetID(name string) string  { return scnPrefix + "virtualNetworks/" + name }
func subnetID(vnet, name string) string {
	return vnetID(vnet) + "/subnets/" + name
}

// short makes the IDs in a text relative to the resource group's
// providers, for readable expectations.
func short(s string) string { return strings.ReplaceAll(s, scnPrefix, "") }

// step is one command of a script.
type step struct {
	line   int
	cmd    string
	args   []string
	input  []string
	output string
}

func parseScript(t *testing.T, path string) (head []string, steps []step) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	i := 0
	for i < len(lines) && (strings.HasPrefix(lines[i], "#") || strings.TrimSpace(lines[i]) == "") {
		head = append(head, lines[i])
		i++
	}
	for i < len(lines) {
		if strings.TrimSpace(lines[i]) == "" || strings.HasPrefix(lines[i], "#") {
			i++
			continue
		}
		f := strings.Fields(lines[i])
		s := step{line: i + 1, cmd: f[0], args: f[1:]}
		i++
		for i < len(lines) && lines[i] != "----" {
			s.input = append(s.input, lines[i])
			i++
		}
		if i == len(lines) {
			t.Fatalf("%s:%d: %s has no ---- line", path, s.line, s.cmd)
		}
		i++ // ----
		var out []string
		for i < len(lines) && strings.TrimSpace(lines[i]) != "" {
			out = append(out, lines[i])
			i++
		}
		s.output = strings.Join(out, "\n")
		steps = append(steps, s)
	}
	return head, steps
}

func runScript(t *testing.T, path string) {
	head, steps := parseScript(t, path)
	w := &world{cloud: memcloud.New()}
	var b strings.Builder
	for _, l := range head {
		b.WriteString(l + "\n")
	}
	for i, s := range steps {
		got, err := w.do(s)
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", path, s.line, s.cmd, err)
		}
		if !*rewrite && got != s.output {
			t.Errorf("%s:%d: %s:\n got:\n%s\nwant:\n%s", path, s.line, s.cmd, got, s.output)
		}
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(strings.Join(append([]string{s.cmd}, s.args...), " ") + "\n")
		for _, l := range s.input {
			b.WriteString(l + "\n")
		}
		b.WriteString("----\n")
		if got != "" {
			b.WriteString(got + "\n")
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// world is a script's state between steps.
type world struct {
	want      verdict.Desired
	subnetIDs []string
	cloud     *memcloud.Cloud
	obs       *observe.Observation
	last      *verdict.Verdict
	out       *verdict.Outcome
	// routed are the nodes the last verdict found routed: what the
	// controller remembers for its next pass (verdict.Desired.Routed).
	routed map[string]bool
}

// remember keeps the nodes v found routed for the next pass, as the
// controller does.
func (w *world) remember(v *verdict.Verdict) {
	w.routed = map[string]bool{}
	for name, n := range v.Nodes {
		if n.Routed {
			w.routed[name] = true
		}
	}
}

func (w *world) do(s step) (string, error) {
	switch s.cmd {
	case "config":
		return "", w.config(s.args)
	case "cloud":
		c, err := parseCloud(s.input)
		if err != nil {
			return "", err
		}
		w.cloud = c
		return "", nil
	case "nodes":
		nodes, err := parseNodes(s.input)
		w.want.Nodes = nodes
		return "", err
	case "judge":
		w.obs = observe.Observe(context.Background(), w.cloud, observe.Scope{Table: cmp.Or(w.want.Table, w.want.Configured), Subnets: w.subnets(), Networks: true,
			NextHops: observe.NextHops(w.want.Nodes)})
		w.want.Routed = w.routed
		w.last, w.out = verdict.Judge(w.obs, w.want, nil), nil
		w.remember(w.last)
		return render(w.last, true), checkVocabulary(w.last)
	case "outcome":
		if w.last == nil {
			return "", errors.New("outcome before judge")
		}
		out, err := w.outcome(s.input)
		if err != nil {
			return "", err
		}
		w.out = out
		v := verdict.Judge(w.obs, w.want, out)
		w.remember(v)
		return render(v, false), checkVocabulary(v)
	case "apply":
		return "", w.apply()
	}
	return "", fmt.Errorf("unknown command %q", s.cmd)
}

func (w *world) subnets() []string { return w.subnetIDs }

func (w *world) config(args []string) error {
	w.want = verdict.Desired{Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}, Configured: tableID("rt"),
		CreateAllowed: true, Location: "eastus", Nodes: w.want.Nodes}
	w.subnetIDs = []string{subnetID(scnVNet, "nodes")}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("config %q: want key=value", a)
		}
		var err error
		switch k {
		case "cluster":
			w.want.Cluster = v
		case "cidrs":
			w.want.ClusterCIDRs = nil
			for _, c := range strings.Split(v, ",") {
				p, perr := netip.ParsePrefix(c)
				if perr != nil {
					return perr
				}
				w.want.ClusterCIDRs = append(w.want.ClusterCIDRs, p)
			}
		case "table":
			w.want.Configured = tableID(v)
		case "kept":
			w.want.Table = tableID(v)
		case "subnets":
			w.subnetIDs = nil
			if v != "" {
				for _, s := range strings.Split(v, ",") {
					vnet, name, found := strings.Cut(s, "/")
					if !found {
						vnet, name = scnVNet, s
					}
					w.subnetIDs = append(w.subnetIDs, subnetID(vnet, name))
				}
			}
		case "policy":
			w.want.Policy = assoc.Policy(v)
		case "restore":
			w.want.Restore, err = strconv.ParseBool(v)
		case "create":
			w.want.CreateAllowed, err = strconv.ParseBool(v)
		case "mode":
			w.want.Mode = verdict.Mode(v)
		case "adopt":
			w.want.Adopt = plan.AdoptPolicy(v)
		case "claim":
			w.want.Claim, err = strconv.ParseBool(v)
		case "limit":
			w.want.Limit, err = strconv.Atoi(v)
		case "maxDeletes":
			w.want.MaxDeletes, err = strconv.Atoi(v)
		case "allowEmptySource":
			w.want.AllowEmptySource, err = strconv.ParseBool(v)
		case "confirmStandDown":
			w.want.ConfirmStandDown, err = strconv.ParseBool(v)
		case "previous":
			w.want.Previous = append(w.want.Previous, tableID(v))
		case "followedFrom":
			w.want.FollowedFrom = tableID(v)
		case "existed":
			w.want.TableExisted, err = strconv.ParseBool(v)
		default:
			return fmt.Errorf("config: unknown key %q", k)
		}
		if err != nil {
			return fmt.Errorf("config %s: %w", a, err)
		}
	}
	return nil
}

// outcome turns the outcome lines into the writes' outcome, checking
// that each write is one the verdict called for.
func (w *world) outcome(lines []string) (*verdict.Outcome, error) {
	out := &verdict.Outcome{Subnets: map[string]verdict.Write{}}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch {
		case f[0] == "table" && len(f) >= 2:
			t, _, ok := w.last.TableWrite()
			if !ok {
				return nil, errors.New("outcome table: the verdict writes no table")
			}
			tw := &verdict.TableWrite{}
			if f[1] == "ok" {
				// ok [state=S] [drop=ROUTE]: read back Succeeded (or S),
				// without ROUTE.
				rb := t.Clone()
				rb.Etag = `W/"written"`
				state := "Succeeded"
				for _, x := range f[2:] {
					k, v, _ := strings.Cut(x, "=")
					switch k {
					case "state":
						state = v
					case "drop":
						rb.Routes = slices.DeleteFunc(rb.Routes, func(r route.Route) bool { return r.Name == v })
					default:
						return nil, fmt.Errorf("outcome %q: unknown %q", l, x)
					}
				}
				for i := range rb.Routes {
					rb.Routes[i].ProvisioningState = state
				}
				tw.ReadBack = rb
			} else if w, ok := writeOutcome(f[1], t.ID); ok {
				tw.Write = w
			} else {
				return nil, fmt.Errorf("outcome %q: want ok, 412, lost, failed, denied, linked, locked or policy", l)
			}
			out.Table = tw
		case f[0] == "subnet" && len(f) == 3:
			id := subnetID(scnVNet, f[1])
			if vnet, name, found := strings.Cut(f[1], "/"); found {
				id = subnetID(vnet, name)
			}
			if !slices.ContainsFunc(w.last.Associations(), func(s verdict.Subnet) bool { return armid.Same(s.Subnet, id) }) {
				return nil, fmt.Errorf("outcome %q: the verdict does not associate that subnet", l)
			}
			var w verdict.Write
			if f[2] != "ok" {
				var ok bool
				if w, ok = writeOutcome(f[2], id); !ok {
					return nil, fmt.Errorf("outcome %q: want ok, 412, lost, failed, denied, linked, locked or policy", l)
				}
			}
			out.Subnets[armid.Key(id)] = w
		default:
			return nil, fmt.Errorf("outcome line %q", l)
		}
	}
	return out, nil
}

// writeOutcome is the outcome of a write of id that ended as kind: 412,
// lost (sent, its answer lost: outcome unknown), failed (500), or one of ARM's refusals (denied, linked, locked, policy)
// with what its message names, as the controller hands them over.
func writeOutcome(kind, id string) (verdict.Write, bool) {
	const oid = "11111111-2222-3333-4444-555555555555"
	action := "Microsoft.Network/routeTables/write"
	if strings.Contains(id, "/subnets/") {
		action = "Microsoft.Network/virtualNetworks/subnets/write"
	}
	var r observe.Refusal
	switch kind {
	case "412":
		return verdict.Write{Err: fmt.Errorf("writing %s: 412 PreconditionFailed", short(id)), Raced: true}, true
	case "lost":
		return verdict.Write{Err: fmt.Errorf("writing %s: outcome unknown, the answer was lost (read: connection reset by peer)", short(id)), Lost: true}, true
	case "failed":
		return verdict.Write{Err: fmt.Errorf("writing %s: 500 InternalServerError", short(id))}, true
	case "denied":
		r = observe.Refusal{Code: observe.CodeAuthorizationFailed, Principal: oid, Action: action, Scope: id}
	case "linked":
		r = observe.Refusal{Code: observe.CodeLinkedAuthorizationFailed, Principal: oid, Action: action, Scope: id,
			LinkedActions: []string{"Microsoft.Network/routeTables/join/action"}, LinkedScopes: []string{tableID("rt")}}
	case "locked":
		r = observe.Refusal{Code: observe.CodeScopeLocked, Scope: id, Operation: "write", Lock: "/subscriptions/s/resourceGroups/rg"}
	case "policy":
		r = observe.Refusal{Code: observe.CodeRequestDisallowedByPolicy,
			PolicyAssignment: "/subscriptions/s/providers/Microsoft.Authorization/policyAssignments/no-nva",
			PolicyDefinition: "/subscriptions/s/providers/Microsoft.Authorization/policyDefinitions/deny-nva"}
	default:
		return verdict.Write{}, false
	}
	status := 403
	if r.Code == observe.CodeScopeLocked {
		status = 409
	}
	return verdict.Write{Err: fmt.Errorf("writing %s: %d %s", short(id), status, r.Code), Refused: &r}, true
}

// apply makes the cloud what the last outcome wrote: the table read back,
// the subnets associated.
func (w *world) apply() error {
	if w.out == nil {
		return errors.New("apply before outcome")
	}
	if tw := w.out.Table; tw != nil && tw.ReadBack != nil {
		t := tw.ReadBack.Clone()
		if old := w.cloud.Tables[armid.Key(t.ID)]; old != nil {
			t.Subnets = old.Subnets
		}
		w.cloud.Tables[armid.Key(t.ID)] = t
	}
	for _, s := range w.last.Associations() {
		if r, ok := w.out.Subnets[armid.Key(s.Subnet)]; ok && r.Err == nil {
			sn := w.cloud.Subnets[armid.Key(s.Subnet)]
			sn.RouteTableID = w.last.Table
			sn.Etag += "+"
		}
	}
	return nil
}

// checkVocabulary holds every verdict of every script to the vocabulary:
// each node has a known reason, and it is routed exactly when its reason
// says so.
func checkVocabulary(v *verdict.Verdict) error {
	for name, n := range v.Nodes {
		if !n.Reason.Known() {
			return fmt.Errorf("node %s: reason %q is not in internal/reason's vocabulary", name, n.Reason)
		}
		if n.Routed != n.Reason.Routed() {
			return fmt.Errorf("node %s: routed=%v with reason %s", name, n.Routed, n.Reason)
		}
	}
	return nil
}

func parseNodes(lines []string) ([]source.Node, error) {
	var out []source.Node
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return nil, fmt.Errorf("node line %q: want NAME IP [CIDR]", l)
		}
		n := source.Node{Name: f[0]}
		for _, ip := range strings.Split(f[1], ",") {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				return nil, err
			}
			n.InternalIPs = append(n.InternalIPs, a)
		}
		for _, x := range f[2:] {
			if x == "available" {
				n.NetworkAvailable = true
				continue
			}
			if p, ok := strings.CutPrefix(x, "problem="); ok {
				n.Problem = &source.Problem{Reason: reason.Reason(p), Message: "the source could not complete the node: " + p}
				continue
			}
			for _, c := range strings.Split(x, ",") {
				p, err := netip.ParsePrefix(c)
				if err != nil {
					return nil, err
				}
				n.PodCIDRs = append(n.PodCIDRs, p)
			}
		}
		out = append(out, n)
	}
	return out, nil
}

// render is a verdict as the scripts expect it. actions: also the actions
// (a verdict before any write).
func render(v *verdict.Verdict, actions bool) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	d := v.Decision
	line := "table " + armid.Name(v.Table)
	switch {
	case d.TableErr != nil:
		line += ": unreadable"
	case v.Current == nil && d.Create && !v.Wrote:
		line += ": missing, created"
	case v.Current == nil:
		line += ": missing"
	}
	if d.Switch != assoc.NoSwitch {
		line += fmt.Sprintf(" (%s from %s)", d.Switch, armid.Name(d.From))
	}
	p("%s", line)
	if d.CreateBlocked != "" && !d.TableExists {
		p("  not created: %s", d.CreateBlocked)
	}
	for _, n := range d.Notes {
		p("  note: %s", short(n))
	}
	if actions {
		if t, etag, ok := v.TableWrite(); ok {
			ifm := "If-None-Match: *"
			if etag != "" {
				ifm = "If-Match: " + etag
			}
			p("write %s (%s): %s", armid.Name(t.ID), ifm, strings.Join(routeList(t), ", "))
			for _, c := range v.Plan.Changes {
				extra := ""
				if c.Adopts != "" {
					extra = " (adopts " + c.Adopts + ")"
				}
				p("  %s %s %s%s: %s", c.Kind, c.Route.Name, c.Route.AddressPrefix, extra, c.Reason)
			}
			if v.Plan.Claim {
				p("  claim")
			}
		}
		var as []string
		for _, s := range v.Associations() {
			as = append(as, shortSubnet(s.Subnet))
		}
		if len(as) > 0 {
			p("associate: %s", strings.Join(as, ", "))
		}
	}
	if v.Plan != nil {
		for _, c := range v.Plan.HeldDeletes {
			p("held: %s %s: %s", c.Route.Name, c.Route.AddressPrefix, c.Reason)
		}
		for _, c := range v.Plan.Unclaimed {
			p("unclaimed: %s %s", c.Route.Name, c.Route.AddressPrefix)
		}
		if v.Plan.Refused != "" {
			p("refused: %s", v.Plan.RefusedReason)
		}
	}
	for _, s := range v.Subnets {
		on := "none"
		if s.Table != "" {
			on = armid.Name(s.Table)
		}
		flags := ""
		if s.Repaired {
			flags += " repaired"
		}
		if s.Recreated {
			flags += " recreated"
		}
		if s.RepairFailed {
			flags += " repair-failed"
		}
		if s.TableMissing {
			flags += " table-missing"
		}
		if s.Problem() {
			flags += " PROBLEM"
		}
		p("subnet %s: %s on %s, action %s%s", shortSubnet(s.Subnet), s.State, on, s.Action, flags)
		p("  %s", short(s.Message))
		if s.Fix != "" {
			p("  fix: %s", short(s.Fix))
		}
	}
	for _, d := range v.Denials {
		p("denied: %s of %s: %s %s on %s", d.Op, short(d.Resource), d.Code, short(d.Action), short(d.Scope))
		p("  fix: %s", short(d.Fix))
	}
	for _, name := range slices.Sorted(maps.Keys(v.Nodes)) {
		n := v.Nodes[name]
		state := "routed"
		if !n.Routed {
			state = "NOT routed"
		}
		if n.Pending {
			state += " (pending)"
		}
		if n.Actionable {
			state += " (actionable)"
		}
		p("node %s: %s %s: %s", name, state, n.Reason, short(n.Message))
	}
	if v.Err != nil {
		p("error: %s", short(v.Err.Error()))
	}
	return strings.TrimRight(b.String(), "\n")
}

func shortSubnet(id string) string {
	s := short(id)
	s = strings.TrimPrefix(s, "virtualNetworks/"+scnVNet+"/subnets/")
	return strings.Replace(strings.TrimPrefix(s, "virtualNetworks/"), "/subnets/", "/", 1)
}

func routeList(t *route.Table) []string {
	var out []string
	for _, r := range t.Routes {
		hop := string(r.NextHopType)
		if r.NextHopIP.IsValid() {
			hop = r.NextHopIP.String()
		}
		out = append(out, r.AddressPrefix+">"+hop)
	}
	if len(out) == 0 {
		return []string{"(no routes)"}
	}
	return out
}
