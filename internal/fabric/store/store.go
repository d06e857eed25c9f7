package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // registers the "sqlite" driver (pure Go, no cgo)

	"github.com/routekeeper/routekeeper/internal/fabric/api"
)

// schemaVersion is stored in PRAGMA user_version; a state file written by a
// newer routekeeper is refused rather than misread.
const schemaVersion = 2

const schema = `
CREATE TABLE IF NOT EXISTS resource_groups (
	key      TEXT PRIMARY KEY,   -- lower(/subscriptions/{sub}/resourceGroups/{rg})
	sub      TEXT NOT NULL,      -- subscription ID as first used
	name     TEXT NOT NULL,      -- name as created
	location TEXT NOT NULL,
	tags     TEXT NOT NULL,      -- JSON object
	state    TEXT NOT NULL       -- Succeeded | Deleting
);
CREATE INDEX IF NOT EXISTS resource_groups_sub ON resource_groups(lower(sub), key);
CREATE TABLE IF NOT EXISTS resources (
	key      TEXT PRIMARY KEY,   -- lower(resource ID)
	id       TEXT NOT NULL,      -- resource ID as created
	rg_key   TEXT NOT NULL,
	sub_key  TEXT NOT NULL,      -- lower(subscription ID)
	type     TEXT NOT NULL,      -- routeTables | virtualNetworks
	sort_key TEXT NOT NULL,      -- lower(rg) || '/' || lower(name): list order
	doc      BLOB NOT NULL,      -- the resource as ARM returns it (JSON), minus computed back-references
	etag     TEXT NOT NULL,
	rev      INTEGER NOT NULL DEFAULT 0 -- random, new on every write: validates cached docs (schema 2)
);
CREATE INDEX IF NOT EXISTS resources_list ON resources(sub_key, type, sort_key);
CREATE INDEX IF NOT EXISTS resources_rg ON resources(rg_key);
CREATE TABLE IF NOT EXISTS associations (
	subnet_key TEXT PRIMARY KEY, -- lower(subnet ID)
	subnet_id  TEXT NOT NULL,
	vnet_key   TEXT NOT NULL,
	table_key  TEXT NOT NULL     -- lower(route table ID)
);
CREATE INDEX IF NOT EXISTS associations_table ON associations(table_key, subnet_key);
CREATE INDEX IF NOT EXISTS associations_vnet ON associations(vnet_key);
CREATE TABLE IF NOT EXISTS operations (
	id            TEXT PRIMARY KEY,
	sub           TEXT NOT NULL,
	location      TEXT NOT NULL,
	kind          TEXT NOT NULL,  -- put | delete | child-delete | rg-delete
	resource_key  TEXT NOT NULL,  -- the top-level resource (or resource group) it locks
	resource_id   TEXT NOT NULL,
	child_name    TEXT NOT NULL,  -- for child-delete
	started_at    INTEGER NOT NULL, -- unix nanoseconds
	ends_at       INTEGER NOT NULL,
	status        TEXT NOT NULL,  -- InProgress | Succeeded | Failed
	outcome       TEXT NOT NULL,  -- the status it ends with
	error_code    TEXT NOT NULL,
	error_message TEXT NOT NULL,
	prev_doc      BLOB            -- the resource before the write, NULL for a create
);
CREATE INDEX IF NOT EXISTS operations_due ON operations(status, ends_at);
CREATE INDEX IF NOT EXISTS operations_resource ON operations(resource_key, status);
`

// Store is the fabric's state: resource groups, resources, subnet ↔ route
// table associations and long-running operations, in SQLite. A Store opened
// on a file may be shared by several processes: the file is in WAL mode,
// waits on locks (busy timeout), and every write is one IMMEDIATE
// transaction, so a crash never leaves half a resource.
type Store struct {
	db   *sql.DB
	path string // "" in memory

	// wmu serialises this process's write transactions: SQLite takes one
	// writer at a time anyway, and waiting here is cheaper than in SQLite's
	// busy handler. Other processes are kept out by the file lock.
	wmu sync.Mutex

	// docs caches resource documents for reads, by key, valid while the
	// row's rev is unchanged (any process's write changes it).
	docs docCache

	// written wakes the Subscribers after each committed write (networks.go).
	written writeNotifier
}

// busyTimeoutMS is how long a write waits for another process's write
// transaction before giving up.
const busyTimeoutMS = 15000

// Open opens (creating if needed) the state file at path.
func Open(ctx context.Context, path string) (*Store, error) {
	if path == "" {
		return nil, errors.New("opening fabric state: empty path")
	}
	if strings.ContainsRune(path, '?') {
		// The driver reads its options after the first '?' of the name.
		return nil, fmt.Errorf("opening fabric state %q: the path must not contain '?'", path)
	}
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("opening fabric state %s: %w", path, err)
		}
	}
	dsn := fmt.Sprintf("%s?_txlock=immediate&_pragma=busy_timeout(%d)&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)",
		path, busyTimeoutMS)
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening fabric state %s: %w", path, err)
	}
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	s := &Store{db: db, path: path}
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening fabric state %s: %w", path, err)
	}
	return s, nil
}

// OpenMemory opens an empty in-memory state, for tests. It lives as long as
// the Store.
func OpenMemory(ctx context.Context) (*Store, error) {
	db, err := sql.Open("sqlite", "file::memory:?_txlock=immediate")
	if err != nil {
		return nil, fmt.Errorf("opening in-memory fabric state: %w", err)
	}
	// One connection: an in-memory database exists per connection.
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	s := &Store{db: db}
	if err := s.init(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening in-memory fabric state: %w", err)
	}
	return s, nil
}

// Path is the state file, "" for an in-memory store.
func (s *Store) Path() string { return s.path }

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

func (s *Store) init(ctx context.Context) error {
	return s.Write(ctx, func(tx *Txn) error {
		var v int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
			return err
		}
		if v > schemaVersion {
			return fmt.Errorf("state schema version %d is newer than this routekeeper understands (%d)", v, schemaVersion)
		}
		if _, err := tx.ExecContext(ctx, schema+authzSchema); err != nil {
			return fmt.Errorf("creating schema: %w", err)
		}
		if v == 1 {
			// Schema 1 had no rev column; rows without one are never
			// served from the cache (rev 0 is never cached).
			if _, err := tx.ExecContext(ctx, `ALTER TABLE resources ADD COLUMN rev INTEGER NOT NULL DEFAULT 0`); err != nil {
				return fmt.Errorf("upgrading schema 1 to 2: %w", err)
			}
		}
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", schemaVersion))
		return err
	})
}

// Txn is one transaction over the state.
type Txn struct {
	*sql.Tx
	Ctx   context.Context
	store *Store
}

// Write runs fn in one IMMEDIATE transaction and commits it when fn returns
// nil. An *apiError from fn rolls back and is returned as it is.
func (s *Store) Write(ctx context.Context, fn func(*Txn) error) error {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("beginning write transaction: %w", err)
	}
	if err := fn(&Txn{Tx: tx, Ctx: ctx, store: s}); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("committing: %w", err)
	}
	s.written.notify()
	return nil
}

// Read runs fn in a read-only transaction: a consistent snapshot.
func (s *Store) Read(ctx context.Context, fn func(*Txn) error) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("beginning read transaction: %w", err)
	}
	defer tx.Rollback()
	return fn(&Txn{Tx: tx, Ctx: ctx, store: s})
}

// RGRow is a resource group.
type RGRow struct {
	Key, Sub, Name, Location, Tags, State string
}

func (t *Txn) GetRG(sub, rg string) (*RGRow, error) { return t.GetRGByKey(api.Key(api.RGID(sub, rg))) }

func (t *Txn) GetRGByKey(k string) (*RGRow, error) {
	r := &RGRow{Key: k}
	err := t.QueryRowContext(t.Ctx, `SELECT sub, name, location, tags, state FROM resource_groups WHERE key = ?`, k).
		Scan(&r.Sub, &r.Name, &r.Location, &r.Tags, &r.State)
	return found(r, err, "resource group "+k)
}

// found is what a query for one row returns: v when it found the row, nil
// when there was none (sql.ErrNoRows), and err, saying what was read,
// otherwise.
func found[T any](v *T, err error, what string) (*T, error) {
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	return v, nil
}

func (t *Txn) PutRG(r *RGRow) error {
	_, err := t.ExecContext(t.Ctx, `INSERT INTO resource_groups(key, sub, name, location, tags, state) VALUES (?,?,?,?,?,?)
		ON CONFLICT(key) DO UPDATE SET tags = excluded.tags, state = excluded.state`,
		r.Key, r.Sub, r.Name, r.Location, r.Tags, r.State)
	if err != nil {
		return fmt.Errorf("writing resource group %s: %w", r.Name, err)
	}
	return nil
}

func (t *Txn) ListRGs(sub string) ([]*RGRow, error) {
	return queryRows(t, "listing resource groups", func(sc rowScanner) (*RGRow, error) {
		r := &RGRow{}
		return r, sc.Scan(&r.Key, &r.Sub, &r.Name, &r.Location, &r.Tags, &r.State)
	}, `SELECT key, sub, name, location, tags, state FROM resource_groups WHERE lower(sub) = ? ORDER BY key`, api.Key(sub))
}

// ListSubscriptions returns the subscriptions that hold resource groups.
func (t *Txn) ListSubscriptions() ([]string, error) {
	return queryRows(t, "listing subscriptions", scanString, `SELECT MIN(sub) FROM resource_groups GROUP BY lower(sub) ORDER BY lower(sub)`)
}

func (t *Txn) DeleteRG(k string) error {
	if _, err := t.ExecContext(t.Ctx, `DELETE FROM resource_groups WHERE key = ?`, k); err != nil {
		return fmt.Errorf("deleting resource group: %w", err)
	}
	return nil
}

// ResourceRow is a stored top-level resource (route table or virtual
// network) with its inline children.
type ResourceRow struct {
	Key, ID, RGKey, SubKey, Type, SortKey string
	Doc                                   []byte
	Etag                                  string
}

func (t *Txn) GetResource(k string) (*ResourceRow, error) {
	r := &ResourceRow{Key: k}
	err := t.QueryRowContext(t.Ctx, `SELECT id, rg_key, sub_key, type, sort_key, doc, etag FROM resources WHERE key = ?`, k).
		Scan(&r.ID, &r.RGKey, &r.SubKey, &r.Type, &r.SortKey, &r.Doc, &r.Etag)
	return found(r, err, "resource "+k)
}

// GetResourceForRead is getResource for read transactions: the document
// comes from the cache when the row has not been written since it was
// cached. The caller must not modify Doc.
func (t *Txn) GetResourceForRead(k string) (*ResourceRow, error) {
	r := &ResourceRow{Key: k}
	var rev int64
	err := t.QueryRowContext(t.Ctx, `SELECT id, rg_key, sub_key, type, sort_key, etag, rev FROM resources WHERE key = ?`, k).
		Scan(&r.ID, &r.RGKey, &r.SubKey, &r.Type, &r.SortKey, &r.Etag, &rev)
	if got, err := found(r, err, "resource "+k); got == nil {
		return nil, err // absent (nil, nil) or not read
	}
	if doc, ok := t.store.docs.get(k, rev); ok {
		r.Doc = doc
		return r, nil
	}
	// Read the document with the rev it belongs to: in the same snapshot.
	if err := t.QueryRowContext(t.Ctx, `SELECT doc, rev FROM resources WHERE key = ?`, k).Scan(&r.Doc, &rev); err != nil {
		return nil, fmt.Errorf("reading resource %s: %w", k, err)
	}
	t.store.docs.put(k, rev, r.Doc)
	return r, nil
}

func (t *Txn) PutResource(r *ResourceRow) error {
	// A new random rev on every write, so that no cached document outlives
	// its row — even across a delete and re-create, and across processes.
	rev := rand.Int64N(math.MaxInt64-1) + 1
	_, err := t.ExecContext(t.Ctx, `INSERT INTO resources(key, id, rg_key, sub_key, type, sort_key, doc, etag, rev) VALUES (?,?,?,?,?,?,?,?,?)
		ON CONFLICT(key) DO UPDATE SET doc = excluded.doc, etag = excluded.etag, rev = excluded.rev`,
		r.Key, r.ID, r.RGKey, r.SubKey, r.Type, r.SortKey, r.Doc, r.Etag, rev)
	if err != nil {
		return fmt.Errorf("writing resource %s: %w", r.Key, err)
	}
	return nil
}

func (t *Txn) DeleteResource(k string) error {
	if _, err := t.ExecContext(t.Ctx, `DELETE FROM resources WHERE key = ?`, k); err != nil {
		return fmt.Errorf("deleting resource %s: %w", k, err)
	}
	return nil
}

// rowScanner is a row to scan: *sql.Row or *sql.Rows.
type rowScanner interface{ Scan(...any) error }

// queryRows runs q and makes one T of each row with scan; what says what
// is read, in errors.
func queryRows[T any](t *Txn, what string, scan func(rowScanner) (T, error), q string, args ...any) ([]T, error) {
	rows, err := t.QueryContext(t.Ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

func scanString(sc rowScanner) (string, error) {
	var v string
	err := sc.Scan(&v)
	return v, err
}

// resourceColumns are the columns scanResourceRow reads.
const resourceColumns = `key, id, rg_key, sub_key, type, sort_key, doc, etag`

func scanResourceRow(sc rowScanner) (*ResourceRow, error) {
	r := &ResourceRow{}
	return r, sc.Scan(&r.Key, &r.ID, &r.RGKey, &r.SubKey, &r.Type, &r.SortKey, &r.Doc, &r.Etag)
}

// ListResources returns up to limit resources of a type, in list order,
// after the sort key `after`. rgKey "" lists the whole subscription.
func (t *Txn) ListResources(subKey, rgKey, typ, after string, limit int) ([]*ResourceRow, error) {
	q := `SELECT ` + resourceColumns + ` FROM resources WHERE sub_key = ? AND type = ? AND sort_key > ?`
	args := []any{subKey, typ, after}
	if rgKey != "" {
		q += ` AND rg_key = ?`
		args = append(args, rgKey)
	}
	q += ` ORDER BY sort_key LIMIT ?`
	args = append(args, limit)
	return queryRows(t, "listing "+typ, scanResourceRow, q, args...)
}

// ResourcesInRG returns the keys and types of every resource in a group.
func (t *Txn) ResourcesInRG(rgKey string) ([]*ResourceRow, error) {
	return queryRows(t, "listing resource group contents", scanResourceRow,
		`SELECT `+resourceColumns+` FROM resources WHERE rg_key = ? ORDER BY sort_key`, rgKey)
}

// Association is one subnet → route table link.
type Association struct {
	SubnetKey, SubnetID, VNetKey, TableKey string
}

// SetAssociations replaces the associations of a virtual network's subnets.
func (t *Txn) SetAssociations(vnetKey string, as []Association) error {
	if _, err := t.ExecContext(t.Ctx, `DELETE FROM associations WHERE vnet_key = ?`, vnetKey); err != nil {
		return fmt.Errorf("clearing associations: %w", err)
	}
	for _, a := range as {
		if _, err := t.ExecContext(t.Ctx, `INSERT INTO associations(subnet_key, subnet_id, vnet_key, table_key) VALUES (?,?,?,?)`,
			a.SubnetKey, a.SubnetID, a.VNetKey, a.TableKey); err != nil {
			return fmt.Errorf("writing association of %s: %w", a.SubnetID, err)
		}
	}
	return nil
}

// TablesOfVNet returns the keys of the route tables a virtual network's
// subnets are associated with.
func (t *Txn) TablesOfVNet(vnetKey string) ([]string, error) {
	return queryRows(t, "reading associations", scanString, `SELECT DISTINCT table_key FROM associations WHERE vnet_key = ?`, vnetKey)
}

// SubnetsOf returns the IDs of the subnets associated with a route table.
func (t *Txn) SubnetsOf(tableKey string) ([]string, error) {
	return queryRows(t, "reading associations", scanString, `SELECT subnet_id FROM associations WHERE table_key = ? ORDER BY subnet_key`, tableKey)
}

// LocationCount is what ResourcesInLocation counts.
type LocationCount struct {
	// Resources is how many resources of the type the subscription holds
	// in the location.
	Resources int
	// MostChildren is the most inline children (of the document's
	// properties member named children) that one of them holds.
	MostChildren int
}

// ResourcesInLocation counts the resources of a type a subscription holds
// in a location (compared without regard to case), and the most children
// of one kind (a route table's routes) one of them holds: what the usages
// API reports and the per-subscription limits count.
func (t *Txn) ResourcesInLocation(subKey, typ, location, children string) (LocationCount, error) {
	var c LocationCount
	err := t.QueryRowContext(t.Ctx, `SELECT COUNT(*), COALESCE(MAX(json_array_length(doc, '$.properties.'||?)), 0)
		FROM resources WHERE sub_key = ? AND type = ? AND lower(json_extract(doc, '$.location')) = lower(?)`,
		children, subKey, typ, location).Scan(&c.Resources, &c.MostChildren)
	if err != nil {
		return c, fmt.Errorf("counting %s in %s: %w", typ, location, err)
	}
	return c, nil
}
