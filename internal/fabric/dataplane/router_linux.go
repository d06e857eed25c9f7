package dataplane

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
)

// kernelRoute is a route as `ip -j route show` prints it.
type kernelRoute struct {
	Type    string   `json:"type"`
	Dst     string   `json:"dst"`
	Gateway string   `json:"gateway"`
	Dev     string   `json:"dev"`
	Table   string   `json:"table"`
	Flags   []string `json:"flags"`
}

type kernelRule struct {
	Priority int    `json:"priority"`
	IIf      string `json:"iif"`
	Table    string `json:"table"`
	Src      string `json:"src"` // "" for all
	SrcLen   int    `json:"srclen"`
	Action   string `json:"action"` // "blackhole", or "" for a lookup
}

// routeKey names a route in a table the way ip prints it.
func routeKey(table int, p netip.Prefix) string {
	dst := p.String()
	switch {
	case p.Bits() == 0:
		dst = "default"
	case p.Bits() == 32:
		dst = p.Addr().String()
	}
	return strconv.Itoa(table) + " " + dst
}

// routes makes the router of v hold, for every subnet, a table with the
// subnet's effective routes, the rules that pick it by ingress interface,
// and the host table of the VNet's NICs; it changes only what differs,
// adding and replacing before deleting.
func (p *Plane) routes(ctx context.Context, spec Spec, v VNet) error {
	rns := routerNS(p.prefix, v.Name)
	type want struct{ line, typ, gw, dev string }
	desired := map[string]want{} // routeKey -> how
	add := func(table int, pfx netip.Prefix, typ string, gw netip.Addr, dev string) {
		k := routeKey(table, pfx)
		line := fmt.Sprintf("route replace %s %s table %d", typ, pfx, table)
		if typ == "unicast" {
			line = fmt.Sprintf("route replace %s dev %s table %d", pfx, dev, table)
			if gw.IsValid() {
				line = fmt.Sprintf("route replace %s via %s dev %s onlink table %d", pfx, gw, dev, table)
			}
		}
		w := want{line: line, typ: typ, dev: dev}
		if gw.IsValid() {
			w.gw = gw.String()
		}
		desired[k] = w
	}
	nics := map[netip.Addr]bool{}
	var wantRules []kernelRule
	tableOf := map[int]string{}
	for _, s := range v.Subnets {
		t := subnetTable(s.Name)
		if other, ok := tableOf[t]; ok {
			return fmt.Errorf("virtual network %s: subnets %q and %q hash to the same routing table %d; rename one", v.Name, other, s.Name, t)
		}
		tableOf[t] = s.Name
	}
	for _, n := range spec.Nodes {
		if n.VNet != v.Name {
			continue
		}
		nics[n.IP] = true
		add(hostTable, netip.PrefixFrom(n.IP, 32), "unicast", netip.Addr{}, nodeLink(n.IP))
		wantRules = append(wantRules, kernelRule{Priority: rulePrefSubnet, IIf: nodeLink(n.IP), Table: strconv.Itoa(subnetTable(n.Subnet))})
	}
	add(hostTable, netip.MustParsePrefix("0.0.0.0/0"), "blackhole", netip.Addr{}, "")
	wantRules = append(wantRules, kernelRule{Priority: rulePrefHosts, Table: strconv.Itoa(hostTable)})
	for _, s := range v.Subnets {
		t := subnetTable(s.Name)
		for _, r := range s.Routes {
			switch {
			case r.Peer != "" && (r.Kind == Deliver || r.Kind == Appliance):
				// Into a peered network: over the link to its router
				// (peering_linux.go).
				add(t, r.Prefix, "unicast", peerGateway(spec, v.Name, r.Peer), peerLink(r.Peer))
			case r.Kind == Deliver:
				add(t, r.Prefix, "throw", netip.Addr{}, "")
			case r.Kind == Appliance && nics[r.Via]:
				add(t, r.Prefix, "unicast", r.Via, nodeLink(r.Via))
			case r.Kind == Appliance, r.Kind == Blackhole:
				add(t, r.Prefix, "blackhole", netip.Addr{}, "")
			default:
				add(t, r.Prefix, "unreachable", netip.Addr{}, "")
			}
		}
	}

	wantRules = append(wantRules, peerRoutes(spec, v, add)...)

	out, err := ip(ctx, "-n", rns, "-4", "-j", "route", "show", "table", "all")
	if err != nil {
		return err
	}
	var have []kernelRoute
	if err := json.Unmarshal(out, &have); err != nil {
		return fmt.Errorf("reading routes of %s: %w", rns, err)
	}
	var replace, remove []string
	seen := map[string]bool{}
	for _, r := range have {
		t, err := strconv.Atoi(r.Table)
		if err != nil || (t != hostTable && t < 1000) {
			continue // local, main: not ours
		}
		typ := r.Type
		if typ == "" {
			typ = "unicast"
		}
		k := strconv.Itoa(t) + " " + r.Dst
		w, ok := desired[k]
		if !ok {
			remove = append(remove, fmt.Sprintf("route del %s %s table %d", typ, r.Dst, t))
			continue
		}
		seen[k] = true
		if w.typ != typ || w.gw != r.Gateway || (w.dev != "" && w.dev != r.Dev) {
			replace = append(replace, w.line)
		}
	}
	for k, w := range desired {
		if !seen[k] {
			replace = append(replace, w.line)
		}
	}
	slices.Sort(replace)

	out, err = ip(ctx, "-n", rns, "-4", "-j", "rule", "show")
	if err != nil {
		return err
	}
	var rules []kernelRule
	if err := json.Unmarshal(out, &rules); err != nil {
		return fmt.Errorf("reading rules of %s: %w", rns, err)
	}
	for i := range rules {
		if rules[i].Src == "all" {
			rules[i].Src = ""
		}
	}
	var addRules, delRules []string
	for _, w := range wantRules {
		if !slices.Contains(rules, w) {
			addRules = append(addRules, ruleLine("add", w))
		}
	}
	for _, r := range rules {
		ours := r.Priority == rulePrefSubnet || r.Priority == rulePrefHosts || r.Priority >= rulePrefPeerAppliance && r.Priority <= rulePrefPeerDrop
		if ours && !slices.Contains(wantRules, r) {
			delRules = append(delRules, ruleLine("del", r))
		}
	}
	lines := slices.Concat(replace, addRules, delRules, remove)
	if len(lines) == 0 {
		return nil
	}
	if err := batch(ctx, rns, lines); err != nil {
		return fmt.Errorf("router of virtual network %s: %w", v.Name, err)
	}
	p.log.Debug("data plane: routes applied", "vnet", v.Name, "replaced", len(replace), "removed", len(remove),
		"rulesAdded", len(addRules), "rulesRemoved", len(delRules))
	return nil
}

func ruleLine(verb string, r kernelRule) string {
	line := fmt.Sprintf("rule %s pref %d", verb, r.Priority)
	if r.Src != "" {
		line += fmt.Sprintf(" from %s/%d", r.Src, r.SrcLen)
	}
	if r.IIf != "" {
		line += " iif " + r.IIf
	}
	if r.Action == "blackhole" {
		return line + " blackhole"
	}
	return line + " lookup " + r.Table
}
