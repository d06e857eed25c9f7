package scenario

import (
	"maps"
	"slices"

	"github.com/routekeeper/routekeeper/internal/observe/memcloud"
	"github.com/routekeeper/routekeeper/internal/source"
)

// State is what a script judges at a judge step (or checks a plan
// against, at an iac step): the configuration, the
// cloud and the nodes, and what the controller remembers; and the exit
// code the script says every command gives on it. The agreement test of
// internal/cli builds each state for real and runs the commands on it.
type State struct {
	// Step is the judge step.
	Step   Step
	Config Config
	// Cloud is a copy of the cloud as the step judged it.
	Cloud *memcloud.Cloud
	Nodes []source.Node
	// Allocated are the nodes whose pod CIDRs IPAM gave them (the
	// reservations step): an inventory lists them without one.
	Allocated map[string]bool
	// Remembered: the controller remembered routed nodes from an earlier
	// judge of the script (verdict.Desired.Routed), which matters only for
	// a route whose operation is in progress.
	Remembered bool
	// Routing: judged as the commands that give an exit code observe
	// (judge routing).
	Routing bool
	// Plan is the plan file of an iac step ("" for a judge step): Exit is
	// then the exit code of iac check on it.
	Plan string
	// Exit is the exit code the script shows for the state.
	Exit int
}

// state is the world as the judge step s judged it.
func (w *World) state(s Step, routing bool) State {
	st := State{Step: s, Config: w.cfg, Cloud: w.cloud.Clone(), Nodes: slices.Clone(w.nodes), Allocated: maps.Clone(w.allocated),
		Routing: routing, Exit: w.Exit()}
	for _, t := range w.tables {
		st.Remembered = st.Remembered || len(t.want.Routed) > 0
	}
	return st
}
