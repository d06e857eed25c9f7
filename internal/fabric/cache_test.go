package fabric

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/resourcemanager/network/armnetwork/v9"

	"github.com/routekeeper/routekeeper/internal/fabric/store"
)

// TestReadCacheSeesOtherWriters: a GET served from one Store's document
// cache must never be staler than the state file, whoever wrote it — another
// Store (another process), or a delete and re-create of the table.
func TestReadCacheSeesOtherWriters(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fabric.db")
	stA := openStore(t, path)
	defer stA.Close()
	stB := openStore(t, path)
	defer stB.Close()
	a := newEnvOn(t, "inprocess", stA, Options{})
	b := newEnvOn(t, "inprocess", stB, Options{})
	a.createRG(testRG)

	get := func(e *env) armnetwork.RouteTable {
		t.Helper()
		r, err := e.tables.Get(ctx, testRG, "rt", nil)
		if err != nil {
			t.Fatal(err)
		}
		return r.RouteTable
	}
	a.mustPutTable(ctx, testRG, "rt", table(vaRoute("r1", "10.200.0.0/24", "10.240.0.4")))
	first := get(a)
	if again := get(a); *again.Etag != *first.Etag {
		t.Fatalf("two GETs without a write disagree: %s, %s", *first.Etag, *again.Etag)
	}

	// Another process writes: A's next GET sees it.
	cur := get(b)
	cur.Properties.Routes = append(cur.Properties.Routes, vaRoute("r2", "10.200.1.0/24", "10.240.0.5"))
	b.mustPutTable(ctx, testRG, "rt", cur)
	if got := get(a); *got.Etag == *first.Etag || len(got.Properties.Routes) != 2 {
		t.Fatalf("A served a stale table after B's write: etag %s, %d routes", *got.Etag, len(got.Properties.Routes))
	}

	// Deleted and re-created with different content: no stale document.
	p, err := b.tables.BeginDelete(ctx, testRG, "rt", nil)
	mustPoll(ctx, t, p, err)
	b.mustPutTable(ctx, testRG, "rt", table(vaRoute("r3", "10.200.3.0/24", "10.240.0.6")))
	if got := get(a); len(got.Properties.Routes) != 1 || *got.Properties.Routes[0].Name != "r3" {
		t.Fatalf("A served the deleted table's document: %+v", got.Properties.Routes)
	}
}

// TestSchema1StateFileUpgrades: a state file from before the rev column
// opens, keeps its resources and serves them.
func TestSchema1StateFileUpgrades(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fabric.db")
	st := openStore(t, path)
	e := newEnvOn(t, "inprocess", st, Options{})
	e.createRG(testRG)
	e.mustPutTable(ctx, testRG, "rt", table(vaRoute("r1", "10.200.0.0/24", "10.240.0.4")))
	st.Close()

	// Turn the file back into schema 1: no rev column.
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`ALTER TABLE resources DROP COLUMN rev`, `PRAGMA user_version = 1`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	st, err = store.Open(ctx, path)
	if err != nil {
		t.Fatalf("opening a schema 1 state file: %v", err)
	}
	defer st.Close()
	e = newEnvOn(t, "inprocess", st, Options{})
	for range 2 { // the second GET may come from the cache
		r, err := e.tables.Get(ctx, testRG, "rt", nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Properties.Routes) != 1 {
			t.Fatalf("routes after the upgrade: %d, want 1", len(r.Properties.Routes))
		}
	}
}
