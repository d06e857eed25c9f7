package flow

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestCounter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var c Counter
		if c.AtLeast(1, time.Second) {
			t.Fatal("AtLeast(1) with no packet reported true")
		}
		// Packets arrive 10, 20 and 30 ms from now (on the bubble's clock).
		for seq := range 3 {
			time.AfterFunc(time.Duration(seq+1)*10*time.Millisecond, func() { c.Received(seq) })
		}
		start := time.Now()
		if !c.AtLeast(3, time.Second) {
			t.Fatalf("AtLeast(3) false after %d packets", c.Count())
		}
		if d := time.Since(start); d != 30*time.Millisecond {
			t.Errorf("AtLeast(3) returned after %s of the bubble's clock, want 30ms: when the third packet came", d)
		}
		if c.Count() != 3 {
			t.Errorf("Count = %d, want 3", c.Count())
		}
	})
}
