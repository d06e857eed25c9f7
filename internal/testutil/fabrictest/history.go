package fabrictest

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"

	_ "modernc.org/sqlite" // the fabric's SQLite driver
)

// TableVersion is one version of a route table as the fabric stored it:
// its routes, name -> "prefix nextHopType nextHopIP".
type TableVersion struct {
	Seq    int
	Etag   string
	Routes map[string]string
}

// RecordHistory makes the fabric state file at path keep every version of
// every resource it stores from now on, whichever process writes it (a
// trigger on the fabric's resources table), so a test can assert on what
// was in a table at every moment rather than on timing. Read it with
// History.
func RecordHistory(tb testing.TB, path string) {
	tb.Helper()
	db := openState(tb, path)
	defer db.Close()
	for _, stmt := range []string{
		`CREATE TABLE IF NOT EXISTS test_history (seq INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, doc BLOB NOT NULL)`,
		`CREATE TRIGGER IF NOT EXISTS test_history_insert AFTER INSERT ON resources BEGIN INSERT INTO test_history(key, doc) VALUES (NEW.key, NEW.doc); END`,
		`CREATE TRIGGER IF NOT EXISTS test_history_update AFTER UPDATE ON resources BEGIN INSERT INTO test_history(key, doc) VALUES (NEW.key, NEW.doc); END`,
	} {
		if _, err := db.ExecContext(context.Background(), stmt); err != nil {
			tb.Fatalf("recording fabric history in %s: %v", path, err)
		}
	}
}

// History returns the versions of route table id stored since
// RecordHistory, oldest first.
func History(tb testing.TB, path, id string) []TableVersion {
	tb.Helper()
	db := openState(tb, path)
	defer db.Close()
	rows, err := db.QueryContext(context.Background(), `SELECT seq, doc FROM test_history WHERE key = ? ORDER BY seq`, strings.ToLower(id))
	if err != nil {
		tb.Fatalf("reading fabric history: %v", err)
	}
	defer rows.Close()
	var out []TableVersion
	for rows.Next() {
		var seq int
		var doc []byte
		if err := rows.Scan(&seq, &doc); err != nil {
			tb.Fatal(err)
		}
		var t struct {
			Etag       string `json:"etag"`
			Properties struct {
				Routes []struct {
					Name       string `json:"name"`
					Properties struct {
						AddressPrefix    string `json:"addressPrefix"`
						NextHopType      string `json:"nextHopType"`
						NextHopIPAddress string `json:"nextHopIpAddress"`
					} `json:"properties"`
				} `json:"routes"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(doc, &t); err != nil {
			tb.Fatalf("fabric history version %d of %s: %v", seq, id, err)
		}
		v := TableVersion{Seq: seq, Etag: t.Etag, Routes: map[string]string{}}
		for _, r := range t.Properties.Routes {
			v.Routes[r.Name] = strings.TrimSpace(r.Properties.AddressPrefix + " " + r.Properties.NextHopType + " " + r.Properties.NextHopIPAddress)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func openState(tb testing.TB, path string) *sql.DB {
	tb.Helper()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	if err != nil {
		tb.Fatalf("opening fabric state %s: %v", path, err)
	}
	return db
}
