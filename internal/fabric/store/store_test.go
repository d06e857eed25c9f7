package store

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenRefusesNewerSchema: a state file of a newer schema is refused, a
// path with '?' too (the driver would read options from it), and a file
// opened is in WAL mode with the busy timeout.
func TestOpenRefusesNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "fabric.db")
	st, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.db.ExecContext(ctx, "PRAGMA user_version = 99"); err != nil {
		t.Fatal(err)
	}
	st.Close()
	if _, err := Open(ctx, path); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Errorf("Open of a newer state = %v", err)
	}
	if _, err := Open(ctx, filepath.Join(t.TempDir(), "what?.db")); err == nil {
		t.Error("Open of a path with '?' succeeded")
	}
	// Other unusual characters are fine.
	odd := filepath.Join(t.TempDir(), "a #b %20c.db")
	st2, err := Open(ctx, odd)
	if err != nil {
		t.Fatalf("Open(%q): %v", odd, err)
	}
	var mode string
	var timeout int
	if err := st2.db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil || mode != "wal" {
		t.Errorf("journal_mode = %q, %v; want wal", mode, err)
	}
	if err := st2.db.QueryRowContext(ctx, "PRAGMA busy_timeout").Scan(&timeout); err != nil || timeout != busyTimeoutMS {
		t.Errorf("busy_timeout = %d, %v", timeout, err)
	}
	st2.Close()
	if _, err := os.Stat(odd); err != nil {
		t.Errorf("state file not at %q: %v", odd, err)
	}
}
