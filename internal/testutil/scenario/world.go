package scenario

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/routekeeper/routekeeper/internal/armid"
	"github.com/routekeeper/routekeeper/internal/finding"
	"github.com/routekeeper/routekeeper/internal/observe"
	"github.com/routekeeper/routekeeper/internal/observe/memcloud"
	"github.com/routekeeper/routekeeper/internal/source"
	"github.com/routekeeper/routekeeper/internal/verdict"
)

// World is a script's state between steps: the configuration, the cloud,
// the nodes, and for each table (the main one, then each mirror) what it
// was last judged and what the controller remembers of it.
type World struct {
	// PlanDir is where iac steps find their plans (DefaultPlanDir).
	PlanDir string
	// OnJudge, when set, is called with the state of every judge step,
	// after it was judged, and of every iac step (State.Plan).
	OnJudge func(State)

	cfg   Config
	cloud *memcloud.Cloud
	nodes []source.Node
	// allocated are the nodes whose pod CIDRs IPAM gave them (the
	// reservations step), not the nodes step.
	allocated map[string]bool
	tables    []*table
	// outcome is the table of the last outcome step, which apply makes
	// true.
	outcome *table
}

// table is one route table of the configuration as the world judges it.
type table struct {
	// mirror is the index of the mirror in the configuration, -1 for the
	// main table.
	mirror int
	want   verdict.Desired
	obs    *observe.Observation
	// judged is the verdict of the last judge step, whose actions an
	// outcome step writes; last is the latest verdict, judged or after an
	// outcome.
	judged *verdict.Verdict
	last   *verdict.Verdict
	out    *verdict.Outcome
	// routed are the nodes the last verdict found routed: what the
	// controller remembers for its next pass (verdict.Desired.Routed).
	routed map[string]bool
}

// New returns the world a script starts in: the default configuration, an
// empty cloud, no nodes.
func New() *World {
	w := &World{PlanDir: DefaultPlanDir, cloud: memcloud.New(), allocated: map[string]bool{}}
	w.configure(DefaultConfig())
	return w
}

// configure makes c the configuration. The tables are judged afresh; the
// nodes each found routed stay remembered (the main table's, and a
// mirror's of the same table), as a config step has always kept them.
func (w *World) configure(c Config) {
	before := map[string]map[string]bool{}
	for _, t := range w.tables {
		before[w.tableKey(t)] = t.routed
	}
	w.cfg, w.outcome = c, nil
	w.tables = []*table{{mirror: -1}}
	for i := range c.Mirrors {
		w.tables = append(w.tables, &table{mirror: i})
	}
	for _, t := range w.tables {
		t.routed = before[w.tableKey(t)]
	}
}

// tableKey tells the tables of two configurations apart: "" for the main
// table, the key of a mirror's table.
func (w *World) tableKey(t *table) string {
	if t.mirror < 0 {
		return ""
	}
	return armid.Key(w.cfg.Mirrors[t.mirror].Table)
}

// remember keeps the nodes v found routed for the next pass, as the
// controller does.
func (t *table) remember(v *verdict.Verdict) {
	t.routed = map[string]bool{}
	for name, n := range v.Nodes {
		if n.Routed {
			t.routed[name] = true
		}
	}
}

// Do runs one step of a script and returns what it prints.
func (w *World) Do(s Step) (string, error) {
	switch s.Cmd {
	case "config":
		c, err := ParseConfig(s.Args, s.Input)
		if err != nil {
			return "", err
		}
		w.configure(c)
		return "", nil
	case "cloud":
		c, err := ParseCloud(s.Input)
		if err != nil {
			return "", err
		}
		w.cloud = c
		return "", nil
	case "nodes":
		nodes, err := ParseNodes(s.Input)
		w.nodes, w.allocated = nodes, map[string]bool{}
		return "", err
	case "judge":
		routing := false
		for _, a := range s.Args {
			if a != "routing" {
				return "", fmt.Errorf("judge %s: want judge [routing]", a)
			}
			routing = true
		}
		out, err := w.judge(routing)
		if err == nil && w.OnJudge != nil {
			w.OnJudge(w.state(s, routing))
		}
		return out, err
	case "iac":
		out, code, err := w.doIac(s.Args)
		if err == nil && w.OnJudge != nil {
			st := w.state(s, true)
			st.Plan, st.Exit = s.Args[0], code
			w.OnJudge(st)
		}
		return out, err
	case "trace":
		return w.doTrace(s.Args)
	case "reservations":
		return w.doReservations()
	case "outcome":
		return w.doOutcome(s.Args, s.Input)
	case "apply":
		return "", w.apply()
	}
	return "", fmt.Errorf("unknown command %q", s.Cmd)
}

// desired is what t is judged against now.
func (w *World) desired(t *table) verdict.Desired {
	var d verdict.Desired
	if t.mirror < 0 {
		d = w.cfg.Desired
		d.Nodes = w.nodes
	} else {
		d = w.cfg.MirrorDesired(t.mirror, w.nodes)
	}
	d.Routed = t.routed
	return d
}

// observe reads what t's pass reads: the table it keeps, its subnets and
// their networks, as every pass does; with routing, the main table's also
// reads what the commands that give an exit code read (app's judgeScope):
// the networks of the mirrors' subnets, the route table every subnet of
// those networks uses, and the NICs. A mirror's pass reads no more.
func (w *World) observe(t *table, routing bool) *observe.Observation {
	sc := observe.Scope{Table: cmp.Or(t.want.Table, t.want.Configured), Subnets: w.cfg.Subnets, Networks: true, NextHops: observe.NextHops(t.want.Nodes)}
	if t.mirror >= 0 {
		sc.Subnets = w.cfg.Mirrors[t.mirror].Subnets
	} else if routing {
		sc.Routing, sc.NICs = true, true
		for _, m := range w.cfg.Mirrors {
			sc.RoutingSubnets = append(sc.RoutingSubnets, m.Subnets...)
		}
	}
	return observe.Observe(context.Background(), w.cloud, sc)
}

// judge observes the cloud and judges every table with no outcome yet;
// routing: as the commands that give an exit code observe it.
func (w *World) judge(routing bool) (string, error) {
	var parts []string
	for _, t := range w.tables {
		t.want = w.desired(t)
		t.obs = w.observe(t, routing)
		t.judged, t.out = verdict.Judge(t.obs, t.want, nil), nil
		t.last = t.judged
		t.remember(t.last)
		if err := checkVocabulary(t.last); err != nil {
			return "", err
		}
		parts = append(parts, w.header(t)+Render(t.last, true))
	}
	parts = append(parts, RenderFindings(w.Findings(), w.Exit()))
	return strings.Join(parts, "\n"), nil
}

// header is the line before a mirror's verdict.
func (w *World) header(t *table) string {
	if t.mirror < 0 {
		return ""
	}
	return "mirror " + armid.Name(w.cfg.Mirrors[t.mirror].Table) + "\n"
}

// Findings are what the tables' latest verdicts leave to do, laid out as
// app.Findings lays them out: the main table's, then each mirror's, their
// messages starting with the mirror's table, errors first.
func (w *World) Findings() []finding.Finding {
	var out []finding.Finding
	for _, t := range w.tables {
		if t.last == nil {
			continue
		}
		for _, f := range t.last.Findings() {
			if t.mirror >= 0 {
				f.Message = "mirror route table " + armid.Name(w.cfg.Mirrors[t.mirror].Table) + ": " + f.Message
			}
			out = append(out, f)
		}
	}
	finding.Sort(out)
	return out
}

// Exit is the exit code every command gives on the state: 1 when a table's
// last judgement could not be made (a read failed), else 3 when there is a
// finding, else 0. A write that failed (an outcome step's error) is the
// state it left, with its findings: run --once itself exits 1 on it, the
// one deliberate difference (internal/cli's TestAgree).
func (w *World) Exit() int {
	failed := false
	for _, t := range w.tables {
		switch {
		case t.last == nil:
		case t.last.Decision.TableErr != nil:
			// The table could not be read, before any write: an outcome
			// step changes nothing of that.
			failed = true
		case t.last == t.judged && t.last.Err != nil && !verdict.Decided(t.last.Err):
			failed = true
		}
	}
	return ExitCode(w.Findings(), failed)
}

// doOutcome is the outcome step: the writes of the last judged verdict of
// the main table, or of the mirror table args name, then that table
// judged again with them.
func (w *World) doOutcome(args, lines []string) (string, error) {
	t := w.tables[0]
	if len(args) > 0 {
		i := -1
		for j, m := range w.cfg.Mirrors {
			if armid.Same(m.Table, TableID(args[0])) {
				i = j
			}
		}
		if i < 0 {
			return "", fmt.Errorf("outcome %s: not a mirror table of the configuration", args[0])
		}
		t = w.tables[i+1]
	}
	if t.judged == nil {
		return "", errors.New("outcome before judge")
	}
	out, err := outcomeOf(t.judged, lines)
	if err != nil {
		return "", err
	}
	t.out, w.outcome = out, t
	v := verdict.Judge(t.obs, t.want, out)
	t.last = v
	t.remember(v)
	if err := checkVocabulary(v); err != nil {
		return "", err
	}
	return w.header(t) + Render(v, false) + "\n" + RenderFindings(w.Findings(), w.Exit()), nil
}

// apply makes the cloud what the last outcome wrote: the table read back,
// the subnets associated.
func (w *World) apply() error {
	t := w.outcome
	if t == nil || t.out == nil {
		return errors.New("apply before outcome")
	}
	if tw := t.out.Table; tw != nil && tw.ReadBack != nil {
		rb := tw.ReadBack.Clone()
		if old := w.cloud.Tables[armid.Key(rb.ID)]; old != nil {
			rb.Subnets = old.Subnets
		}
		w.cloud.Tables[armid.Key(rb.ID)] = rb
	}
	for _, s := range t.judged.Associations() {
		if r, ok := t.out.Subnets[armid.Key(s.Subnet)]; ok && r.Err == nil {
			sn := w.cloud.Subnets[armid.Key(s.Subnet)]
			sn.RouteTableID = t.judged.Table
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
