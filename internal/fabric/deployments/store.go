package deployments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"

	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// schema is this provider's state, in the fabric's store: the deployments
// (the document a GET answers, and the template as deployed), their
// operations, and what-if results until they are read.
const schema = `
CREATE TABLE IF NOT EXISTS deployments (
	key        TEXT PRIMARY KEY,  -- lower(deployment ID)
	rg_key     TEXT NOT NULL,     -- lower(resource group ID)
	sort_key   TEXT NOT NULL,     -- timestamp of the deployment's start, for list order
	doc        BLOB NOT NULL,     -- the deployment as GET answers it (JSON)
	template   BLOB NOT NULL      -- the template as deployed (JSON), for exportTemplate
);
CREATE INDEX IF NOT EXISTS deployments_rg ON deployments(rg_key, sort_key);
CREATE TABLE IF NOT EXISTS deployment_operations (
	deployment_key TEXT NOT NULL,
	seq            INTEGER NOT NULL,
	id             TEXT NOT NULL, -- the operation ID
	doc            BLOB NOT NULL, -- the operation as GET answers it (JSON)
	PRIMARY KEY (deployment_key, seq)
);
CREATE TABLE IF NOT EXISTS whatif_results (
	id       TEXT PRIMARY KEY,
	ready_at INTEGER NOT NULL,    -- unix nanoseconds: 202 before, 200 from then
	doc      BLOB NOT NULL        -- the WhatIfOperationResult (JSON)
);
`

// tables creates the schema once per process (CREATE IF NOT EXISTS: any
// process sharing the state file may be first).
type tables struct {
	mu   sync.Mutex
	done bool
}

func (t *tables) ensure(ctx context.Context, st *store.Store) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.done {
		return nil
	}
	err := st.Write(ctx, func(tx *store.Txn) error {
		_, err := tx.ExecContext(ctx, schema)
		return err
	})
	if err != nil {
		return fmt.Errorf("creating the deployments tables: %w", err)
	}
	t.done = true
	return nil
}

// row is a stored deployment.
type row struct {
	Key, RGKey, SortKey string
	Doc, Template       []byte
}

func getRow(tx *store.Txn, key string) (*row, error) {
	r := &row{Key: key}
	err := tx.QueryRowContext(tx.Ctx, `SELECT rg_key, sort_key, doc, template FROM deployments WHERE key = ?`, key).
		Scan(&r.RGKey, &r.SortKey, &r.Doc, &r.Template)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading deployment %s: %w", key, err)
	}
	return r, nil
}

func putRow(tx *store.Txn, r *row) error {
	_, err := tx.ExecContext(tx.Ctx, `INSERT INTO deployments(key, rg_key, sort_key, doc, template) VALUES (?,?,?,?,?)
		ON CONFLICT(key) DO UPDATE SET sort_key = excluded.sort_key, doc = excluded.doc, template = excluded.template`,
		r.Key, r.RGKey, r.SortKey, r.Doc, r.Template)
	if err != nil {
		return fmt.Errorf("writing deployment %s: %w", r.Key, err)
	}
	return nil
}

func deleteRow(tx *store.Txn, key string) error {
	if _, err := tx.ExecContext(tx.Ctx, `DELETE FROM deployments WHERE key = ?`, key); err != nil {
		return fmt.Errorf("deleting deployment %s: %w", key, err)
	}
	return clearOps(tx, key)
}

func listRows(tx *store.Txn, rgKey string) ([]*row, error) {
	rows, err := tx.QueryContext(tx.Ctx, `SELECT key, rg_key, sort_key, doc, template FROM deployments WHERE rg_key = ? ORDER BY sort_key DESC, key`, rgKey)
	if err != nil {
		return nil, fmt.Errorf("listing deployments: %w", err)
	}
	defer rows.Close()
	var out []*row
	for rows.Next() {
		r := &row{}
		if err := rows.Scan(&r.Key, &r.RGKey, &r.SortKey, &r.Doc, &r.Template); err != nil {
			return nil, fmt.Errorf("listing deployments: %w", err)
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

func clearOps(tx *store.Txn, key string) error {
	if _, err := tx.ExecContext(tx.Ctx, `DELETE FROM deployment_operations WHERE deployment_key = ?`, key); err != nil {
		return fmt.Errorf("deleting the operations of %s: %w", key, err)
	}
	return nil
}

func addOp(tx *store.Txn, key string, seq int, id string, doc []byte) error {
	if _, err := tx.ExecContext(tx.Ctx, `INSERT OR REPLACE INTO deployment_operations(deployment_key, seq, id, doc) VALUES (?,?,?,?)`,
		key, seq, id, doc); err != nil {
		return fmt.Errorf("writing an operation of %s: %w", key, err)
	}
	return nil
}

func listOps(tx *store.Txn, key string) ([][]byte, []string, error) {
	rows, err := tx.QueryContext(tx.Ctx, `SELECT id, doc FROM deployment_operations WHERE deployment_key = ? ORDER BY seq`, key)
	if err != nil {
		return nil, nil, fmt.Errorf("listing the operations of %s: %w", key, err)
	}
	defer rows.Close()
	var docs [][]byte
	var ids []string
	for rows.Next() {
		var id string
		var doc []byte
		if err := rows.Scan(&id, &doc); err != nil {
			return nil, nil, fmt.Errorf("listing the operations of %s: %w", key, err)
		}
		ids, docs = append(ids, id), append(docs, doc)
	}
	return docs, ids, rows.Err()
}

func putWhatIf(tx *store.Txn, id string, readyAt int64, doc []byte) error {
	if _, err := tx.ExecContext(tx.Ctx, `INSERT OR REPLACE INTO whatif_results(id, ready_at, doc) VALUES (?,?,?)`, id, readyAt, doc); err != nil {
		return fmt.Errorf("writing what-if result %s: %w", id, err)
	}
	return nil
}

func getWhatIf(tx *store.Txn, id string) (int64, []byte, error) {
	var at int64
	var doc []byte
	err := tx.QueryRowContext(tx.Ctx, `SELECT ready_at, doc FROM whatif_results WHERE id = ?`, id).Scan(&at, &doc)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil, nil
	case err != nil:
		return 0, nil, fmt.Errorf("reading what-if result %s: %w", id, err)
	}
	return at, doc, nil
}

// pruneWhatIf forgets what-if results older than before.
func pruneWhatIf(tx *store.Txn, before int64) error {
	_, err := tx.ExecContext(tx.Ctx, `DELETE FROM whatif_results WHERE ready_at < ?`, before)
	return err
}
