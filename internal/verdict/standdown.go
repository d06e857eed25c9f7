package verdict

import (
	"github.com/routekeeper/routekeeper/internal/assoc"
	"github.com/routekeeper/routekeeper/internal/plan"
	"github.com/routekeeper/routekeeper/internal/reason"
	"github.com/routekeeper/routekeeper/internal/source"
)

// The stand-down from host routes: the cluster moved to an overlay CNI
// (Azure CNI Overlay, Cilium, Calico VXLAN) and no longer needs a route per
// node. It is asked for by Mode StandDown (routes: standDown), or implied
// by nodes that all lack a pod CIDR and confirmed (plan.Input.StandsDown).
// Standing down:
//
//	every node                       routed, HostRoutesNotNeeded: no status says it lacks a route
//	the routes this cluster owns     removed in one write once confirmed (held, StandDownUnconfirmed, before)
//	foreign routes, claim, tags      kept
//	subnet associations              the operator's: no subnet is judged, associated or repaired
//	a missing table                  no error, nothing created: nothing of ours is left
//	route counts                     no route wanted: owned routes count as stale
//
// Without the confirmation, nodes that all lack a pod CIDR are NoPodCIDR
// (the node conditions leave that to IPAM) and nothing is deleted: a new
// cluster whose IPAM has not assigned CIDRs yet looks the same.

// standingDown reports whether the verdict stands down from host routes:
// the mode asks for it, or the confirmation meets nodes without pod CIDRs.
func (j *judge) standingDown() bool {
	return j.want.Mode == StandDown || j.want.ConfirmStandDown && plan.PodCIDRsGone(j.want.Nodes)
}

// StandingDown reports whether the verdict stands down from host routes:
// every node is HostRoutesNotNeeded, and the plan removes (or, before the
// confirmation, holds) every route of this cluster.
func (v *Verdict) StandingDown() bool {
	return v.mode == StandDown || v.Plan != nil && v.Plan.StandDown
}

// assocInput is the association decision's input. Standing down, the
// associations are the operator's: no subnet is judged, and a missing
// table is not created.
func (j *judge) assocInput() assoc.Input {
	in := AssocInput(j.o, j.want)
	if j.standingDown() {
		in.Subnets, in.CreateAllowed = nil, false
	}
	return in
}

// standDownDecision says, standing down, why a missing table is not
// created.
func (j *judge) standDownDecision(d *assoc.Decision) *assoc.Decision {
	if j.standingDown() && !d.TableExists && d.TableErr == nil {
		d.CreateBlocked = "the cluster stands down from host routes: routekeeper creates no table, and none of its routes is left to remove"
	}
	return d
}

// wantedNodes are the nodes whose routes are wanted: none standing down.
func (j *judge) wantedNodes() []source.Node {
	if j.standingDown() {
		return nil
	}
	return j.want.Nodes
}

// standDownNodes makes every node routed: it needs no host route.
func (j *judge) standDownNodes() {
	msg := "the cluster no longer uses host routes (routes: standDown): the node needs none"
	if j.want.Mode != StandDown {
		msg = "no node has a pod CIDR and the stand-down from host routes is confirmed (controller.confirmStandDown): the node needs no route"
	}
	for _, n := range j.want.Nodes {
		j.v.Nodes[n.Name] = Node{Routed: true, Reason: reason.HostRoutesNotNeeded, Message: msg}
	}
}
