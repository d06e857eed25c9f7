package store

import (
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Authorization state: principals, custom role definitions, role
// assignments, management locks, policy definitions and policy
// assignments, in the same SQLite file as every resource (one table,
// created with the rest of the schema), so processes sharing a state file
// share it too. authz_rev changes on every write of the table: a Server
// keeps the state in memory and reloads it when the rev moved, so a
// request pays one small query while nothing changes.
const authzSchema = `
CREATE TABLE IF NOT EXISTS authz (
	key   TEXT PRIMARY KEY,  -- lower(ID); principals: 'principal:' || lower(client ID)
	kind  TEXT NOT NULL,     -- principal | roleDefinition | roleAssignment | lock | policyDefinition | policyAssignment
	id    TEXT NOT NULL,     -- the ID as created (a principal's client ID)
	scope TEXT NOT NULL,     -- the scope it was created at, as created
	doc   BLOB NOT NULL      -- the resource as ARM returns it (JSON)
);
CREATE INDEX IF NOT EXISTS authz_kind ON authz(kind, key);
CREATE TABLE IF NOT EXISTS authz_rev (
	one INTEGER PRIMARY KEY CHECK (one = 1),
	rev INTEGER NOT NULL
);
`

// AuthzRow is one stored authorization object.
type AuthzRow struct {
	Key, Kind, ID, Scope string
	Doc                  []byte
}

func (t *Txn) PutAuthz(r *AuthzRow) error {
	if _, err := t.ExecContext(t.Ctx, `INSERT INTO authz(key, kind, id, scope, doc) VALUES (?,?,?,?,?)
		ON CONFLICT(key) DO UPDATE SET kind = excluded.kind, id = excluded.id, scope = excluded.scope, doc = excluded.doc`,
		r.Key, r.Kind, r.ID, r.Scope, r.Doc); err != nil {
		return fmt.Errorf("writing %s %s: %w", r.Kind, r.ID, err)
	}
	return t.bumpAuthzRev()
}

func (t *Txn) DeleteAuthz(key string) error {
	if _, err := t.ExecContext(t.Ctx, `DELETE FROM authz WHERE key = ?`, key); err != nil {
		return fmt.Errorf("deleting %s: %w", key, err)
	}
	return t.bumpAuthzRev()
}

func (t *Txn) bumpAuthzRev() error {
	rev := rand.Int64N(math.MaxInt64-1) + 1
	if _, err := t.ExecContext(t.Ctx, `INSERT INTO authz_rev(one, rev) VALUES (1, ?) ON CONFLICT(one) DO UPDATE SET rev = excluded.rev`, rev); err != nil {
		return fmt.Errorf("writing the authorization revision: %w", err)
	}
	return nil
}

func (t *Txn) GetAuthz(key string) (*AuthzRow, error) {
	r := &AuthzRow{Key: key}
	err := t.QueryRowContext(t.Ctx, `SELECT kind, id, scope, doc FROM authz WHERE key = ?`, key).Scan(&r.Kind, &r.ID, &r.Scope, &r.Doc)
	return found(r, err, key)
}

func (t *Txn) AuthzRev() (int64, error) {
	var rev int64
	err := t.QueryRowContext(t.Ctx, `SELECT rev FROM authz_rev WHERE one = 1`).Scan(&rev)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading the authorization revision: %w", err)
	}
	return rev, nil
}

func (t *Txn) AllAuthz() ([]*AuthzRow, error) {
	return queryRows(t, "reading the authorization state", func(sc rowScanner) (*AuthzRow, error) {
		r := &AuthzRow{}
		return r, sc.Scan(&r.Key, &r.Kind, &r.ID, &r.Scope, &r.Doc)
	}, `SELECT key, kind, id, scope, doc FROM authz ORDER BY kind, key`)
}
