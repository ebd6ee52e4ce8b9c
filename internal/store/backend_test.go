package store

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/store/pgtest"
)

// The store's tests run on both backends: forEachBackend runs a test once on a fresh
// SQLite file and once on a fresh PostgreSQL database (internal/store/pgtest; skipped
// without the test server, failed under CI=true). Tests of what only SQLite has —
// the file's integrity check, --fresh's move-aside, the flock lease — call neither
// and say so.

// forEachBackend runs fn as the subtests "sqlite" and "postgres"; db is what Open
// takes for an empty store of that backend (a file path or a postgres:// URL), so a
// test can close and reopen it.
func forEachBackend(t *testing.T, fn func(t *testing.T, db string)) {
	t.Helper()
	t.Run("sqlite", func(t *testing.T) { fn(t, filepath.Join(t.TempDir(), "m.db")) })
	t.Run("postgres", func(t *testing.T) { fn(t, pgtest.New(t)) })
}

// openT opens db or fails the test; the store is closed at cleanup.
func openT(t testing.TB, db string) *Store {
	t.Helper()
	s, err := Open(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
