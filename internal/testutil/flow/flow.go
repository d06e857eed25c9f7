// Package flow lets a test wait for a data plane probe's packets to arrive
// (dataplane.ProbeOptions.OnReceive) instead of sleeping while they flow.
package flow

import (
	"sync"
	"time"
)

// Counter counts the packets a probe received. Its Received method is a
// dataplane.ProbeOptions.OnReceive.
type Counter struct {
	mu   sync.Mutex
	n    int
	more chan struct{} // closed at the next packet; nil until asked for
}

// Received counts one packet.
func (c *Counter) Received(int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.more != nil {
		close(c.more)
		c.more = nil
	}
}

// Count is the number of packets received so far.
func (c *Counter) Count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// AtLeast waits until n packets have arrived; it reports false when
// timeout passes first.
func (c *Counter) AtLeast(n int, timeout time.Duration) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		if c.n >= n {
			c.mu.Unlock()
			return true
		}
		if c.more == nil {
			c.more = make(chan struct{})
		}
		more := c.more
		c.mu.Unlock()
		select {
		case <-more:
		case <-deadline.C:
			return false
		}
	}
}
