package controller

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/routekeeper/routekeeper/internal/fabric"
	"github.com/routekeeper/routekeeper/internal/testutil/fabrictest"
	"github.com/routekeeper/routekeeper/internal/testutil/nodesource"
	"github.com/routekeeper/routekeeper/internal/testutil/syncbuf"
)

// While Azure refuses the association (the missing permission on the
// network's group), the running controller tries it again only when each
// wait is over: the guard cycles in between neither write, nor kick a full
// reconcile (five reads), nor log the same problem again. 60 guard cycles
// see 7 tries, not 60.
func TestRefusedAssociationIsNotAHotLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		env := fabrictest.New(t, fabric.Options{}, governed)
		grantOn(t, env, "kubernetes")
		logs := &syncbuf.Buffer{}
		rec := &recorder{}
		cfg := Config{
			Cluster: "kthw", ClusterCIDRs: scenarioConfig().ClusterCIDRs,
			RouteTableID: govTable, Subnets: []string{govSubnet},
			GuardInterval: time.Second, Resync: time.Hour, BatchWindow: 10 * time.Millisecond,
			RetryBackoff: time.Second, MaxRetryBackoff: time.Hour,
		}
		cl := env.As(t, "routekeeper-app")
		c := New(cfg, cl, nodesource.New(workers(2)...), slog.New(slog.NewTextHandler(logs, nil)), rec)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- c.Run(ctx) }()
		time.Sleep(60*time.Second + 500*time.Millisecond)
		cancel()
		<-done
		synctest.Wait()

		var reconciles, guards int
		for _, r := range rec.all() {
			if r.GuardOnly {
				guards++
			} else {
				reconciles++
			}
		}
		_, writes := cl.Calls()
		tries := writes - 1 // the first reconcile's table write went through
		t.Logf("60 s: %d guard cycles, %d reconciles, %d association tries, %d guard log lines", guards, reconciles, tries, strings.Count(logs.String(), "association guard"))
		if guards < 55 {
			t.Fatalf("%d guard cycles in 60 s, want about 60", guards)
		}
		if tries < 6 || tries > 8 {
			t.Errorf("%d association tries in 60 s, want 7 (at 0, 1, 3, 7, 15, 31 and 47 s: waits of 1, 2, 4, 8, 16 and 16 intervals, the cap)", tries)
		}
		if reconciles > 2*int(tries)+2 {
			t.Errorf("%d reconciles for %d tries: the guard asks for one while the write waits", reconciles, tries)
		}
		if n := strings.Count(logs.String(), "msg=\"association guard"); n > int(tries)+2 {
			t.Errorf("%d guard log lines for %d tries: the held problem is logged every cycle", n, tries)
		}
	})
}
