package scenario

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

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

// New returns the world a script starts in: no configuration, an empty
// cloud, no nodes.
func New() *World { return &World{cloud: memcloud.New()} }

// World is a script's state between steps.
type World struct {
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
func (w *World) remember(v *verdict.Verdict) {
	w.routed = map[string]bool{}
	for name, n := range v.Nodes {
		if n.Routed {
			w.routed[name] = true
		}
	}
}

// Do runs one step of a script and returns what it prints.
func (w *World) Do(s Step) (string, error) {
	switch s.Cmd {
	case "config":
		return "", w.config(s.Args)
	case "cloud":
		c, err := ParseCloud(s.Input)
		if err != nil {
			return "", err
		}
		w.cloud = c
		return "", nil
	case "nodes":
		nodes, err := ParseNodes(s.Input)
		w.want.Nodes = nodes
		return "", err
	case "judge":
		w.obs = observe.Observe(context.Background(), w.cloud, observe.Scope{Table: cmp.Or(w.want.Table, w.want.Configured), Subnets: w.subnets(), Networks: true,
			NextHops: observe.NextHops(w.want.Nodes)})
		w.want.Routed = w.routed
		w.last, w.out = verdict.Judge(w.obs, w.want, nil), nil
		w.remember(w.last)
		return w.render(w.last, true), checkVocabulary(w.last)
	case "outcome":
		if w.last == nil {
			return "", errors.New("outcome before judge")
		}
		out, err := w.outcome(s.Input)
		if err != nil {
			return "", err
		}
		w.out = out
		v := verdict.Judge(w.obs, w.want, out)
		w.remember(v)
		return w.render(v, false), checkVocabulary(v)
	case "apply":
		return "", w.apply()
	}
	return "", fmt.Errorf("unknown command %q", s.Cmd)
}

func (w *World) subnets() []string { return w.subnetIDs }

// render is a verdict of the state, with its findings and the exit code
// of the state.
func (w *World) render(v *verdict.Verdict, actions bool) string {
	return Render(v, actions) + "\n" + RenderFindings(v.Findings())
}

func (w *World) config(args []string) error {
	w.want = verdict.Desired{Cluster: "kthw", ClusterCIDRs: []netip.Prefix{netip.MustParsePrefix("10.200.0.0/16")}, Configured: TableID("rt"),
		CreateAllowed: true, Location: "eastus", Nodes: w.want.Nodes}
	w.subnetIDs = []string{SubnetID(DefaultVNet, "nodes")}
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
			w.want.Configured = TableID(v)
		case "kept":
			w.want.Table = TableID(v)
		case "subnets":
			w.subnetIDs = nil
			if v != "" {
				for _, s := range strings.Split(v, ",") {
					vnet, name, found := strings.Cut(s, "/")
					if !found {
						vnet, name = DefaultVNet, s
					}
					w.subnetIDs = append(w.subnetIDs, SubnetID(vnet, name))
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
			w.want.Previous = append(w.want.Previous, TableID(v))
		case "followedFrom":
			w.want.FollowedFrom = TableID(v)
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
func (w *World) outcome(lines []string) (*verdict.Outcome, error) {
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
			id := SubnetID(DefaultVNet, f[1])
			if vnet, name, found := strings.Cut(f[1], "/"); found {
				id = SubnetID(vnet, name)
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
		return verdict.Write{Err: fmt.Errorf("writing %s: 412 PreconditionFailed", Short(id)), Raced: true}, true
	case "lost":
		return verdict.Write{Err: fmt.Errorf("writing %s: outcome unknown, the answer was lost (read: connection reset by peer)", Short(id)), Lost: true}, true
	case "failed":
		return verdict.Write{Err: fmt.Errorf("writing %s: 500 InternalServerError", Short(id))}, true
	case "denied":
		r = observe.Refusal{Code: observe.CodeAuthorizationFailed, Principal: oid, Action: action, Scope: id}
	case "linked":
		r = observe.Refusal{Code: observe.CodeLinkedAuthorizationFailed, Principal: oid, Action: action, Scope: id,
			LinkedActions: []string{"Microsoft.Network/routeTables/join/action"}, LinkedScopes: []string{TableID("rt")}}
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
	return verdict.Write{Err: fmt.Errorf("writing %s: %d %s", Short(id), status, r.Code), Refused: &r}, true
}

// apply makes the cloud what the last outcome wrote: the table read back,
// the subnets associated.
func (w *World) apply() error {
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

func ParseNodes(lines []string) ([]source.Node, error) {
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
