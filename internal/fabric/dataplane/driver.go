package dataplane

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric/network"
	"github.com/routekeeper/routekeeper/internal/source"
)

// NetworkReader reads a fabric's networks; network.NetworkReader is one.
type NetworkReader interface {
	// Version changes whenever a virtual network or route table is written.
	Version(ctx context.Context) (string, error)
	Networks(ctx context.Context) (*network.State, error)
}

// Applier builds a Spec; *Plane is one.
type Applier interface {
	Apply(ctx context.Context, spec Spec) error
}

// subscriber is a NetworkReader that also announces its own writes
// (network.NetworkReader does): the driver then reacts at once instead of at the
// next poll.
type subscriber interface {
	Subscribe() (<-chan struct{}, func())
}

// Driver keeps a data plane in step with a fabric: it polls the state's
// version (catching writes of every process that shares the state file)
// and wakes on the writes the fabric's Store announces, computes the Spec
// of each new version and applies it PropagationDelay after it saw the
// write.
type Driver struct {
	Fabric NetworkReader
	Plane  Applier
	// Nodes returns the nodes (NICs) to place; read at every new version.
	Nodes       func(ctx context.Context) ([]source.Node, error)
	PodsPerNode int
	// PropagationDelay models how long Azure takes to bring a route change
	// to the data plane (not documented; 0 by default).
	PropagationDelay time.Duration
	// Poll is how often the version is read (default 20ms).
	Poll time.Duration
	Log  *slog.Logger

	version string
}

// Sync applies the fabric's current state now, whatever the delay: the
// data plane's starting point.
func (d *Driver) Sync(ctx context.Context) error {
	v, err := d.Fabric.Version(ctx)
	if err != nil {
		return err
	}
	spec, err := d.spec(ctx)
	if err != nil {
		return err
	}
	if err := d.Plane.Apply(ctx, spec); err != nil {
		return err
	}
	d.version = v
	return nil
}

func (d *Driver) spec(ctx context.Context) (Spec, error) {
	st, err := d.Fabric.Networks(ctx)
	if err != nil {
		return Spec{}, err
	}
	nodes, err := d.Nodes(ctx)
	if err != nil {
		return Spec{}, fmt.Errorf("reading the data plane's nodes: %w", err)
	}
	spec, err := FromState(st, nodes, d.PodsPerNode)
	var unplaced *UnplacedError
	if errors.As(err, &unplaced) {
		// The others forward; these join when their subnet appears.
		d.logger().Warn("data plane: "+unplaced.Error(), "nodes", len(nodes))
		err = nil
	}
	return spec, err
}

func (d *Driver) logger() *slog.Logger {
	if d.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return d.Log
}

// Run follows the fabric until ctx ends. A failed read or Apply is logged
// and retried at the next poll; Run returns nil when ctx ends.
func (d *Driver) Run(ctx context.Context) error {
	log := d.logger()
	poll := d.Poll
	if poll <= 0 {
		poll = 20 * time.Millisecond
	}
	type pending struct {
		due     time.Time
		spec    Spec
		version string
	}
	var queue []pending
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var written <-chan struct{}
	if sub, ok := d.Fabric.(subscriber); ok {
		ch, unsubscribe := sub.Subscribe()
		defer unsubscribe()
		written = ch
	}
	var due <-chan time.Time // the next queued change's time
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-written:
		case <-due:
		}
		due = nil
		v, err := d.Fabric.Version(ctx)
		if err != nil {
			log.Warn("data plane: reading the fabric", "err", err)
			continue
		}
		last := d.version
		if len(queue) > 0 {
			last = queue[len(queue)-1].version
		}
		if v != last {
			spec, err := d.spec(ctx)
			if err != nil {
				log.Warn("data plane: computing the network", "err", err)
				continue
			}
			queue = append(queue, pending{due: time.Now().Add(d.PropagationDelay), spec: spec, version: v})
		}
		// Apply the newest write that is due: the ones before it are
		// overtaken, as in a data plane that programs the latest state.
		now, next := time.Now(), -1
		for i, p := range queue {
			if !p.due.After(now) {
				next = i
			}
		}
		if next < 0 {
			if len(queue) > 0 {
				due = time.After(time.Until(queue[0].due))
			}
			continue
		}
		p := queue[next]
		start := time.Now()
		if err := d.Plane.Apply(ctx, p.spec); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			log.Warn("data plane: applying", "err", err)
			continue // retried at the next poll
		}
		queue = queue[next+1:]
		if len(queue) > 0 {
			due = time.After(time.Until(queue[0].due))
		}
		d.version = p.version
		log.Info("data plane applied", "took", time.Since(start).Round(time.Microsecond), "delay", d.PropagationDelay)
	}
}
