// Package nodesource is the node source of tests that run a controller:
// a list of nodes the test gives, and may replace while the controller
// reads it.
package nodesource

import (
	"context"
	"sync"

	"github.com/routekeeper/routekeeper/internal/source"
)

// Static serves the nodes it was last given. It never calls Watch's
// changed: a test that replaces the nodes triggers the pass it wants.
type Static struct {
	mu    sync.Mutex
	nodes []source.Node
}

// New returns a Static serving nodes.
func New(nodes ...source.Node) *Static { return &Static{nodes: nodes} }

// Set replaces the nodes served.
func (s *Static) Set(nodes []source.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = nodes
}

// Add adds nodes to those served.
func (s *Static) Add(nodes ...source.Node) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nodes = append(s.nodes, nodes...)
}

// Nodes returns a copy of the nodes served.
func (s *Static) Nodes(context.Context) ([]source.Node, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]source.Node(nil), s.nodes...), nil
}

// Watch blocks until ctx is done.
func (s *Static) Watch(ctx context.Context, _ func()) error {
	<-ctx.Done()
	return nil
}
