package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/google/uuid"
)

// Request is a parsed ARM request.
type Request struct {
	HTTP       *http.Request
	Method     string
	Base       string // scheme://host of the request, for absolute URLs
	APIVersion string
	Segs       []string // path segments
	Body       []byte
	Query      url.Values
	Out        http.Header // the response headers, for the pipeline to add to
	Caller     Caller      // who asks, from the bearer token (authorize.go)
	Authz      any         // the authorization state the request was checked against (*authzState)
}

// Response is what a handler answers.
type Response struct {
	Status int
	Body   any // marshalled as JSON; nil for no body
	Header http.Header
}

func (q *Request) header(name string) string { return q.HTTP.Header.Get(name) }

// BaseURL is the scheme and host the client used: absolute URLs in
// Azure-AsyncOperation, Location and nextLink must point back at us, over
// loopback, through the in-process transport, or through a proxy that
// terminates TLS and says so in Forwarded or X-Forwarded-Proto/-Host.
func BaseURL(r *http.Request) string {
	scheme := r.URL.Scheme
	if scheme == "" {
		scheme = "http"
		if r.TLS != nil {
			scheme = "https"
		}
	}
	host := r.Host
	if host == "" {
		host = r.URL.Host
	}
	fwdProto, fwdHost := forwarded(r.Header)
	if fwdProto == "http" || fwdProto == "https" {
		scheme = fwdProto
	}
	if fwdHost != "" {
		host = fwdHost
	}
	if host == "" {
		host = "localhost"
	}
	return scheme + "://" + host
}

// forwarded reads the protocol and host a client used from the first hop of
// a Forwarded header (RFC 7239), else from X-Forwarded-Proto/-Host.
func forwarded(h http.Header) (proto, host string) {
	if f := h.Get("Forwarded"); f != "" {
		first, _, _ := strings.Cut(f, ",")
		for _, pair := range strings.Split(first, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok {
				continue
			}
			v = strings.Trim(v, `"`)
			switch strings.ToLower(k) {
			case "proto":
				proto = strings.ToLower(v)
			case "host":
				host = v
			}
		}
		return proto, host
	}
	first := func(v string) string {
		v, _, _ = strings.Cut(v, ",")
		return strings.TrimSpace(v)
	}
	return strings.ToLower(first(h.Get("X-Forwarded-Proto"))), first(h.Get("X-Forwarded-Host"))
}

func IsWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// PathSegments splits the escaped path, then unescapes each segment: a
// name holding %2F stays one segment (and fails the name rules) rather
// than becoming a path separator.
func PathSegments(u *url.URL) ([]string, error) {
	segs := strings.Split(strings.Trim(u.EscapedPath(), "/"), "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			return nil, BadRequest("InvalidRequestUri", "The request URI path segment %q is not valid: %v", s, err)
		}
		segs[i] = d
	}
	return segs, nil
}

type Handler func(context.Context, *Request) (*Response, error)

// Methods picks the handler for the request method: 405 when there is none.
func Methods(q *Request, hs map[string]Handler) Handler {
	if h, ok := hs[q.Method]; ok {
		return h
	}
	return func(context.Context, *Request) (*Response, error) {
		var allowed []string
		for m := range hs {
			allowed = append(allowed, m)
		}
		e := NewError(http.StatusMethodNotAllowed, "HttpMethodNotSupported",
			"The requested resource does not support http method '%s'.", q.Method)
		e.Header = http.Header{"Allow": {strings.Join(slices.Sorted(slices.Values(allowed)), ", ")}}
		return nil, e
	}
}

func NoRoute(q *Request) *Error {
	return NewError(http.StatusNotFound, "InvalidRequestUri",
		"The request URI '%s' is not valid: the routekeeper fabric serves only the Microsoft.Network paths of docs/fabric.md.", q.HTTP.URL.Path)
}

func InvalidNamespace(q *Request, ns string) *Error {
	return BadRequest("InvalidResourceNamespace", "The resource namespace '%s' is invalid.", ns)
}

func InvalidResourceType(q *Request, typ string) *Error {
	return NewError(http.StatusNotFound, "InvalidResourceType",
		"The resource type '%s' could not be found in the namespace 'Microsoft.Network' for api version '%s'.", typ, q.APIVersion)
}

// DecodeObject unmarshals a JSON object body into v, with Azure's error
// for anything that is not one.
func DecodeObject(body []byte, v any) error {
	t := bytes.TrimSpace(body)
	if len(t) == 0 {
		return InvalidContent(errors.New("the request body is empty"))
	}
	if t[0] != '{' {
		return InvalidContent(errors.New("the request body is not a JSON object"))
	}
	if err := json.Unmarshal(t, v); err != nil {
		return InvalidContent(err)
	}
	return nil
}

func NewEtag() string { return `W/"` + uuid.NewString() + `"` }

// etagMatches compares etags the way a client means them: with or without
// the weak prefix and quotes.
func etagMatches(a, b string) bool {
	norm := func(s string) string {
		s = strings.TrimSpace(s)
		s = strings.TrimPrefix(s, "W/")
		return strings.Trim(s, `"`)
	}
	return norm(a) != "" && norm(a) == norm(b)
}

// CheckPreconditions applies If-Match and If-None-Match to a write of the
// resource with the current etag (exists false when there is none).
func CheckPreconditions(q *Request, id string, exists bool, current string) error {
	if m := q.header("If-Match"); m != "" {
		if strings.TrimSpace(m) == "*" {
			if !exists {
				return errPreconditionFailed(m, "", id)
			}
		} else if !exists || !anyEtagMatches(m, current) {
			return errPreconditionFailed(m, current, id)
		}
	}
	if m := q.header("If-None-Match"); m != "" && exists {
		if strings.TrimSpace(m) == "*" || anyEtagMatches(m, current) {
			return errIfNoneMatch(id)
		}
	}
	return nil
}

func anyEtagMatches(list, current string) bool {
	for _, e := range strings.Split(list, ",") {
		if etagMatches(e, current) {
			return true
		}
	}
	return false
}

// PageURL is the nextLink for a list continuing after token.
func PageURL(q *Request, token string) *string {
	v := url.Values{}
	v.Set("api-version", q.APIVersion)
	v.Set("$skiptoken", token)
	u := q.Base + q.HTTP.URL.EscapedPath() + "?" + v.Encode()
	return &u
}

func Str(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func Ptr[T any](v T) *T { return &v }
