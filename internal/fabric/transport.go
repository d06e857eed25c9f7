package fabric

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/cloud"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/identity"
)

// InProcessEndpoint is the base URL to use with the in-process transport.
// The host never resolves: the transport hands every request to the
// handler, whatever its host.
const InProcessEndpoint = "https://management.fabric.invalid"

// RoundTripper returns a transport that serves every request with this
// server's handler, in process: no socket, no port, same code path.
func (s *Server) RoundTripper() http.RoundTripper { return &inProcess{h: s} }

// Transporter is RoundTripper as an azcore policy.Transporter.
func (s *Server) Transporter() policy.Transporter { return transporter{s.RoundTripper()} }

// ClientOptions are SDK options that reach this server in process.
func (s *Server) ClientOptions() *arm.ClientOptions {
	return ClientOptions(s.Transporter(), InProcessEndpoint)
}

type transporter struct{ rt http.RoundTripper }

// Do sends req as http.Client does: a transport error comes back inside a
// *url.Error naming the method and URL.
func (t transporter) Do(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil {
		return nil, &url.Error{Op: urlOp(req.Method), URL: req.URL.String(), Err: err}
	}
	return resp, nil
}

// urlOp is url.Error's Op as http.Client spells it: "Put", "Get".
func urlOp(method string) string {
	if method == "" {
		return "Get"
	}
	return method[:1] + strings.ToLower(method[1:])
}

type inProcess struct{ h http.Handler }

// RoundTrip serves req with the handler and returns its answer. A panic in
// the handler becomes a 500, as it would over a socket; an answer the
// handler drops (a lost answer, or a panic with http.ErrAbortHandler)
// becomes the error of a connection reset, after the handler ran.
func (t *inProcess) RoundTrip(req *http.Request) (resp *http.Response, err error) {
	if err := req.Context().Err(); err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	r := req.Clone(req.Context())
	if r.Body == nil {
		r.Body = http.NoBody
	}
	defer r.Body.Close()
	if r.Host == "" {
		r.Host = req.URL.Host
	}
	if r.URL.Scheme == "" {
		r.URL.Scheme = "https"
	}
	r.RequestURI = r.URL.RequestURI()
	r.RemoteAddr = "in-process:0"
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	rec := &recorder{header: http.Header{}}
	func() {
		defer func() {
			if p := recover(); p == http.ErrAbortHandler {
				rec.dropAnswer()
			} else if p != nil {
				rec = &recorder{header: http.Header{}, status: http.StatusInternalServerError}
				fmt.Fprintf(&rec.body, `{"error":{"code":"InternalServerError","message":%q}}`, fmt.Sprint("fabric handler panic: ", p))
			}
		}()
		t.h.ServeHTTP(rec, r)
	}()
	if rec.lost {
		return nil, connectionReset(req.URL.Host)
	}
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	body := rec.body.Bytes()
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", rec.status, http.StatusText(rec.status)),
		StatusCode:    rec.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        rec.header,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}, nil
}

// recorder is an http.ResponseWriter that keeps the answer in memory.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	lost   bool // the handler dropped the answer: see dropAnswer
}

func (r *recorder) dropAnswer() { r.lost = true }

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
		r.header = r.header.Clone()
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// ClientOptions points the Azure SDK at a fabric: endpoint is its base URL
// (http://127.0.0.1:PORT, or InProcessEndpoint with the in-process
// transport); transport may be nil for the default HTTP client. Tokens may
// travel over plain HTTP (loopback), resource provider registration is
// off, and retries are quick enough for tests while still honouring a
// Retry-After of a few seconds.
func ClientOptions(transport policy.Transporter, endpoint string) *arm.ClientOptions {
	endpoint = strings.TrimRight(endpoint, "/")
	return &arm.ClientOptions{
		ClientOptions: policy.ClientOptions{
			Cloud: cloud.Configuration{
				ActiveDirectoryAuthorityHost: "https://login.fabric.invalid/",
				Services: map[cloud.ServiceName]cloud.ServiceConfiguration{
					cloud.ResourceManager: {Endpoint: endpoint, Audience: api.ARMAudience},
				},
			},
			Transport:                       transport,
			InsecureAllowCredentialWithHTTP: strings.HasPrefix(strings.ToLower(endpoint), "http:"),
			Retry: policy.RetryOptions{
				MaxRetries:    4,
				RetryDelay:    50 * time.Millisecond,
				MaxRetryDelay: 5 * time.Second,
			},
		},
		DisableRPRegistration: true,
	}
}

// StatePath is where the fabric keeps its state by default:
// $XDG_STATE_HOME/routekeeper/fabric.db, else
// ~/.local/state/routekeeper/fabric.db, with the environment read through
// getenv (os.Getenv for the process's).
func StatePath(getenv func(string) string) string {
	if d := getenv("XDG_STATE_HOME"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, "routekeeper", "fabric.db")
	}
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	if home == "" {
		return filepath.Join(".", "fabric.db")
	}
	return filepath.Join(home, ".local", "state", "routekeeper", "fabric.db")
}

// EndpointClientOptions are SDK options that reach a served fabric at
// endpoint. An https endpoint is trusted through the system's roots
// (SSL_CERT_FILE included) and every CA file given that exists, so the
// fabric's own CA needs no install.
func EndpointClientOptions(endpoint string, caFiles ...string) (*arm.ClientOptions, error) {
	if !strings.HasPrefix(endpoint, "http://") && !strings.HasPrefix(endpoint, "https://") {
		return nil, fmt.Errorf("endpoint %q is not an http:// or https:// URL", endpoint)
	}
	if strings.HasPrefix(endpoint, "http://") {
		return ClientOptions(nil, endpoint), nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	for _, f := range caFiles {
		b, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading CA file %s: %w", f, err)
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("CA file %s holds no PEM certificate", f)
		}
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return ClientOptions(&http.Client{Transport: tr}, endpoint), nil
}

// Credential is an azcore.TokenCredential for the fabric (see
// identity.Credential); the zero value is its administrator.
type Credential = identity.Credential
