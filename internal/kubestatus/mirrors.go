package kubestatus

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/routekeeper/routekeeper/internal/controller"
	"github.com/routekeeper/routekeeper/internal/reason"
)

// Event reasons of mirror tables (Warning, on routekeeper's Pod). A
// mirror's problems never touch a node's NetworkUnavailable condition:
// that reflects the main table only.
const (
	// EventMirrorFailed: a reconcile of a mirror table failed (throttled,
	// missing, claimed by another cluster, a write failed).
	EventMirrorFailed = "MirrorRouteTableFailed"
	// EventMirrorRoutesMissing: nodes have no route in a mirror table
	// (route limit, a conflicting route of the table's own).
	EventMirrorRoutesMissing = "MirrorRoutesMissing"
)

const actionMirrorRoutes = "KeepMirrorRoutes"

// MirrorReporter reports one mirror table's results as events on
// routekeeper's Pod, deduplicated like Reporter's: the reconcile's error,
// the nodes without their route in the mirror, and the mirror's subnet
// association findings. It is a controller.Reporter.
type MirrorReporter struct {
	pod    *corev1.ObjectReference
	table  string
	events *dedup
}

// NewMirrorReporter makes the reporter of the mirror table named table.
// With a nil pod or recorder it reports nothing.
func NewMirrorReporter(rec Recorder, pod *corev1.ObjectReference, table string, interval time.Duration, now func() time.Time) *MirrorReporter {
	if interval <= 0 {
		interval = DefaultEventInterval
	}
	if now == nil {
		now = time.Now
	}
	return &MirrorReporter{pod: pod, table: table, events: newDedup(rec, interval, now)}
}

// Report implements controller.Reporter.
func (r *MirrorReporter) Report(_ context.Context, res *controller.Result) {
	if r.pod == nil {
		return
	}
	for _, a := range res.Associations {
		event := a.EventReason()
		if event == "" {
			continue
		}
		r.events.emitKeyed(r.pod, r.table+" "+a.Subnet, a.Warning(), event, actionGuardSubnet,
			fmt.Sprintf("mirror route table %s, subnet %s: %s", r.table, a.Subnet, a.Message))
	}
	if res.GuardOnly {
		return
	}
	if res.Err != nil {
		r.events.emitKeyed(r.pod, r.table, true, EventMirrorFailed, actionMirrorRoutes,
			fmt.Sprintf("mirror route table %s: %v; the main table and the other mirrors are not affected", r.table, res.Err))
		return
	}
	r.events.forgetKey(r.pod, r.table, EventMirrorFailed)
	var missing []string
	for _, name := range slices.Sorted(maps.Keys(res.Nodes)) {
		nr := res.Nodes[name]
		if nr.Routed || nr.Reason == reason.NoPodCIDR {
			continue
		}
		missing = append(missing, fmt.Sprintf("%s (%s)", name, nr.Reason))
	}
	if len(missing) == 0 {
		r.events.forgetKey(r.pod, r.table, EventMirrorRoutesMissing)
		return
	}
	n := len(missing)
	if n > 10 {
		missing = append(missing[:10:10], fmt.Sprintf("and %d more", n-10))
	}
	r.events.emitKeyed(r.pod, r.table, true, EventMirrorRoutesMissing, actionMirrorRoutes,
		fmt.Sprintf("mirror route table %s lacks the routes of %d nodes: %s", r.table, n, strings.Join(missing, ", ")))
}

// forgetKey drops what was sent about the object under key with reason, so
// that the problem is reported at once when it comes back.
func (d *dedup) forgetKey(ref *corev1.ObjectReference, key, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.sent[objectOf(ref)], eventKey{key: key, reason: reason})
}
