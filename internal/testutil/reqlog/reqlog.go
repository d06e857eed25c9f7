// Package reqlog records the requests an Azure SDK client sends, for
// tests that assert on which ARM calls were made.
package reqlog

import (
	"net/http"
	"strings"
	"sync"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
)

// Recorder is an SDK transport that records each request as
// "METHOD path" and sends it on.
type Recorder struct {
	next policy.Transporter
	mu   sync.Mutex
	seen []string
}

// New returns a Recorder that sends requests on through next
// (http.DefaultClient when nil).
func New(next policy.Transporter) *Recorder {
	if next == nil {
		next = http.DefaultClient
	}
	return &Recorder{next: next}
}

// Do implements policy.Transporter.
func (r *Recorder) Do(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.seen = append(r.seen, req.Method+" "+req.URL.Path)
	r.mu.Unlock()
	return r.next.Do(req)
}

// Requests returns the requests recorded so far, "METHOD path" each.
func (r *Recorder) Requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

// Count counts the requests recorded so far whose "METHOD path" contains
// substr.
func (r *Recorder) Count(substr string) int {
	n := 0
	for _, s := range r.Requests() {
		if strings.Contains(s, substr) {
			n++
		}
	}
	return n
}
