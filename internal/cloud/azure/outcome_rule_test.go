package azure

import (
	"context"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"

	"github.com/routekeeper/routekeeper/internal/armerr"
)

// TestRetryRule is the retry rule of outcome.go as a table: what the SDK
// may send again as it is, by method and answer.
func TestRetryRule(t *testing.T) {
	reset := &url.Error{Op: "Put", URL: "https://x", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	refused := &url.Error{Op: "Put", URL: "https://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}}
	noDNS := &url.Error{Op: "Put", URL: "https://x", Err: &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "x", IsNotFound: true}}}
	badCert := &url.Error{Op: "Put", URL: "https://x", Err: x509.UnknownAuthorityError{}}
	timeout := &url.Error{Op: "Put", URL: "https://x", Err: &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}}
	eof := &url.Error{Op: "Put", URL: "https://x", Err: io.ErrUnexpectedEOF}
	for _, tc := range []struct {
		name       string
		method     string
		readOnly   bool
		status     int
		retryAfter string
		err        error
		want       bool
	}{
		{name: "PUT 429", method: "PUT", status: 429, want: true},
		{name: "PUT 429 with Retry-After", method: "PUT", status: 429, retryAfter: "2", want: true},
		{name: "PUT 503 with Retry-After", method: "PUT", status: 503, retryAfter: "2", want: true},
		{name: "PUT 503 without Retry-After", method: "PUT", status: 503},
		{name: "PUT 500", method: "PUT", status: 500},
		{name: "PUT 502", method: "PUT", status: 502},
		{name: "PUT 504", method: "PUT", status: 504},
		{name: "PUT 408", method: "PUT", status: 408},
		{name: "PUT 412", method: "PUT", status: 412},
		{name: "PUT connection reset", method: "PUT", err: reset},
		{name: "PUT timeout after sending", method: "PUT", err: timeout},
		{name: "PUT unexpected EOF", method: "PUT", err: eof},
		{name: "PUT connection refused", method: "PUT", err: refused, want: true},
		{name: "PUT no such host", method: "PUT", err: noDNS, want: true},
		{name: "PUT certificate refused", method: "PUT", err: badCert, want: true},
		{name: "DELETE 500", method: "DELETE", status: 500},
		{name: "DELETE reset", method: "DELETE", err: reset},
		{name: "PATCH 502", method: "PATCH", status: 502},
		{name: "POST reset", method: "POST", err: reset},
		{name: "read-only POST reset", method: "POST", readOnly: true, err: reset, want: true},
		{name: "read-only POST 500", method: "POST", readOnly: true, status: 500, want: true},
		{name: "GET reset", method: "GET", err: reset, want: true},
		{name: "GET timeout", method: "GET", err: timeout, want: true},
		{name: "GET 500", method: "GET", status: 500, want: true},
		{name: "GET 502", method: "GET", status: 502, want: true},
		{name: "GET 503", method: "GET", status: 503, want: true},
		{name: "GET 429", method: "GET", status: 429, want: true},
		{name: "GET 404", method: "GET", status: 404},
		{name: "GET 200", method: "GET", status: 200},
		{name: "PUT 201", method: "PUT", status: 201},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.readOnly {
				ctx = readOnly(ctx)
			}
			req, err := http.NewRequestWithContext(ctx, tc.method, "https://x/y", nil)
			if err != nil {
				t.Fatal(err)
			}
			var resp *http.Response
			err = tc.err
			if err != nil {
				err = &attemptError{write: isWrite(req), err: err}
			} else {
				resp = &http.Response{StatusCode: tc.status, Header: http.Header{}, Request: req}
				if tc.retryAfter != "" {
					resp.Header.Set("Retry-After", tc.retryAfter)
				}
			}
			if got := shouldRetry(readRetryable(nil))(resp, err); got != tc.want {
				t.Errorf("retried = %v, want %v", got, tc.want)
			}
			// A write not retried, once sent, has an unknown outcome unless
			// its answer was a plain refusal (4xx but 408).
			if isWrite(req) && !tc.want {
				var e error = err
				if resp != nil && resp.StatusCode >= 400 {
					e = &azcore.ResponseError{StatusCode: resp.StatusCode, RawResponse: resp}
				}
				wantUnknown := tc.err != nil || tc.status == 408 || tc.status >= 500
				if e != nil {
					got := errors.Is(classifyWrite("writing x", "x", e), armerr.ErrOutcomeUnknown)
					if got != wantUnknown {
						t.Errorf("outcome unknown = %v, want %v", got, wantUnknown)
					}
				}
			}
		})
	}
}

// TestUntaggedErrorIsRetried: an error that did not pass answerPolicy
// (the credential's, before any request was sent) is retried as the SDK
// would.
func TestUntaggedErrorIsRetried(t *testing.T) {
	if !shouldRetry(readRetryable(nil))(nil, errors.New("token: temporarily unavailable")) {
		t.Error("an error from before the request was sent is not retried")
	}
}
