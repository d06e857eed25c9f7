package cli

import (
	"fmt"
	"net/netip"
	"strings"

	"github.com/spf13/pflag"

	"github.com/routekeeper/routekeeper/internal/armid"
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

// printOverlayPreflight prints the pre-flight and returns findings() when
// it has an error: the move would fail or break traffic.
func (a *shell) printOverlayPreflight(rep *overlay.Report) error {
	if a.humanOutput() {
		kept := ""
		if rep.KeptPodCIDR {
			kept = ", the cluster's current one"
		}
		fmt.Fprintf(a.stdout, "Pre-flight of the move to an overlay: target pod CIDR %s%s; %d nodes; route table %s.\n\n",
			strings.Join(prefixes(rep.Target), ", "), kept, rep.Nodes, armid.Short(rep.Table))
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
