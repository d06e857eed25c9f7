package fabric

import (
	"net"
	"net/http"
	"os"
	"syscall"
)

// A lost answer (Faults.LoseAnswers): the fabric carried out a write, and
// its client gets no answer, only the error a network that drops the
// connection gives. What the client sees depends on how it reached the
// fabric:
//
//   - over HTTP/1.x (fabric serve, plain or --tls without HTTP/2): the
//     connection is hijacked and closed with SO_LINGER 0, so the kernel
//     sends a TCP reset; net/http reads "connection reset by peer" after
//     it sent the whole request, and does not send a PUT or DELETE again
//     by itself (they are not replayable);
//   - over HTTP/2 (fabric serve --tls; Go's clients negotiate it): there
//     is no connection to hijack, so the handler aborts
//     (http.ErrAbortHandler) and the server resets the stream
//     (RST_STREAM INTERNAL_ERROR); the client gets a stream error;
//   - in process (Server.RoundTripper): RoundTrip returns the error
//     net/http returns after a reset, a *net.OpError around ECONNRESET
//     (and Transporter wraps it in a *url.Error, as http.Client does).
//
// In every case the request was whole when the fabric took it, and the
// write took effect: only the answer is missing.

// answerDropper is a ResponseWriter that can lose its answer itself: the
// in-process transport's recorder.
type answerDropper interface {
	dropAnswer()
}

// dropAnswer ends the request without an answer (see above). Nothing may
// have been written to w.
func dropAnswer(w http.ResponseWriter) {
	if d, ok := w.(answerDropper); ok {
		d.dropAnswer()
		return
	}
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		resetConn(conn)
		return
	}
	// HTTP/2, or a writer that cannot be hijacked: the server drops the
	// stream (or the connection) without an answer.
	panic(http.ErrAbortHandler)
}

// resetConn closes conn with a TCP reset. Under TLS the TCP connection
// is reset directly, without TLS's close_notify, which would read as an
// orderly end (EOF) rather than a reset.
func resetConn(conn net.Conn) {
	nc := conn
	if t, ok := conn.(interface{ NetConn() net.Conn }); ok {
		nc = t.NetConn()
	}
	if tcp, ok := nc.(*net.TCPConn); ok {
		tcp.SetLinger(0) // on Close, RST instead of FIN
	}
	nc.Close()
}

// pipeAddr is an address of the in-process transport, for errors.
type pipeAddr string

func (a pipeAddr) Network() string { return "in-process" }
func (a pipeAddr) String() string  { return string(a) }

// connectionReset is the error net/http's transport returns when the
// connection to host is reset while it waits for the answer: the request
// was sent.
func connectionReset(host string) error {
	return &net.OpError{
		Op: "read", Net: "tcp", Source: pipeAddr("in-process"), Addr: pipeAddr(host),
		Err: os.NewSyscallError("read", syscall.ECONNRESET),
	}
}
