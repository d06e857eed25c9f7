package fabric

import (
	"sync"
	"time"
)

// testClock is a fake clock for Options.Clock: it stands still until the
// test advances it, so a long-running operation finishes exactly when the
// test says, in either transport, without waiting for it.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func newTestClock() *testClock {
	return &testClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

// Now is the clock's time; pass it as Options.Clock.
func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock on by d.
func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}
