package azure

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"

	"github.com/routekeeper/routekeeper/internal/armerr"
)

// The retry rule (invariant 2: a write whose answer is lost has an
// unknown outcome; read the resource back, never re-send it blind).
//
// The SDK's retry policy re-sends a request as it is. That is right for a
// read, and for a write that ARM did not take: a 429 (throttled before it
// was looked at) or a 503 with Retry-After ("not now, come back then"),
// waited out as told within MaxRetryDelay, and a request that never
// reached the server (the connection could not be made: dial, DNS, the TLS
// handshake's certificate checks). It is wrong for a write that may have
// been applied: after a connection reset, an EOF or a timeout once the
// request went out, or a 408 or 5xx from a front that may have forwarded
// it, the etag may have moved already, so the same conditional PUT can
// only be refused (412) after minutes of backoff, while the table itself
// says at once what happened. Such a write is not retried: the caller gets
// a *armerr.OutcomeUnknownError and reads the resource back.
//
// Long-running operations are polled with GETs, which are reads: a poll
// whose answer is lost is polled again by the same rule, and the
// operation's PUT is never sent again (azcore's Poller does not re-send
// it; PollUntilDone returns the poll's error once its retries are spent,
// and that too is an unknown outcome of the write).
//
// writeRetryable and readRetryable are the rule; answerPolicy tags each
// attempt's transport error with what the request was, because the SDK's
// ShouldRetry hook sees only the answer or the error.

// readOnlyKey marks a context whose POSTs only read (a gateway's
// getLearnedRoutes): they are retried as reads.
type readOnlyKey struct{}

// readOnly marks ctx: its requests have no side effects and are retried
// as reads whatever their method.
func readOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, readOnlyKey{}, true)
}

// isWrite reports whether req may change something in ARM: any method but
// GET, HEAD and OPTIONS, unless its context is marked readOnly.
func isWrite(req *http.Request) bool {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return req.Context().Value(readOnlyKey{}) == nil
}

// attemptError is one attempt's transport error, tagged with whether the
// request was a write.
type attemptError struct {
	write bool
	err   error
}

func (e *attemptError) Error() string { return e.err.Error() }
func (e *attemptError) Unwrap() error { return e.err }

// answerPolicy is a per-retry policy: it tags a transport error with what
// the request was (attemptError) and makes sure the response names its
// request, for the retry rule.
type answerPolicy struct{}

func (answerPolicy) Do(req *policy.Request) (*http.Response, error) {
	resp, err := req.Next()
	if err != nil {
		return resp, &attemptError{write: isWrite(req.Raw()), err: err}
	}
	if resp != nil && resp.Request == nil {
		resp.Request = req.Raw()
	}
	return resp, nil
}

// shouldRetry is the retry rule as the SDK's RetryOptions.ShouldRetry:
// writes by writeRetryable, reads by read (the SDK's status codes, or the
// caller's rule).
func shouldRetry(read func(*http.Response, error) bool) func(*http.Response, error) bool {
	return func(resp *http.Response, err error) bool {
		var ae *attemptError
		switch {
		case errors.As(err, &ae):
			if ae.write {
				return writeRetryable(nil, err)
			}
		case resp != nil && resp.Request != nil && isWrite(resp.Request):
			return writeRetryable(resp, nil)
		}
		return read(resp, err)
	}
}

// readRetryable is the SDK's own rule for reads: any transport error, and
// the status codes (the SDK's list when codes is nil).
func readRetryable(codes []int) func(*http.Response, error) bool {
	if codes == nil {
		codes = []int{
			http.StatusRequestTimeout, http.StatusTooManyRequests, http.StatusInternalServerError,
			http.StatusBadGateway, http.StatusServiceUnavailable, http.StatusGatewayTimeout,
		}
	}
	return func(resp *http.Response, err error) bool {
		return err != nil || runtime.HasStatusCode(resp, codes...)
	}
}

// writeRetryable reports whether a write may be sent again as it is: ARM
// did not take it (429; 503 with Retry-After) or it never left (neverSent).
func writeRetryable(resp *http.Response, err error) bool {
	if err != nil {
		return neverSent(err)
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return true
	case http.StatusServiceUnavailable:
		return retryAfter(resp.Header) > 0
	}
	return false
}

// neverSent reports whether a transport error proves that the request
// never reached the server: the connection could not be made (a dial
// error, which includes DNS and connect timeouts) or the TLS handshake
// refused the server's certificate or did not speak TLS. Anything else —
// a reset, an EOF, a timeout waiting for the answer — may come after the
// server got the request.
func neverSent(err error) bool {
	var (
		op    *net.OpError
		dns   *net.DNSError
		cert  *tls.CertificateVerificationError
		rec   tls.RecordHeaderError
		auth  x509.UnknownAuthorityError
		host  x509.HostnameError
		inval x509.CertificateInvalidError
	)
	switch {
	case errors.As(err, &op) && op.Op == "dial",
		errors.As(err, &dns), errors.As(err, &cert), errors.As(err, &rec),
		errors.As(err, &auth), errors.As(err, &host), errors.As(err, &inval):
		return true
	}
	return false
}

// sentUnanswered reports whether err, from sending a write, leaves its
// outcome unknown: the request went out and its answer was lost, or the
// answer was a 408 or a 5xx (a 503 with Retry-After included once its
// retries are spent: what it says of the write is no more than "maybe").
func sentUnanswered(err error) bool {
	var re *azcore.ResponseError
	if errors.As(err, &re) {
		return re.StatusCode == http.StatusRequestTimeout || re.StatusCode >= 500
	}
	var ae *attemptError
	return errors.As(err, &ae) && ae.write && !neverSent(err)
}

// classifyWrite is classify for the error of sending a write: one whose
// outcome is unknown (sentUnanswered) becomes a *armerr.OutcomeUnknownError
// around the classified cause.
func classifyWrite(op, resource string, err error) error {
	if err == nil {
		return nil
	}
	out := classify(op, resource, err)
	if sentUnanswered(err) {
		return &armerr.OutcomeUnknownError{Resource: resource, Op: op, Err: out}
	}
	return out
}

// classifyPoll is classify for the error of following a write's
// long-running operation, which ARM accepted: unless the operation ended
// Failed or Canceled (a known outcome), the poll was refused (a missing
// right to read the operation: a finding of its own, with its fix) or the
// caller gave up (its context), the write's outcome is unknown.
func classifyPoll(op, resource string, err error) error {
	if err == nil {
		return nil
	}
	out := classify(op, resource, err)
	var failed *armerr.OperationFailedError
	if errors.As(out, &failed) || errors.Is(out, armerr.ErrDenied) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return out
	}
	return &armerr.OutcomeUnknownError{Resource: resource, Op: op, Err: out}
}
