package store

import (
	"fmt"

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// Operation is a long-running operation.
type Operation struct {
	ID, Sub, Location, Kind string
	ResourceKey, ResourceID string
	ChildName               string
	StartedAt, EndsAt       int64
	Status, Outcome         string
	ErrorCode, ErrorMessage string
	PrevDoc                 []byte
}

const opColumns = `id, sub, location, kind, resource_key, resource_id, child_name, started_at, ends_at, status, outcome, error_code, error_message, prev_doc`

func scanOp(sc rowScanner) (*Operation, error) {
	o := &Operation{}
	err := sc.Scan(&o.ID, &o.Sub, &o.Location, &o.Kind, &o.ResourceKey, &o.ResourceID, &o.ChildName,
		&o.StartedAt, &o.EndsAt, &o.Status, &o.Outcome, &o.ErrorCode, &o.ErrorMessage, &o.PrevDoc)
	return o, err
}

func (t *Txn) PutOp(o *Operation) error {
	_, err := t.ExecContext(t.Ctx, `INSERT INTO operations(`+opColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET status = excluded.status, outcome = excluded.outcome,
			error_code = excluded.error_code, error_message = excluded.error_message`,
		o.ID, o.Sub, o.Location, o.Kind, o.ResourceKey, o.ResourceID, o.ChildName, o.StartedAt, o.EndsAt,
		o.Status, o.Outcome, o.ErrorCode, o.ErrorMessage, o.PrevDoc)
	if err != nil {
		return fmt.Errorf("writing operation %s: %w", o.ID, err)
	}
	return nil
}

func (t *Txn) GetOp(id string) (*Operation, error) {
	o, err := scanOp(t.QueryRowContext(t.Ctx, `SELECT `+opColumns+` FROM operations WHERE id = ?`, api.Key(id)))
	return found(o, err, "operation "+id)
}

// RunningOp returns the operation in progress on a resource, nil if none.
func (t *Txn) RunningOp(resourceKey string) (*Operation, error) {
	o, err := scanOp(t.QueryRowContext(t.Ctx, `SELECT `+opColumns+` FROM operations WHERE resource_key = ? AND status = 'InProgress' LIMIT 1`, resourceKey))
	return found(o, err, "operations of "+resourceKey)
}

// AnyDue reports whether an operation has passed its end time unfinished.
func (t *Txn) AnyDue(now int64) (bool, error) {
	var n int
	err := t.QueryRowContext(t.Ctx, `SELECT EXISTS(SELECT 1 FROM operations WHERE status = 'InProgress' AND ends_at <= ?)`, now).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("checking operations: %w", err)
	}
	return n == 1, nil
}

func (t *Txn) DueOps(now int64) ([]*Operation, error) {
	return queryRows(t, "reading due operations", scanOp, `SELECT `+opColumns+` FROM operations WHERE status = 'InProgress' AND ends_at <= ? ORDER BY ends_at, id`, now)
}

// PruneOps forgets finished operations that ended before `before`.
func (t *Txn) PruneOps(before int64) error {
	_, err := t.ExecContext(t.Ctx, `DELETE FROM operations WHERE status <> 'InProgress' AND ends_at < ?`, before)
	return err
}
