package kubestatus

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/routekeeper/routekeeper/internal/verdict"
)

// Recorder sends events; k8s.io/client-go/tools/events' recorder
// implements it (events.k8s.io/v1).
type Recorder interface {
	Eventf(regarding runtime.Object, related runtime.Object, eventtype, reason, action, note string, args ...any)
}

// Event rate limit over all objects: a burst of 100 (a cluster's worth of
// nodes failing at once is still reported), then 5 per second. Events
// refused by the limiter are not remembered, so they go out with a later
// reconcile.
const (
	eventQPS   = 5
	eventBurst = 100
)

// dedup keeps a persistent problem from becoming an event every reconcile:
// an event with the same object, key and reason goes out again only after
// the interval, or at once when its note changed.
type dedup struct {
	rec      Recorder
	interval time.Duration
	now      func() time.Time
	limit    flowcontrol.RateLimiter

	mu   sync.Mutex
	sent map[objectKey]map[eventKey]sentEvent
}

type objectKey struct{ kind, namespace, name, uid string }

type eventKey struct{ key, reason string }

type sentEvent struct {
	note string
	at   time.Time
}

func newDedup(rec Recorder, interval time.Duration, now func() time.Time) *dedup {
	return &dedup{rec: rec, interval: interval, now: now, sent: map[objectKey]map[eventKey]sentEvent{},
		limit: flowcontrol.NewTokenBucketRateLimiter(eventQPS, eventBurst)}
}

func objectOf(ref *corev1.ObjectReference) objectKey {
	return objectKey{kind: ref.Kind, namespace: ref.Namespace, name: ref.Name, uid: string(ref.UID)}
}

// emit sends the event unless the same one went out within the interval.
func (d *dedup) emit(ref *corev1.ObjectReference, warning bool, reason, action, note string) {
	d.emitKeyed(ref, "", warning, reason, action, note)
}

// emitKeyed is emit with a key that tells apart several problems of one
// object (the subnets, for events on routekeeper's Pod). An object's other
// reasons under the same key are forgotten: a node that goes from
// PrefixConflict to RouteTableFull gets a new event, and one back to
// PrefixConflict another.
func (d *dedup) emitKeyed(ref *corev1.ObjectReference, key string, warning bool, reason, action, note string) {
	if d.rec == nil {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	obj, k := objectOf(ref), eventKey{key: key, reason: reason}
	now := d.now()
	if s, ok := d.sent[obj][k]; ok && s.note == note && now.Sub(s.at) < d.interval {
		return
	}
	if !d.limit.TryAccept() {
		return
	}
	m := d.sent[obj]
	if m == nil {
		m = map[eventKey]sentEvent{}
		d.sent[obj] = m
	}
	for other := range m {
		if other.key == key && other.reason != reason {
			delete(m, other)
		}
	}
	m[k] = sentEvent{note: note, at: now}
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	d.rec.Eventf(ref, nil, typ, reason, action, "%s", note)
}

// forget drops everything sent about the object, so that a problem coming
// back is reported at once.
func (d *dedup) forget(ref *corev1.ObjectReference) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.sent, objectOf(ref))
}

// forgetReason drops what was sent about the object with reason.
func (d *dedup) forgetReason(ref *corev1.ObjectReference, reason string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.sent[objectOf(ref)] {
		if k.reason == reason {
			delete(d.sent[objectOf(ref)], k)
		}
	}
}

// ReportingController names routekeeper in the events it sends.
const ReportingController = "routekeeper"

// NewEventRecorder starts an events.k8s.io/v1 broadcaster that writes to
// client until ctx is done, and returns its recorder and a function that
// shuts the broadcaster down. Events about the same object and reason
// within a few minutes become one event with a series count (the events
// library's own aggregation, on top of Reporter's deduplication).
func NewEventRecorder(ctx context.Context, client kubernetes.Interface) (Recorder, func()) {
	b := events.NewBroadcaster(&events.EventSinkImpl{Interface: client.EventsV1()})
	b.StartRecordingToSink(ctx.Done())
	return b.NewRecorder(scheme.Scheme, ReportingController), b.Shutdown
}

// forgetNodesExcept drops what was sent about Nodes not in keep (deleted
// nodes), so that the memory of a long-lived controller does not grow with
// node churn.
func (d *dedup) forgetNodesExcept(keep map[string]verdict.Node) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for k := range d.sent {
		if _, ok := keep[k.name]; k.kind == "Node" && !ok {
			delete(d.sent, k)
		}
	}
}
