package daemon

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// The daemon tests run in synctest bubbles: the controller's tickers, the
// inventory's polling, the SDK's pollers and the fabric's operations run on
// the bubble's fake clock, so they take no wall time and what a test sees
// does not depend on how busy the machine is. A socket would keep the
// bubble from ever being idle (a goroutine blocked on network I/O is not
// durably blocked, so the clock would never move): the health and metrics
// server listens on a pipeListener instead.

// pipeListener is a net.Listener whose connections are net.Pipe ends, made
// by its dial: an HTTP server and its client in one bubble, without a socket.
type pipeListener struct {
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{conns: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	server, client := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// get is GET path on the listener's server: the status code and body. The
// connection is closed after each request, so no idle connection outlives
// the bubble.
func (l *pipeListener) get(t *testing.T, path string) (int, string) {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{DialContext: l.dial, DisableKeepAlives: true}}
	resp, err := c.Get("http://daemon" + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// eventually waits until cond returns "" (done), checking it whenever
// every goroutine of the bubble waits and then letting the bubble's clock
// move on by a step; when timeout (on that clock) has passed it fails the
// test with cond's last message. It must run in a bubble: outside one the
// sleep would be real.
func eventually(t *testing.T, timeout time.Duration, cond func() string) {
	t.Helper()
	const step = 10 * time.Millisecond
	for deadline := time.Now().Add(timeout); ; {
		synctest.Wait()
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, msg)
		}
		time.Sleep(step)
	}
}
