package dataplane

import (
	"fmt"
	"net/netip"
	"time"
)

// ProbeOptions configure a probe.
type ProbeOptions struct {
	// Rate is packets per second (default 100).
	Rate float64
	// Duration is how long to send (default 5s); a cancelled context ends
	// the probe earlier, with the result so far.
	Duration time.Duration
	// Grace is how long to wait for late packets after the last send
	// (default 500ms); the wait ends as soon as every packet arrived.
	Grace time.Duration
	// OnReceive, if set, is called with the sequence number of each packet
	// that arrives (once per packet, from the receiving goroutine), so a
	// caller can tell that packets flow while the probe runs. It must not
	// block.
	OnReceive func(seq int)
}

// ProbeResult is what a probe saw.
type ProbeResult struct {
	Src, Dst netip.Addr
	Sent     int
	Received int
	Interval time.Duration
	// LongestLoss is the longest run of consecutive lost packets times the
	// send interval: how long the destination was cut off, at the probe's
	// resolution. LossStart is when its first lost packet was sent (the
	// ticker may send later than Start + n × Interval on a busy machine).
	LongestLoss     time.Duration
	LongestLossRun  int
	LossStart       time.Time
	Start           time.Time
	ReceivedAtStart bool // the first packet arrived
	ReceivedAtEnd   bool // the last packet arrived
}

func (r ProbeResult) String() string {
	s := fmt.Sprintf("%s -> %s: sent %d, received %d, lost %d; longest loss window %s (%d packets at %s)",
		r.Src, r.Dst, r.Sent, r.Received, r.Sent-r.Received, r.LongestLoss, r.LongestLossRun, r.Interval)
	if r.LongestLossRun > 0 {
		s += fmt.Sprintf(", from %s after the start", r.LossStart.Sub(r.Start).Round(time.Millisecond))
	}
	return s
}
