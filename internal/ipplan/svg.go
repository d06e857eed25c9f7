package ipplan

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/addrnum"
	"github.com/routekeeper/routekeeper/internal/finding"
)

// The picture's geometry, in SVG user units (pixels).
const (
	svgWidth    = 1000.0
	svgMargin   = 16.0
	svgLabelW   = 250.0 // the column of range labels on the left
	svgAxisX0   = svgMargin + svgLabelW + 12
	svgAxisX1   = svgWidth - svgMargin - 8
	svgLaneH    = 18.0
	svgLaneGap  = 6.0
	svgCharW    = 6.4 // average width of a character at font-size 11
	svgTickMinW = 8.0 // gap kept between two tick labels
)

var kindColor = map[Kind]string{
	KindVNet:      "#4e79a7",
	KindSubnet:    "#76b7b2",
	KindPod:       "#59a14f",
	KindService:   "#b07aa1",
	KindOnPrem:    "#9c755f",
	KindPeered:    "#edc948",
	KindForbidden: "#555555",
}

const overlapColor = "#d62728"

// region is a stretch of the address axis of one family holding ranges
// that overlap one another (directly or through others), drawn as one
// horizontal axis.
type region struct {
	v6     bool
	lo, hi addrnum.U128 // inclusive
	lanes  []int        // indexes in Report.Ranges
	cuts   []addrnum.U128
	xs     []float64 // x of each cut
}

// SVG draws the report's ranges on the IPv4 address axis, one axis per
// region of related ranges, each range a labelled bar in its own lane, with
// overlaps in red hatching. The axis is segmented: it is cut at every range
// boundary and each piece gets a width that grows with the logarithm of its
// size (1 + log2 addresses), so a /24 next to a /8 stays visible while the
// order of addresses is kept. The ticks carry the real addresses.
func SVG(r Report) []byte {
	regions := layoutRegions(r)
	var b bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }

	overlapsIn := func(g region) []Overlap {
		var out []Overlap
		for _, o := range r.Overlaps {
			if slices.Contains(g.lanes, o.A) && slices.Contains(g.lanes, o.B) {
				out = append(out, o)
			}
		}
		return out
	}
	// Height: title, regions, legend, overlap list.
	h := 64.0
	for _, g := range regions {
		h += regionHeight(g)
	}
	h += 40 + 16*float64(len(r.Overlaps)) + 8

	w(`<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" viewBox="0 0 %g %g" font-family="DejaVu Sans, Verdana, Arial, sans-serif" font-size="11">`+"\n",
		svgWidth, h, svgWidth, h)
	w(`<defs><pattern id="overlap-hatch" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)">` +
		`<rect width="6" height="6" fill="#ffffff" fill-opacity="0.35"/><rect width="3" height="6" fill="` + overlapColor + `"/></pattern></defs>` + "\n")
	w(`<rect width="100%%" height="100%%" fill="#ffffff"/>` + "\n")
	w(`<text x="%g" y="26" font-size="15" font-weight="bold">%s</text>`+"\n", svgMargin, esc("Address plan"))
	w(`<text x="%g" y="46" fill="#444444">%s</text>`+"\n", svgMargin, esc(summary(r)))

	y := 64.0
	for _, g := range regions {
		y = drawRegion(&b, r, g, overlapsIn(g), y)
	}
	y = drawLegend(&b, y+8, r)
	for _, o := range r.Overlaps {
		y += 16
		a, c := r.Ranges[o.A], r.Ranges[o.B]
		w(`<text x="%g" y="%g" fill="%s">%s</text>`+"\n", svgMargin, y, overlapColor,
			esc(fmt.Sprintf("overlap: %s and %s share %s (%s addresses)", a.Label(), c.Label(), o.Prefix, size(o.Prefix))))
	}
	w("</svg>\n")
	return b.Bytes()
}

func summary(r Report) string {
	var e, wn int
	for _, f := range r.Findings {
		switch f.Severity {
		case finding.Error:
			e++
		case finding.Warning:
			wn++
		}
	}
	pl := make([]string, len(r.Plugins))
	for i, p := range r.Plugins {
		pl[i] = string(p)
	}
	s := fmt.Sprintf("%d error(s), %d warning(s), %d overlap(s)", e, wn, len(r.Overlaps))
	if r.Nodes > 0 {
		s += fmt.Sprintf(" · %d nodes + %d surge", r.Nodes, r.Surge)
	}
	return s + " · plugins: " + strings.Join(pl, ", ") + " · axis cut at range boundaries, log-scaled pieces"
}

// layoutRegions groups the ranges into regions and lays out each axis.
func layoutRegions(r Report) []region {
	order := make([]int, len(r.Ranges))
	for i := range order {
		order[i] = i
	}
	is6 := func(i int) bool { return r.Ranges[i].Prefix.Addr().Is6() }
	slices.SortStableFunc(order, func(i, j int) int {
		if is6(i) != is6(j) {
			if is6(j) {
				return -1 // IPv4 first
			}
			return 1
		}
		li, _ := bounds(r.Ranges[i].Prefix)
		lj, _ := bounds(r.Ranges[j].Prefix)
		return li.Cmp(lj)
	})
	var regions []region
	for _, i := range order {
		lo, hi := bounds(r.Ranges[i].Prefix)
		if n := len(regions); n > 0 && regions[n-1].v6 == is6(i) && lo.Cmp(regions[n-1].hi) <= 0 {
			g := &regions[n-1]
			if hi.Cmp(g.hi) > 0 {
				g.hi = hi
			}
			g.lanes = append(g.lanes, i)
			continue
		}
		regions = append(regions, region{v6: is6(i), lo: lo, hi: hi, lanes: []int{i}})
	}
	for k := range regions {
		g := &regions[k]
		slices.Sort(g.lanes) // lanes in the report's order: VNet, subnets, pod, ...
		cuts := []addrnum.U128{g.lo, g.hi.Plus(1)}
		for _, i := range g.lanes {
			lo, hi := bounds(r.Ranges[i].Prefix)
			cuts = append(cuts, lo, hi.Plus(1))
		}
		slices.SortFunc(cuts, addrnum.U128.Cmp)
		g.cuts = slices.Compact(cuts)
		weights := make([]float64, len(g.cuts)-1)
		total := 0.0
		for j := range weights {
			weights[j] = 1 + math.Log2(g.cuts[j+1].Sub(g.cuts[j]).Float64())
			total += weights[j]
		}
		g.xs = make([]float64, len(g.cuts))
		g.xs[0] = svgAxisX0
		acc := 0.0
		for j, wt := range weights {
			acc += wt
			g.xs[j+1] = svgAxisX0 + (svgAxisX1-svgAxisX0)*acc/total
		}
	}
	return regions
}

// x maps an address (or the end of a range, last+1) to its position.
func (g region) x(v addrnum.U128) float64 {
	j, found := slices.BinarySearchFunc(g.cuts, v, addrnum.U128.Cmp)
	if found {
		return g.xs[j]
	}
	// Inside piece j-1: place logarithmically, like the piece widths.
	lo, hi := g.cuts[j-1], g.cuts[j]
	f := math.Log2(1+v.Sub(lo).Float64()) / math.Log2(1+hi.Sub(lo).Float64())
	return g.xs[j-1] + f*(g.xs[j]-g.xs[j-1])
}

func regionHeight(g region) float64 {
	return 22 + float64(len(g.lanes))*(svgLaneH+svgLaneGap) + 40
}

func laneY(top float64, k int) float64 { return top + 22 + float64(k)*(svgLaneH+svgLaneGap) }

func drawRegion(b *bytes.Buffer, r Report, g region, overlaps []Overlap, top float64) float64 {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	w(`<g class="region">` + "\n")
	w(`<text x="%g" y="%g" font-weight="bold" fill="#222222">%s</text>`+"\n", svgMargin, top+12,
		esc(fmt.Sprintf("%s – %s (%s addresses)", g.lo.Addr(g.v6), g.hi.Addr(g.v6), countOf(g.hi.Sub(g.lo).Plus(1)))))
	// Faint guides at every cut, so bars line up with their ticks.
	bottom := laneY(top, len(g.lanes)) - svgLaneGap + 4
	for _, x := range g.xs {
		w(`<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#dddddd" stroke-width="1"/>`+"\n", x, top+18, x, bottom)
	}
	lane := map[int]int{}
	for k, i := range g.lanes {
		lane[i] = k
	}
	// Overlaps: the shared stretch is hatched in red on both lanes, and the
	// two marks are joined by a dashed red line drawn under the bars.
	type mark struct {
		x0, wd float64
		ka, kb int
		title  string
	}
	marks := make([]mark, len(overlaps))
	for n, o := range overlaps {
		lo, hi := bounds(o.Prefix)
		x0, x1 := g.x(lo), g.x(hi.Plus(1))
		marks[n] = mark{x0: x0, wd: max(x1-x0, 3), ka: min(lane[o.A], lane[o.B]), kb: max(lane[o.A], lane[o.B]),
			title: fmt.Sprintf("overlap %s: %s and %s", o.Prefix, r.Ranges[o.A].Label(), r.Ranges[o.B].Label())}
	}
	for _, m := range marks {
		if m.kb > m.ka+1 || m.wd < 40 {
			cx := m.x0 + m.wd/2
			w(`<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="%s" stroke-width="2" stroke-dasharray="3,2"/>`+"\n",
				cx, laneY(top, m.ka)+svgLaneH, cx, laneY(top, m.kb), overlapColor)
		}
	}
	for k, i := range g.lanes {
		rg := r.Ranges[i]
		y := laneY(top, k)
		lo, hi := bounds(rg.Prefix)
		x0, x1 := g.x(lo), g.x(hi.Plus(1))
		w(`<text x="%g" y="%g" fill="#222222"><tspan font-weight="bold">%s</tspan> %s</text>`+"\n",
			svgMargin, y+13, esc(laneKind(rg)), esc(rg.Prefix.String()))
		w(`<rect x="%.1f" y="%g" width="%.1f" height="%g" rx="2" fill="%s" fill-opacity="0.85"><title>%s</title></rect>`+"\n",
			x0, y, max(x1-x0, 1), svgLaneH, kindColor[rg.Kind], esc(tooltip(rg, outsideVNet(r, rg))))
	}
	for _, m := range marks {
		for _, k := range []int{m.ka, m.kb} {
			w(`<rect x="%.1f" y="%g" width="%.1f" height="%g" fill="url(#overlap-hatch)" stroke="%s" stroke-width="2"><title>%s</title></rect>`+"\n",
				m.x0, laneY(top, k), m.wd, svgLaneH, overlapColor, esc(m.title))
		}
	}
	for k, i := range g.lanes {
		rg := r.Ranges[i]
		lo, hi := bounds(rg.Prefix)
		x0, x1 := g.x(lo), g.x(hi.Plus(1))
		y := laneY(top, k)
		if text := barText(rg); float64(len(text))*svgCharW+8 <= x1-x0 {
			w(`<text x="%.1f" y="%g" fill="#ffffff" stroke="#333333" stroke-width="2.5" stroke-opacity="0.6" paint-order="stroke">%s</text>`+"\n",
				x0+4, y+13, esc(text))
		}
		if rg.Kind == KindSubnet && outsideVNet(r, rg) {
			w(`<rect x="%.1f" y="%g" width="%.1f" height="%g" fill="none" stroke="%s" stroke-width="2" stroke-dasharray="5,3"/>`+"\n",
				x0-2, y-2, max(x1-x0, 1)+4, svgLaneH+4, overlapColor)
		}
		if rg.Kind == KindService && rg.Prefix.Contains(r.DNSServiceIP) {
			dx := g.x(number(r.DNSServiceIP))
			w(`<path d="M%.1f %g l-4 -6 h8 z" fill="#222222"><title>%s</title></path>`+"\n",
				dx, y, esc("DNS service IP "+r.DNSServiceIP.String()))
		}
	}
	// The axis with a tick at every cut; labels that would collide are left out.
	ay := laneY(top, len(g.lanes)) + 2
	w(`<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="#222222" stroke-width="1"/>`+"\n", svgAxisX0, ay, svgAxisX1, ay)
	type tick struct {
		x, start, end float64
		label, anchor string
	}
	ticks := make([]tick, len(g.xs))
	for j, x := range g.xs {
		t := tick{x: x, label: g.cuts[j].Addr(g.v6).String(), anchor: "middle"}
		if j == len(g.xs)-1 {
			t.label, t.anchor = g.hi.Addr(g.v6).String(), "end" // the last address, not the one after
		} else if j == 0 {
			t.anchor = "start"
		}
		wd := float64(len(t.label)) * svgCharW * 0.9
		switch t.anchor {
		case "start":
			t.start, t.end = x, x+wd
		case "end":
			t.start, t.end = x-wd, x
		default:
			t.start, t.end = x-wd/2, x+wd/2
		}
		ticks[j] = t
	}
	lastTick := ticks[len(ticks)-1]
	prevEnd := math.Inf(-1)
	for j, t := range ticks {
		w(`<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#222222" stroke-width="1"/>`+"\n", t.x, ay, t.x, ay+4)
		middle := j > 0 && j < len(ticks)-1
		if middle && (t.start < prevEnd+svgTickMinW || t.end > lastTick.start-svgTickMinW) {
			continue
		}
		w(`<text x="%.1f" y="%g" font-size="10" fill="#444444" text-anchor="%s">%s</text>`+"\n", t.x, ay+16, t.anchor, esc(t.label))
		prevEnd = t.end
	}
	w("</g>\n")
	return top + regionHeight(g)
}

func laneKind(rg Range) string {
	switch {
	case rg.Kind == KindForbidden:
		return "reserved"
	case rg.Name != "":
		return string(rg.Kind) + " " + rg.Name
	}
	return string(rg.Kind)
}

func barText(rg Range) string {
	switch {
	case rg.Kind == KindSubnet && rg.Prefix.Addr().Is4():
		return fmt.Sprintf("%s usable", Thousands(rg.Usable))
	case rg.Kind == KindForbidden:
		return rg.Name
	}
	return rg.Addresses.String()
}

func tooltip(rg Range, outside bool) string {
	s := fmt.Sprintf("%s: %s – %s, %s addresses", rg.Label(), rg.First, rg.Last, rg.Addresses)
	if rg.Kind == KindSubnet && rg.Prefix.Addr().Is4() {
		s += fmt.Sprintf(", %s usable", Thousands(rg.Usable))
	}
	if rg.Kind == KindForbidden {
		s += " (" + rg.Name + ")"
	}
	if outside {
		s += "; outside the VNet"
	}
	return s
}

func outsideVNet(r Report, rg Range) bool {
	hasVNet := false
	for _, v := range r.Ranges {
		if v.Kind != KindVNet {
			continue
		}
		hasVNet = true
		if contains(v.Prefix, rg.Prefix) {
			return false
		}
	}
	return hasVNet
}

func drawLegend(b *bytes.Buffer, y float64, r Report) float64 {
	w := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	x := svgMargin
	item := func(swatch, label string) {
		w(swatch+"\n", x, y)
		w(`<text x="%g" y="%g" fill="#222222">%s</text>`+"\n", x+20, y+11, esc(label))
		x += 20 + float64(len(label))*svgCharW + 16
	}
	w(`<g class="legend">` + "\n")
	kinds := []Kind{KindVNet, KindSubnet, KindPod, KindService, KindOnPrem, KindForbidden}
	if slices.ContainsFunc(r.Ranges, func(rg Range) bool { return rg.Kind == KindPeered }) {
		kinds = slices.Insert(kinds, 5, KindPeered)
	}
	for _, k := range kinds {
		name := string(k)
		if k == KindForbidden {
			name = "reserved range"
		}
		item(`<rect x="%g" y="%g" width="14" height="14" rx="2" fill="`+kindColor[k]+`" fill-opacity="0.85"/>`, name)
	}
	item(`<rect x="%g" y="%g" width="14" height="14" fill="url(#overlap-hatch)" stroke="`+overlapColor+`" stroke-width="2"/>`, "overlap")
	item(`<rect x="%g" y="%g" width="14" height="14" fill="none" stroke="`+overlapColor+`" stroke-width="2" stroke-dasharray="4,2"/>`, "outside the VNet")
	item(`<path d="M%g %g m7 14 l-4 -6 h8 z" fill="#222222"/>`, "DNS service IP")
	w("</g>\n")
	return y + 18
}

// esc escapes text for SVG text content and attribute values.
func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
