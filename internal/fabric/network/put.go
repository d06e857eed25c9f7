package network

import (
	"context"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// The one request pipeline of every PUT of a Microsoft.Network resource,
// top-level (route tables, virtual networks, NICs, NSGs, NAT gateways,
// network watchers, gateways, local network gateways, connections) or a
// child kept in its parent's document (routes, subnets, peerings, security
// rules): decode the body with Azure's case-insensitive property names,
// check the tags and the name, then in one write transaction (due
// operations settled, the group there, no operation running on the
// resource) check If-Match/If-None-Match against the resource as stored,
// and let the type build, check and store the new document and answer
// (200 for a no-op, else 201/200 with the long-running operation).

// putter is one PUT to the pipeline: a topPut or a childPut.
type putter interface {
	// decode reads the request body; tags are the tags it sets (nil for
	// a child, which has none).
	decode(body []byte) (tags map[string]*string, err error)
	// parentType is the path type of the top-level resource written.
	parentType() string
	// name is the name the PUT gives: the resource's or the child's.
	name(t api.Target) string
	// current reads the resource as stored: its ID (as stored, else as
	// it will be created), whether it exists and its etag.
	current(w *putWrite) (id string, exists bool, etag string, err error)
	// Write builds, checks and stores the resource, and answers.
	Write(s *Provider, w *putWrite) (*api.Response, error)
}

// putWrite is a PUT inside its write transaction.
type putWrite struct {
	tx  *store.Txn
	q   *api.Request
	rg  *store.RGRow
	t   api.Target
	row *store.ResourceRow // the stored top-level resource; nil when there is none
	// fresh is the row a PUT that creates the top-level resource stores.
	fresh *store.ResourceRow
}

// put runs the pipeline for p.
func (s *Provider) put(ctx context.Context, q *api.Request, p putter) (*api.Response, error) {
	tags, err := p.decode(q.Body)
	if err != nil {
		return nil, err
	}
	if err := api.CheckTags(tags); err != nil {
		return nil, err
	}
	t := q.Target()
	if name := p.name(t); !api.ValidName(name) {
		return nil, api.InvalidName(name)
	}
	var resp *api.Response
	err = s.writeTop(ctx, q, p.parentType(), func(tx *store.Txn, rg *store.RGRow, row, fresh *store.ResourceRow) error {
		w := &putWrite{tx: tx, q: q, rg: rg, t: t, row: row, fresh: fresh}
		id, exists, etag, err := p.current(w)
		if err != nil {
			return err
		}
		if err := api.CheckPreconditions(q, id, exists, etag); err != nil {
			return err
		}
		resp, err = p.Write(s, w)
		return err
	})
	return resp, err
}

// topKind is how the PUT pipeline reads a top-level resource type: the
// body as In, the stored document as Cur.
type topKind[In, Cur any] struct {
	typ, armType string // the path type and the ARM type: routeTables, Microsoft.Network/routeTables
	// render is a stored resource as a GET answers it.
	render renderFunc
	// body decodes a request body: decodeObject, or decodeModel for an
	// SDK model (whose decoder needs the property names folded).
	body func(body []byte, v any) error
	// meta is the location and the tags of a body.
	meta func(in *In) (location *string, tags map[string]*string)
	// stored decodes the stored document; where is its location.
	stored func(doc []byte) (Cur, error)
	where  func(cur Cur) string
}

// modelKind is the topKind of a type kept in its SDK model T, the same for
// the body and the stored document.
func modelKind[T any](typ, armType string, stored func(doc []byte) (*T, error), render renderFunc, meta func(*T) (*string, map[string]*string)) topKind[T, *T] {
	return topKind[T, *T]{typ: typ, armType: armType, render: render, body: api.DecodeModel, stored: stored, meta: meta, where: func(cur *T) string {
		loc, _ := meta(cur)
		return api.Str(loc)
	}}
}

// topPut is a PUT of a top-level resource of kind. build makes the new
// document from what the pipeline has read and checked, and answers:
// unchanged for a no-op, else (usually) store.
type topPut[In, Cur any] struct {
	kind  *topKind[In, Cur]
	build func(p *topPut[In, Cur]) (*api.Response, error)

	*putWrite        // set by the pipeline before build
	in        In     // the body
	cur       Cur    // the resource as stored; zero when the PUT creates it
	id, loc   string // its ID (as stored, else as created) and location
}

func (p *topPut[In, Cur]) decode(body []byte) (map[string]*string, error) {
	if err := p.kind.body(body, &p.in); err != nil {
		return nil, err
	}
	_, tags := p.kind.meta(&p.in)
	return tags, nil
}

func (p *topPut[In, Cur]) parentType() string       { return p.kind.typ }
func (p *topPut[In, Cur]) name(t api.Target) string { return t.Name }

func (p *topPut[In, Cur]) current(w *putWrite) (string, bool, string, error) {
	p.putWrite, p.id = w, w.fresh.ID
	if w.row == nil {
		return p.id, false, "", nil
	}
	cur, err := p.kind.stored(w.row.Doc)
	if err != nil {
		return "", false, "", err
	}
	p.cur, p.id = cur, w.row.ID
	return p.id, true, w.row.Etag, nil
}

func (p *topPut[In, Cur]) Write(_ *Provider, w *putWrite) (*api.Response, error) {
	curLoc := ""
	if w.row != nil {
		curLoc = p.kind.where(p.cur)
	}
	loc, _ := p.kind.meta(&p.in)
	l, err := api.LocationOf(loc, curLoc, w.t.Name, w.rg.Name)
	if err != nil {
		return nil, err
	}
	p.loc = l
	return p.build(p)
}

// exists reports whether the resource was stored before the PUT.
func (p *topPut[In, Cur]) exists() bool { return p.row != nil }

// stored is the row the PUT writes: the existing one, or fresh.
func (p *topPut[In, Cur]) stored() *store.ResourceRow {
	if p.row != nil {
		return p.row
	}
	return p.fresh
}

// Store ends a PUT that changes the resource: v becomes its document with
// etag, answered with the long-running operation (storeTopPut).
func (p *topPut[In, Cur]) Store(s *Provider, etag string, v any) (*api.Response, error) {
	return s.storeTopPut(p.tx, p.q, p.rg, p.row, p.fresh, p.id, p.loc, etag, v)
}

// childPut is a PUT of a child of kind, kept in its parent's document.
type childPut[In, P, C any] struct {
	kind *childKind[P, C]
	// body decodes the request body (decodeObject or decodeModel).
	body func(body []byte, v any) error
	// build makes the child as the parent will hold it, with etag (or,
	// when it is unchanged, the stored child's).
	build func(p *childPut[In, P, C]) (C, error)
	// same reports whether next is prev apart from etags and states: a
	// no-op, answered 200 with the stored child.
	same func(prev, next C) bool
	// check applies the rules between all the children once next is in;
	// nil: none.
	check func(p *childPut[In, P, C], children []C) error
	// commit runs when the PUT is not a no-op, before the parent is
	// stored (a peering's other side); nil: nothing.
	commit func(p *childPut[In, P, C], next C) error

	*putWrite        // set by the pipeline before build
	in        In     // the body
	parent    P      // the parent as stored
	prev      C      // the child as stored; zero when the PUT creates it
	exists    bool   // whether prev is
	id, etag  string // the child's ID (as stored, else as created); the new etag
}

func (p *childPut[In, P, C]) decode(body []byte) (map[string]*string, error) {
	return nil, p.body(body, &p.in)
}

func (p *childPut[In, P, C]) parentType() string       { return p.kind.parent.typ }
func (p *childPut[In, P, C]) name(t api.Target) string { return t.ChildName }

func (p *childPut[In, P, C]) current(w *putWrite) (string, bool, string, error) {
	p.putWrite = w
	parent, err := p.kind.parent.load(w.row, w.t)
	if err != nil {
		return "", false, "", err
	}
	p.parent = parent
	p.prev, p.exists = p.kind.find(parent, w.t.ChildName)
	p.id = api.ChildID(w.row.ID, p.kind.child, w.t.ChildName)
	etag := ""
	if p.exists {
		p.id, etag = p.kind.id(p.prev), p.kind.etag(p.prev)
	}
	return p.id, p.exists, etag, nil
}

func (p *childPut[In, P, C]) Write(s *Provider, w *putWrite) (*api.Response, error) {
	k := p.kind
	p.etag = api.NewEtag()
	next, err := p.build(p)
	if err != nil {
		return nil, err
	}
	if p.exists && k.parent.succeeded(p.parent) && p.same(p.prev, next) {
		if err := k.viewed(w.tx, p.parent, p.prev); err != nil {
			return nil, err
		}
		return api.Unchanged(p.prev, k.etag(p.prev)), nil
	}
	if p.commit != nil {
		if err := p.commit(p, next); err != nil {
			return nil, err
		}
	}
	k.setEtag(next, p.etag)
	children := k.items(p.parent)
	*children = k.replace(*children, w.t.ChildName, next)
	if p.check != nil {
		if err := p.check(p, *children); err != nil {
			return nil, err
		}
	}
	prevDoc := w.row.Doc
	if err := k.parent.Store(s, w.tx, w.row, p.parent, p.etag); err != nil {
		return nil, err
	}
	if err := k.viewed(w.tx, p.parent, next); err != nil {
		return nil, err
	}
	o := s.newOp(opPut, w.rg.Sub, k.parent.location(p.parent), w.row.Key, w.row.ID, w.t.ChildName, prevDoc)
	return s.acceptPut(w.tx, w.q, o, !p.exists, p.etag, next)
}
