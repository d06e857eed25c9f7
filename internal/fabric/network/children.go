package network

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Children kept inline in their parent's document — routes in a route
// table, subnets and peerings in a virtual network, security rules in an
// NSG — are read, listed and deleted by the handlers of this file, and
// written by the PUT pipeline (put.go). A write of a child is a write of
// its parent: a new etag and an operation on the parent.

// parentKind is a top-level resource type whose document holds children.
type parentKind[P any] struct {
	typ, armType string // routeTables, Microsoft.Network/routeTables
	decode       func(doc []byte) (P, error)
	location     func(P) string
	succeeded    func(P) bool // its provisioning state is Succeeded
	// updating gives the parent etag and provisioning state Updating, as
	// a write to one of its children does.
	updating func(p P, etag string)
}

// load decodes the parent of a child request: 404 when it does not exist.
func (k *parentKind[P]) load(row *store.ResourceRow, t api.Target) (P, error) {
	if row == nil {
		var zero P
		return zero, api.ResourceNotFound(k.armType, t.Name, t.RG)
	}
	return k.decode(row.Doc)
}

// Store writes parent, changed by a write to one of its children, as the
// document of row with etag (and provisioning state Updating).
func (k *parentKind[P]) Store(s *Provider, tx *store.Txn, row *store.ResourceRow, parent P, etag string) error {
	k.updating(parent, etag)
	doc, err := api.Encode(parent)
	if err != nil {
		return err
	}
	row.Doc, row.Etag = doc, etag
	return s.StoreRow(tx, row)
}

// childKind is one type of child of a P, as a C.
type childKind[P, C any] struct {
	parent *parentKind[P]
	child  string // the path segment: routes, subnets, ...
	// opPrefix comes before the child's name in the operation of its
	// delete, for settleDoc to tell it from another kind of child.
	opPrefix string
	items    func(P) *[]C
	name     func(C) string // "" for a nil child
	id, etag func(C) string
	setEtag  func(c C, etag string)
	deleting func(C) // its provisioning state becomes Deleting
	// view fills what a reader sees and the document does not keep
	// (a peering's state); nil: nothing.
	view func(tx *store.Txn, parent P, c C) error
}

func (k *childKind[P, C]) find(parent P, name string) (C, bool) {
	for _, c := range *k.items(parent) {
		if strings.EqualFold(k.name(c), name) {
			return c, true
		}
	}
	var zero C
	return zero, false
}

// replace puts c in place of the child called name, or appends it.
func (k *childKind[P, C]) replace(children []C, name string, c C) []C {
	out := make([]C, 0, len(children)+1)
	replaced := false
	for _, o := range children {
		if strings.EqualFold(k.name(o), name) {
			out, replaced = append(out, c), true
			continue
		}
		out = append(out, o)
	}
	if !replaced {
		out = append(out, c)
	}
	return out
}

// viewed is c as a reader sees it (view).
func (k *childKind[P, C]) viewed(tx *store.Txn, parent P, c C) error {
	if k.view == nil {
		return nil
	}
	return k.view(tx, parent, c)
}

// The handlers of a collection of children of kind k.

func (k *childKind[P, C]) handleList(s *Provider) api.Handler {
	return func(ctx context.Context, q *api.Request) (*api.Response, error) { return listChildren(s, ctx, q, k) }
}

func (k *childKind[P, C]) handleGet(s *Provider) api.Handler {
	return func(ctx context.Context, q *api.Request) (*api.Response, error) { return getChild(s, ctx, q, k) }
}

// handleDelete is DELETE; check may refuse it (nil: never).
func (k *childKind[P, C]) handleDelete(s *Provider, check func(tx *store.Txn, rg *store.RGRow, c C) error) api.Handler {
	return func(ctx context.Context, q *api.Request) (*api.Response, error) {
		return deleteChild(s, ctx, q, k, check)
	}
}

// readParent reads the parent of a child GET (404 when it or its group is
// missing) and hands fn the decoded document.
func readParent[P, C any](s *Provider, ctx context.Context, q *api.Request, k *childKind[P, C], fn func(tx *store.Txn, parent P) error) error {
	return s.readTop(ctx, q, k.parent.typ, k.parent.armType, func(tx *store.Txn, row *store.ResourceRow) error {
		parent, err := k.parent.decode(row.Doc)
		if err != nil {
			return err
		}
		return fn(tx, parent)
	})
}

// listChildren serves GET of a collection of children, a page at a time.
func listChildren[P, C any](s *Provider, ctx context.Context, q *api.Request, k *childKind[P, C]) (*api.Response, error) {
	var items []json.RawMessage
	err := readParent(s, ctx, q, k, func(tx *store.Txn, parent P) error {
		for _, c := range *k.items(parent) {
			if err := k.viewed(tx, parent, c); err != nil {
				return err
			}
			b, err := api.Encode(c)
			if err != nil {
				return err
			}
			items = append(items, b)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &api.Response{Status: http.StatusOK, Body: s.pageChildren(q, items)}, nil
}

// getChild serves GET of one child: 404 ChildResourceNotFound when the
// parent holds none of that name.
func getChild[P, C any](s *Provider, ctx context.Context, q *api.Request, k *childKind[P, C]) (*api.Response, error) {
	t := q.Target()
	var resp *api.Response
	err := readParent(s, ctx, q, k, func(tx *store.Txn, parent P) error {
		c, ok := k.find(parent, t.ChildName)
		if !ok {
			return api.ChildNotFound(k.parent.typ, t.Name, k.child, t.ChildName, t.RG)
		}
		if err := k.viewed(tx, parent, c); err != nil {
			return err
		}
		resp = &api.Response{Status: http.StatusOK, Body: c, Header: api.WithEtag(k.etag(c))}
		return nil
	})
	return resp, err
}

// deleteChild starts the deletion of a child: 404 without the parent, 204
// when there is no such child, else 202 with the parent's operation, at
// whose end the child is gone. check may refuse (nil: never).
func deleteChild[P, C any](s *Provider, ctx context.Context, q *api.Request, k *childKind[P, C], check func(tx *store.Txn, rg *store.RGRow, c C) error) (*api.Response, error) {
	t := q.Target()
	var resp *api.Response
	err := s.writeTop(ctx, q, k.parent.typ, func(tx *store.Txn, rg *store.RGRow, row, _ *store.ResourceRow) error {
		parent, err := k.parent.load(row, t)
		if err != nil {
			return err
		}
		c, ok := k.find(parent, t.ChildName)
		etag := ""
		if ok {
			etag = k.etag(c)
		}
		if err := api.CheckPreconditions(q, api.ChildID(row.ID, k.child, t.ChildName), ok, etag); err != nil {
			return err
		}
		if !ok {
			resp = &api.Response{Status: http.StatusNoContent}
			return nil
		}
		if check != nil {
			if err := check(tx, rg, c); err != nil {
				return err
			}
		}
		prevDoc := row.Doc
		k.deleting(c)
		if err := k.parent.Store(s, tx, row, parent, api.NewEtag()); err != nil {
			return err
		}
		o := s.newOp(opChildDelete, rg.Sub, k.parent.location(parent), row.Key, row.ID, k.opPrefix+k.name(c), prevDoc)
		if err := s.record(tx, o); err != nil {
			return err
		}
		resp = &api.Response{Status: http.StatusAccepted, Header: s.lroHeaders(q, o, true)}
		return nil
	})
	return resp, err
}
