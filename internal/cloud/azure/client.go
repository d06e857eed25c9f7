// Package azure is routekeeper's cloud back-end on Azure Resource Manager,
// built on the official SDK (armnetwork, azcore, azidentity). The same code
// talks to real Azure and to the local fabric: only the endpoint, the
// credential and the transport differ, so every test exercises the SDK's
// serialization, pollers and retry policy.
//
// Writes of a route table are whole-table PUTs carrying If-Match; a 412 comes
// back as armerr.ErrPreconditionFailed for the caller to re-read and re-plan.
// Long-running operations are awaited; one that ends Failed is returned as a
// *armerr.OperationFailedError, never as success. A write is re-sent as it
// is only when ARM did not take it (429, 503 with Retry-After) or it never
// left; one whose answer was lost comes back at once as a
// *armerr.OutcomeUnknownError for the caller to read the resource back
// (outcome.go).
package azure

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/arm"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/cloud"
)

// Observer is told of every HTTP request the client sends to ARM (each
// attempt, including retries and LRO polls), for metrics.
type Observer interface {
	ObserveARMCall(method string, status int, d time.Duration)
}

// TableObserver is an Observer that is also told, of every request made
// with a context marked by cloud.ForTable, the table it was made for.
type TableObserver interface {
	Observer
	ObserveTableARMCall(table, method string)
}

// Options configure a Client.
type Options struct {
	// Credential authenticates to ARM. Required.
	Credential azcore.TokenCredential
	// ClientOptions are the SDK options: cloud endpoints, transport, retry.
	// Nil means public Azure with routekeeper's retry defaults.
	ClientOptions *arm.ClientOptions
	// PollFrequency is how often a long-running operation is polled when
	// ARM does not say (Retry-After). Default 2s; the SDK refuses less than
	// 1s outside tests.
	PollFrequency time.Duration
	// Observer, if set, sees every HTTP call.
	Observer Observer
	// Wait, if set, is called when the client starts waiting for a
	// long-running operation (what: "the write of route table <ID>"); the
	// function it returns is called with the outcome. The CLI shows it as
	// progress on a terminal.
	Wait   func(what string) (done func(error))
	Logger *slog.Logger
}

// Client reads and writes route tables and subnets. It is safe for
// concurrent use. The SDK's clients are bound to a subscription, so one set
// is made per subscription on first use.
type Client struct {
	cred     azcore.TokenCredential
	opts     arm.ClientOptions
	pollFreq time.Duration
	wait     func(string) func(error)
	log      *slog.Logger
	stats    Stats

	mu   sync.Mutex
	subs map[string]*subClients
	arm  *arm.Client // plain ARM requests (permissions.go), made on first use
	// subnets holds the body of each subnet as last read (by lower-case
	// ID), so that SetSubnetRouteTable decided on that read sends it back
	// without reading the subnet again; If-Match keeps it from overwriting
	// a newer version.
	subnets map[string]*armnetwork.Subnet
}

type subClients struct {
	tables  *armnetwork.RouteTablesClient
	subnets *armnetwork.SubnetsClient
	vnets   *armnetwork.VirtualNetworksClient
	nics    *armnetwork.InterfacesClient
	// peerings and gateways read the interconnect (interconnect.go).
	peerings *armnetwork.VirtualNetworkPeeringsClient
	gateways *armnetwork.VirtualNetworkGatewaysClient
	// usages reads Azure's limits in a region (usages.go).
	usages *armnetwork.UsagesClient
}

// Stats counts the HTTP calls a Client made.
type Stats struct {
	Reads              atomic.Int64 // GET (including LRO polls)
	Writes             atomic.Int64 // PUT, PATCH, DELETE
	Throttled          atomic.Int64 // 429 answers
	PreconditionFailed atomic.Int64 // 412 answers
}

// StatsSnapshot is a copy of Stats at one moment.
type StatsSnapshot struct {
	Reads, Writes, Throttled, PreconditionFailed int64
}

// Sub returns the calls made since an earlier snapshot.
func (s StatsSnapshot) Sub(o StatsSnapshot) StatsSnapshot {
	return StatsSnapshot{s.Reads - o.Reads, s.Writes - o.Writes, s.Throttled - o.Throttled, s.PreconditionFailed - o.PreconditionFailed}
}

// New makes a Client.
func New(opts Options) (*Client, error) {
	if opts.Credential == nil {
		return nil, fmt.Errorf("azure client: no credential")
	}
	c := &Client{
		cred:     opts.Credential,
		pollFreq: opts.PollFrequency,
		wait:     opts.Wait,
		log:      opts.Logger,
		subs:     map[string]*subClients{},
	}
	if c.pollFreq <= 0 {
		c.pollFreq = 2 * time.Second
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	if opts.ClientOptions != nil {
		c.opts = *opts.ClientOptions
	}
	if c.opts.Retry.MaxRetries == 0 {
		// ARM throttles for seconds to minutes; the SDK's default of 3
		// retries starting at 0.8s gives up too early for a controller.
		c.opts.Retry.MaxRetries = 6
	}
	if c.opts.Retry.MaxRetryDelay == 0 {
		c.opts.Retry.MaxRetryDelay = 60 * time.Second
	}
	c.opts.DisableRPRegistration = true
	// Writes are re-sent only when ARM did not take them (outcome.go);
	// reads keep the SDK's rule, or the caller's.
	read := c.opts.Retry.ShouldRetry
	if read == nil {
		read = readRetryable(c.opts.Retry.StatusCodes)
	}
	c.opts.Retry.ShouldRetry = shouldRetry(read)
	counter := &countingPolicy{stats: &c.stats, observer: opts.Observer}
	c.opts.PerRetryPolicies = append(append([]policy.Policy(nil), c.opts.PerRetryPolicies...), answerPolicy{}, counter)
	return c, nil
}

// Stats returns a snapshot of the calls made so far.
func (c *Client) Stats() StatsSnapshot {
	return StatsSnapshot{
		Reads:              c.stats.Reads.Load(),
		Writes:             c.stats.Writes.Load(),
		Throttled:          c.stats.Throttled.Load(),
		PreconditionFailed: c.stats.PreconditionFailed.Load(),
	}
}

func (c *Client) clients(subscription string) (*subClients, error) {
	key := strings.ToLower(subscription)
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc, ok := c.subs[key]; ok {
		return sc, nil
	}
	f, err := armnetwork.NewClientFactory(subscription, c.cred, &c.opts)
	if err != nil {
		return nil, fmt.Errorf("making ARM clients for subscription %s: %w", subscription, err)
	}
	sc := &subClients{
		tables:  f.NewRouteTablesClient(),
		subnets: f.NewSubnetsClient(),
		vnets:   f.NewVirtualNetworksClient(),
		nics:    f.NewInterfacesClient(),

		peerings: f.NewVirtualNetworkPeeringsClient(),
		gateways: f.NewVirtualNetworkGatewaysClient(),
		usages:   f.NewUsagesClient(),
	}
	c.subs[key] = sc
	return sc, nil
}

func (c *Client) pollOptions() *runtime.PollUntilDoneOptions {
	return &runtime.PollUntilDoneOptions{Frequency: c.pollFreq}
}

// pollUntilDone waits for a long-running operation, telling opts.Wait.
func pollUntilDone[T any](ctx context.Context, c *Client, what string, p *runtime.Poller[T]) (T, error) {
	done := func(error) {}
	if c.wait != nil {
		done = c.wait(what)
	}
	resp, err := p.PollUntilDone(ctx, c.pollOptions())
	done(err)
	return resp, err
}

// countingPolicy counts every attempt and reports it to the observer.
type countingPolicy struct {
	stats    *Stats
	observer Observer
}

func (p *countingPolicy) Do(req *policy.Request) (*http.Response, error) {
	start := time.Now()
	resp, err := req.Next()
	method := req.Raw().Method
	if isWrite(req.Raw()) {
		p.stats.Writes.Add(1)
	} else {
		// A GET, or a POST that only reads (a gateway's learned routes).
		p.stats.Reads.Add(1)
	}
	status := 0
	if resp != nil {
		status = resp.StatusCode
		switch status {
		case http.StatusTooManyRequests:
			p.stats.Throttled.Add(1)
		case http.StatusPreconditionFailed:
			p.stats.PreconditionFailed.Add(1)
		}
	}
	if p.observer != nil {
		p.observer.ObserveARMCall(method, status, time.Since(start))
		if to, ok := p.observer.(TableObserver); ok {
			if table := cloud.TableOf(req.Raw().Context()); table != "" {
				to.ObserveTableARMCall(table, method)
			}
		}
	}
	return resp, err
}

// withIfMatch adds If-Match (or If-None-Match: * when etag is "") to the
// request made with ctx.
func withIfMatch(ctx context.Context, etag string) context.Context {
	if etag == "" {
		return policy.WithHTTPHeader(ctx, http.Header{"If-None-Match": {"*"}})
	}
	return policy.WithHTTPHeader(ctx, http.Header{"If-Match": {etag}})
}

// Calls returns the number of ARM reads and writes made so far.
func (c *Client) Calls() (reads, writes int64) {
	return c.stats.Reads.Load(), c.stats.Writes.Load()
}
