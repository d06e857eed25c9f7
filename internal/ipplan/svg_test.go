package ipplan

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

// svgTexts parses the SVG as XML (failing the test if it is not well formed)
// and returns its text content and the number of elements by name.
func svgTexts(t *testing.T, b []byte) (string, map[string]int) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var text strings.Builder
	count := map[string]int{}
	root := ""
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, b)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
				if tok.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q", tok.Name.Space)
				}
			}
			count[tok.Name.Local]++
		case xml.CharData:
			text.Write(tok)
			text.WriteByte('\n')
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	return text.String(), count
}

func TestSVGOverlapsAndEscaping(t *testing.T) {
	p := goodBase()
	p.Subnets[0].Name = `nodes<&>"x"`
	p.PodCIDR = StringList{"10.0.0.0/16"} // overlaps the service CIDR
	p.OnPrem = StringList{"10.0.0.0/8"}   // overlaps pods and services
	p.Subnets[1].Prefix = "172.17.0.0/27"
	r := analyze(t, p)
	if len(r.Overlaps) != 3 {
		t.Fatalf("want 3 overlaps, got %+v", r.Overlaps)
	}
	b := SVG(r)
	text, count := svgTexts(t, b)
	if !strings.Contains(text, `subnet nodes<&>"x"`) {
		t.Errorf("the subnet name did not survive escaping:\n%s", text)
	}
	if bytes.Contains(b, []byte(`nodes<&>`)) {
		t.Error("raw markup characters in the SVG")
	}
	// Each overlap is hatched on both of its lanes, plus the legend swatch.
	if got, want := bytes.Count(b, []byte(`fill="url(#overlap-hatch)"`)), 2*len(r.Overlaps)+1; got != want {
		t.Errorf("%d hatched rectangles, want %d", got, want)
	}
	for _, want := range []string{"overlap: pod 10.0.0.0/16 and service 10.0.0.0/16 share 10.0.0.0/16", "outside the VNet", "10.0.0.0 – 10.255.255.255"} {
		if !strings.Contains(text, want) {
			t.Errorf("SVG text lacks %q", want)
		}
	}
	if count["pattern"] != 1 {
		t.Errorf("%d patterns", count["pattern"])
	}
	if !bytes.Contains(b, []byte(`stroke-dasharray="5,3"`)) {
		t.Error("the subnet outside the VNet is not outlined")
	}
	if !bytes.Equal(b, SVG(r)) {
		t.Error("SVG is not deterministic")
	}
}

func TestSVGAxis(t *testing.T) {
	r := analyze(t, Plan{
		VNet:    StringList{"10.1.0.0/16"},
		Subnets: []Subnet{{Name: "nodes", Prefix: "10.1.0.0/24"}},
		OnPrem:  StringList{"10.0.0.0/8"},
		Plugins: []Plugin{AzureCNI},
	})
	regions := layoutRegions(r)
	// 10/8 holds the VNet and subnet; the service range 10.0/16 is inside it too.
	if len(regions) != 1 {
		t.Fatalf("want one region, got %d", len(regions))
	}
	g := regions[0]
	for j := 1; j < len(g.xs); j++ {
		if g.xs[j] <= g.xs[j-1] {
			t.Errorf("axis not increasing at cut %d: %v", j, g.xs)
		}
	}
	if g.xs[0] != svgAxisX0 || g.xs[len(g.xs)-1] < svgAxisX1-0.01 {
		t.Errorf("axis spans %v–%v, want %v–%v", g.xs[0], g.xs[len(g.xs)-1], svgAxisX0, svgAxisX1)
	}
	// The /24 subnet inside the /8 stays visible.
	lo, hi := bounds(r.Ranges[r.NodeSubnet].Prefix)
	if w := g.x(hi.Plus(1)) - g.x(lo); w < 30 {
		t.Errorf("a /24 in a /8 is %.1f px wide; want it visible", w)
	}
	// Points inside a piece are ordered too.
	if a, b := g.x(lo.Plus(10)), g.x(lo.Plus(100)); !(g.x(lo) < a && a < b && b < g.x(hi.Plus(1))) {
		t.Errorf("x not monotonic inside a piece: %v %v %v %v", g.x(lo), a, b, g.x(hi.Plus(1)))
	}

	// Disjoint ranges get regions of their own, in address order.
	r = analyze(t, Plan{VNet: StringList{"192.168.0.0/16"}, Subnets: []Subnet{{Prefix: "192.168.1.0/24"}}})
	regions = layoutRegions(r)
	if len(regions) != 3 {
		t.Fatalf("want 3 regions (service, pod, VNet), got %d", len(regions))
	}
	for i := 1; i < len(regions); i++ {
		if regions[i].lo.Cmp(regions[i-1].hi) <= 0 {
			t.Errorf("regions out of order: %+v", regions)
		}
	}
	_, count := svgTexts(t, SVG(r))
	if count["g"] < 4 { // 3 regions + legend
		t.Errorf("%d groups", count["g"])
	}
}

func BenchmarkSVG(b *testing.B) {
	p := goodBase()
	p.PodCIDR = StringList{"10.0.0.0/16"}
	p.OnPrem = StringList{"10.0.0.0/8", "192.168.0.0/16"}
	r, err := Analyze(p)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		_ = SVG(r)
	}
}
