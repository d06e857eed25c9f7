package controller

import (
	"maps"
	"slices"
	"strings"

	"github.com/routekeeper/routekeeper/internal/source"
)

// setNodes remembers the nodes the source returned.
func (c *Controller) setNodes(nodes []source.Node) {
	c.mu.Lock()
	c.nodes, c.sourceErr = nodes, nil
	c.mu.Unlock()
}

// setSourceErr records that the source could not be read.
func (c *Controller) setSourceErr(err error) {
	c.mu.Lock()
	c.sourceErr = err
	c.mu.Unlock()
}

// lastNodes are the last nodes the source returned.
func (c *Controller) lastNodes() []source.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes
}

// SourceErr is the node source's last error, nil once it answered again.
func (c *Controller) SourceErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sourceErr
}

// unroutedLogLimit is how many newly unrouted nodes are logged one by one;
// beyond it, one line per reason with the count and the first names.
const unroutedLogLimit = 10

// logUnrouted logs each node's reason once, when it becomes unrouted (or
// its reason changes), and when it is routed again: not on every pass.
func (c *Controller) logUnrouted(res *Result) {
	if res.Plan == nil {
		return // the pass ended before planning: it says nothing of the nodes
	}
	c.mu.Lock()
	prev := c.unrouted
	next := make(map[string]string, len(prev))
	c.mu.Unlock()
	type item struct{ name, msg string }
	byReason := map[string][]item{}
	fresh := 0
	for _, name := range slices.Sorted(maps.Keys(res.Nodes)) {
		nr := res.Nodes[name]
		if nr.Routed {
			if _, was := prev[name]; was {
				c.log.Info("node routed again", "node", name)
			}
			continue
		}
		r := string(nr.Reason)
		next[name] = r
		if prev[name] != r {
			byReason[r] = append(byReason[r], item{name, nr.Message})
			fresh++
		}
	}
	for _, reason := range slices.Sorted(maps.Keys(byReason)) {
		items := byReason[reason]
		if fresh <= unroutedLogLimit {
			for _, it := range items {
				c.log.Warn("node not routed", "node", it.name, "reason", reason, "message", it.msg)
			}
			continue
		}
		var first []string
		for _, it := range items[:min(len(items), 5)] {
			first = append(first, it.name)
		}
		c.log.Warn("nodes not routed", "reason", reason, "count", len(items), "first", strings.Join(first, ","), "message", items[0].msg)
	}
	c.mu.Lock()
	c.unrouted = next
	c.mu.Unlock()
}
