package network

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// Operation kinds.
const (
	opPut         = "put"          // create or update of a top-level resource or a child
	opDelete      = "delete"       // delete of a top-level resource
	opChildDelete = "child-delete" // delete of a route or subnet
	opRGDelete    = "rg-delete"    // delete of a resource group and all it holds
)

// Operation statuses, as the status endpoint spells them.
const (
	statusInProgress = "InProgress"
	statusSucceeded  = "Succeeded"
	statusFailed     = "Failed"
)

// opRetention is how long a finished operation can still be polled.
const opRetention = time.Hour

// newOp starts an operation on a resource. Its outcome is decided now (a
// share of operations fail when fault injection says so) and takes effect
// when it ends; prev is the resource before the write, nil for a create.
func (s *Provider) newOp(kind, sub, location, resourceKey, resourceID, child string, prev []byte) *store.Operation {
	now := s.now()
	o := &store.Operation{
		ID: uuid.NewString(), Sub: sub, Location: location, Kind: kind,
		ResourceKey: resourceKey, ResourceID: resourceID, ChildName: child,
		StartedAt: now.UnixNano(), EndsAt: now.Add(s.opDuration).UnixNano(),
		Status: statusInProgress, Outcome: statusSucceeded, PrevDoc: prev,
	}
	if code, ok := s.faults.FailOperation(resourceID); ok {
		o.Outcome = statusFailed
		o.ErrorCode = code
		o.ErrorMessage = fmt.Sprintf("The operation on %s failed (failure injected by the routekeeper fabric).", resourceID)
	}
	return o
}

// record stores a new operation; with no duration it finishes at once, in
// the same transaction, so nobody ever sees it running.
func (s *Provider) record(tx *store.Txn, o *store.Operation) error {
	if err := tx.PutOp(o); err != nil {
		return err
	}
	if s.opDuration == 0 {
		return s.finish(tx, o)
	}
	return nil
}

// View runs fn in a read transaction after finishing the operations whose
// end time has passed. Completion is lazy, on the first request after the
// end time, but never late as a client sees it, and works the same when
// another process started the operation. The check shares fn's
// transaction: a request pays for a second one only when work is due.
func (s *Provider) View(ctx context.Context, fn func(*store.Txn) error) error {
	for {
		due := false
		err := s.store.Read(ctx, func(tx *store.Txn) error {
			var err error
			if due, err = tx.AnyDue(s.now().UnixNano()); err != nil || due {
				return err
			}
			return fn(tx)
		})
		if err != nil || !due {
			return err
		}
		if err := s.store.Write(ctx, func(tx *store.Txn) error { return s.settleTx(tx) }); err != nil {
			return err
		}
	}
}

// settleTx is settle inside a write transaction.
func (s *Provider) settleTx(tx *store.Txn) error {
	now := s.now()
	ops, err := tx.DueOps(now.UnixNano())
	if err != nil {
		return err
	}
	for _, o := range ops {
		if err := s.finish(tx, o); err != nil {
			return err
		}
	}
	if len(ops) > 0 {
		return tx.PruneOps(now.Add(-opRetention).UnixNano())
	}
	return nil
}

// finish ends an operation with its outcome: the resource reaches
// Succeeded (or goes away, for a delete), or on failure returns to its
// previous content with provisioningState Failed and a new etag.
func (s *Provider) finish(tx *store.Txn, o *store.Operation) error {
	if o.Kind == opRGDelete {
		return s.finishRGDelete(tx, o)
	}
	row, err := tx.GetResource(o.ResourceKey)
	if err != nil {
		return err
	}
	if row == nil { // removed meanwhile (its resource group was deleted)
		o.Status = o.Outcome
		return tx.PutOp(o)
	}
	failed := o.Outcome == statusFailed
	switch o.Kind {
	case opPut:
		if failed {
			if o.PrevDoc == nil {
				// A failed create leaves nothing behind: see docs/fabric.md.
				if err := s.removeResource(tx, row); err != nil {
					return err
				}
				break
			}
			if err := s.restore(tx, row, o.PrevDoc, o.ChildName); err != nil {
				return err
			}
			break
		}
		if err := s.settleRow(tx, row, ""); err != nil {
			return err
		}
	case opChildDelete:
		if failed {
			if err := s.restore(tx, row, o.PrevDoc, o.ChildName); err != nil {
				return err
			}
			break
		}
		if err := s.settleRow(tx, row, o.ChildName); err != nil {
			return err
		}
	case opDelete:
		if !failed && row.Type == api.TypeRouteTables {
			subnets, err := tx.SubnetsOf(row.Key)
			if err != nil {
				return err
			}
			if len(subnets) > 0 {
				failed = true
				e := errTableInUse(o.ResourceID, subnets)
				o.Outcome, o.ErrorCode, o.ErrorMessage = statusFailed, e.Code, e.Message
			}
		}
		if failed {
			if err := s.restore(tx, row, row.Doc, ""); err != nil {
				return err
			}
			break
		}
		if err := s.removeResource(tx, row); err != nil {
			return err
		}
	default:
		return fmt.Errorf("operation %s has unknown kind %q", o.ID, o.Kind)
	}
	o.Status = o.Outcome
	return tx.PutOp(o)
}

// settleRow settles a resource after its operation succeeded (every
// provisioning state Succeeded, the child removeChild, if any, dropped) and
// stores it.
func (s *Provider) settleRow(tx *store.Txn, row *store.ResourceRow, removeChild string) error {
	doc, err := settleDoc(row.Type, row.Doc, removeChild, "")
	if err != nil {
		return err
	}
	row.Doc = doc
	return s.StoreRow(tx, row)
}

// restore puts prev back as the resource's content, with provisioningState
// Failed and a new etag, so a client reading back sees its change did not
// land; child names the route whose write failed, Failed too ("" when the
// operation was on the resource itself).
func (s *Provider) restore(tx *store.Txn, row *store.ResourceRow, prev []byte, child string) error {
	etag := api.NewEtag()
	doc, err := settleDoc(row.Type, prev, child, etag)
	if err != nil {
		return err
	}
	row.Doc, row.Etag = doc, etag
	return s.StoreRow(tx, row)
}

// StoreRow writes a resource and keeps the derived data in step: a route
// table's read-only subnets list is rewritten from the associations, and a
// virtual network's subnets re-derive the associations (and so the subnets
// lists of the tables they name, before and after).
func (s *Provider) StoreRow(tx *store.Txn, row *store.ResourceRow) error {
	switch row.Type {
	case api.TypeRouteTables:
		doc, err := tableWithSubnets(tx, row.Key, row.Doc)
		if err != nil {
			return err
		}
		row.Doc = doc
		return tx.PutResource(row)
	case api.TypeVirtualNetworks:
		if err := tx.PutResource(row); err != nil {
			return err
		}
		vn, err := decodeVNet(row.Doc)
		if err != nil {
			return err
		}
		as, err := vnetAssociations(tx, row.Key, vn)
		if err != nil {
			return err
		}
		return s.setAssociations(tx, row.Key, as)
	}
	return tx.PutResource(row)
}

// setAssociations replaces a virtual network's associations and refreshes
// the subnets list of every route table that gained or lost one.
func (s *Provider) setAssociations(tx *store.Txn, vnetKey string, as []store.Association) error {
	before, err := tx.TablesOfVNet(vnetKey)
	if err != nil {
		return err
	}
	if err := tx.SetAssociations(vnetKey, as); err != nil {
		return err
	}
	touched := map[string]bool{}
	for _, k := range before {
		touched[k] = true
	}
	for _, a := range as {
		touched[a.TableKey] = true
	}
	for k := range touched {
		row, err := tx.GetResource(k)
		if err != nil {
			return err
		}
		if row == nil {
			continue
		}
		doc, err := tableWithSubnets(tx, row.Key, row.Doc)
		if err != nil {
			return err
		}
		if string(doc) == string(row.Doc) {
			continue
		}
		row.Doc = doc // the etag stays: the table itself was not written
		if err := tx.PutResource(row); err != nil {
			return err
		}
	}
	return nil
}

// removeResource deletes a resource and the associations it holds.
func (s *Provider) removeResource(tx *store.Txn, row *store.ResourceRow) error {
	if err := tx.DeleteResource(row.Key); err != nil {
		return err
	}
	if row.Type == api.TypeVirtualNetworks {
		return s.setAssociations(tx, row.Key, nil)
	}
	return nil
}

func (s *Provider) finishRGDelete(tx *store.Txn, o *store.Operation) error {
	rg, err := tx.GetRGByKey(o.ResourceKey)
	if err != nil {
		return err
	}
	if rg == nil {
		o.Status = o.Outcome
		return tx.PutOp(o)
	}
	rows, err := tx.ResourcesInRG(o.ResourceKey)
	if err != nil {
		return err
	}
	if o.Outcome == statusSucceeded {
		// A route table still used by a subnet of another group keeps the
		// whole delete from succeeding.
		for _, row := range rows {
			if row.Type != api.TypeRouteTables {
				continue
			}
			subnets, err := tx.SubnetsOf(row.Key)
			if err != nil {
				return err
			}
			var outside []string
			for _, id := range subnets {
				if a, ok := api.ParseNetworkID(id); !ok || api.Key(api.RGID(a.Sub, a.RG)) != o.ResourceKey {
					outside = append(outside, id)
				}
			}
			if len(outside) > 0 {
				e := errTableInUse(row.ID, outside)
				o.Outcome, o.ErrorCode, o.ErrorMessage = statusFailed, e.Code, e.Message
				break
			}
		}
	}
	if o.Outcome == statusFailed {
		rg.State = statusSucceeded
		if err := tx.PutRG(rg); err != nil {
			return err
		}
	} else {
		for _, row := range rows {
			if err := s.removeResource(tx, row); err != nil {
				return err
			}
		}
		if err := tx.DeleteRG(rg.Key); err != nil {
			return err
		}
	}
	o.Status = o.Outcome
	return tx.PutOp(o)
}

// checkRunning refuses a write to a resource whose operation still runs.
func (s *Provider) checkRunning(tx *store.Txn, q *api.Request, resourceKey string) error {
	o, err := tx.RunningOp(resourceKey)
	if err != nil {
		return err
	}
	if o != nil {
		return api.AnotherOperation(asyncURL(q, o))
	}
	return nil
}

// storeTopPut is the end of every top-level resource PUT: v becomes the
// document of row (of fresh, when the resource is created) with etag, and
// the PUT is answered with its long-running operation (acceptPut).
func (s *Provider) storeTopPut(tx *store.Txn, q *api.Request, rg *store.RGRow, row, fresh *store.ResourceRow, id, loc, etag string, v any) (*api.Response, error) {
	created := row == nil
	var prev []byte
	if created {
		row = fresh
	} else {
		prev = row.Doc
	}
	doc, err := api.Encode(v)
	if err != nil {
		return nil, err
	}
	row.Doc, row.Etag = doc, etag
	if err := s.StoreRow(tx, row); err != nil {
		return nil, err
	}
	return s.acceptPut(tx, q, s.newOp(opPut, rg.Sub, loc, row.Key, id, "", prev), created, etag, json.RawMessage(doc))
}

// acceptPut records the long-running operation of a PUT and makes its
// answer, as ARM gives it: 201 for a create, 200 for an update, the
// Azure-AsyncOperation headers and the new ETag, with body.
func (s *Provider) acceptPut(tx *store.Txn, q *api.Request, o *store.Operation, created bool, etag string, body any) (*api.Response, error) {
	if err := s.record(tx, o); err != nil {
		return nil, err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	h := s.lroHeaders(q, o, false)
	h.Set("ETag", etag)
	return &api.Response{Status: status, Body: body, Header: h}, nil
}
