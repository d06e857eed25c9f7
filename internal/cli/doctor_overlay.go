package cli

import (
	"context"
	"fmt"
	"net/netip"
	"strings"

	"github.com/spf13/pflag"

	"github.com/routekeeper/routekeeper/internal/config"
	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/overlay"
)

// targetOverlay is doctor --target's one value: the pre-flight of a move
// to an overlay CNI (internal/overlay).
const targetOverlay = "overlay"

// overlayFlags are doctor's flags for the pre-flight.
type overlayFlags struct {
	target   string
	podCIDRs []string
	maxPods  int
}

func (f *overlayFlags) register(fs *pflag.FlagSet) {
	fs.StringVar(&f.target, "target", "", "check a move instead: overlay (the pre-flight of a move from host routes to an overlay CNI: AKS's Azure CNI Overlay, Cilium, Calico VXLAN)")
	fs.StringSliceVar(&f.podCIDRs, "pod-cidr", nil, "with --target overlay: the target pod CIDR, one per IP family (default: the cluster CIDRs, which AKS keeps when az aks update gets no --pod-cidr)")
	fs.IntVar(&f.maxPods, "max-pods", 0, "with --target overlay: maximum pods per node of the target (10 to 250; default Overlay's 250)")
}

// parse checks the flags: nil target when no pre-flight was asked for.
func (f *overlayFlags) parse() (*overlay.Target, error) {
	switch f.target {
	case "":
		if len(f.podCIDRs) > 0 || f.maxPods != 0 {
			return nil, usageErrorf("--pod-cidr and --max-pods go with --target overlay")
		}
		return nil, nil
	case targetOverlay:
	default:
		return nil, usageErrorf("--target %q: the one target is %s", f.target, targetOverlay)
	}
	t := &overlay.Target{MaxPods: f.maxPods}
	fams := map[bool]string{}
	for _, s := range f.podCIDRs {
		p, err := netip.ParsePrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, usageErrorf("--pod-cidr %q: not a CIDR (for example 192.168.0.0/16): %v", s, err)
		}
		if p != p.Masked() {
			return nil, usageErrorf("--pod-cidr %q: host bits set; did you mean %s?", s, p.Masked())
		}
		if other, dup := fams[p.Addr().Is4()]; dup {
			return nil, usageErrorf("--pod-cidr %q: a second %s pod CIDR besides %s; give one per IP family", s, family(p), other)
		}
		fams[p.Addr().Is4()] = s
		t.PodCIDRs = append(t.PodCIDRs, p)
	}
	if f.maxPods != 0 && (f.maxPods < 10 || f.maxPods > 250) {
		return nil, usageErrorf("--max-pods %d: Overlay allows 10 to 250 pods per node", f.maxPods)
	}
	return t, nil
}

func family(p netip.Prefix) string {
	if p.Addr().Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// overlayInput is the pre-flight's input from doctor's dry run: the main
// table's verdict and observation, the mirrors' verdicts, the
// configuration and what the cluster says of ip-masq-agent.
func (a *shell) overlayInput(ctx context.Context, cfg *config.Config, all []*controller.Result, target overlay.Target) (overlay.Input, error) {
	res := all[0]
	v := res.Verdict
	st, err := res.Observation.RoutingState(res.SourceNodes())
	if err != nil {
		return overlay.Input{}, err
	}
	in := overlay.Input{
		Cluster: cfg.Cluster.Name, ClusterCIDRs: cfg.Cluster.ClusterCIDRs, ServiceCIDRs: cfg.Cluster.ServiceCIDRs,
		Platform: cfg.Routes == config.RoutesObserve, Subnets: cfg.Subnets,
		TableID: v.Table, Table: v.Current, Routing: st, Target: target,
	}
	for i, m := range cfg.Mirrors {
		om := overlay.Mirror{TableID: m.RouteTable, Subnets: m.Subnets}
		if i+1 < len(all) && all[i+1].Verdict != nil {
			om.Table = all[i+1].Verdict.Current
		}
		in.Mirrors = append(in.Mirrors, om)
	}
	in.Masq, in.MasqNote = a.readMasq(ctx, cfg)
	return in, nil
}

// runOverlayPreflight prints the pre-flight and returns findings() when
// it has an error: the move would fail or break traffic.
func (a *shell) runOverlayPreflight(in overlay.Input) error {
	rep, err := overlay.Check(in)
	if err != nil {
		return err
	}
	if a.humanOutput() {
		kept := ""
		if rep.KeptPodCIDR {
			kept = ", the cluster's current one"
		}
		fmt.Fprintf(a.stdout, "Pre-flight of the move to an overlay: target pod CIDR %s%s; %d nodes; route table %s.\n\n",
			strings.Join(prefixes(rep.Target), ", "), kept, rep.Nodes, shortID(rep.Table))
	}
	tool := finding.Tool{Name: "routekeeper doctor --target overlay", InformationURI: docsURL("aks-overlay.md")}
	if err := a.printFindings(findingsOutput{v: rep, findings: rep.Findings, tool: tool}); err != nil {
		return err
	}
	if a.humanOutput() {
		if n := rep.Errors(); n > 0 {
			fmt.Fprintf(a.stdout, "\n%d error(s): the move would fail or break traffic; %d findings in all (docs/aks-overlay.md).\n", n, len(rep.Findings))
		} else {
			fmt.Fprintf(a.stdout, "\nNothing blocks the move; %d findings in all (docs/aks-overlay.md).\n", len(rep.Findings))
		}
	}
	if rep.Errors() > 0 {
		return findings()
	}
	return nil
}

func prefixes(ps []netip.Prefix) []string {
	out := make([]string, 0, len(ps))
	for _, p := range ps {
		out = append(out, p.String())
	}
	return out
}
