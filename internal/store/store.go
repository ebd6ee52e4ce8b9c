// Package store is Mosaic's durable state: an SQLite database (modernc.org/sqlite, no
// cgo) opened in WAL mode with a busy timeout and foreign keys, its schema applied from
// embedded, numbered migrations at open.
package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is an open database.
type Store struct {
	db   *sql.DB
	path string
}

// Open opens (creating if needed) the database at path and applies pending migrations.
// ":memory:" opens a private in-memory database (tests).
func Open(ctx context.Context, path string) (*Store, error) {
	dsn := path
	if path != ":memory:" {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, fmt.Errorf("store: create directory for %s: %w", path, err)
		}
		dsn = "file:" + path
	} else {
		dsn = "file::memory:"
	}
	dsn += "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	if path == ":memory:" {
		// Every connection to :memory: is a new database; keep exactly one.
		db.SetMaxOpenConns(1)
	}
	s := &Store{db: db, path: path}
	if err := s.migrate(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

// Path is the database file ("" or ":memory:" for in-memory).
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// SchemaVersion returns the highest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version),0) FROM schema_migrations`).Scan(&v)
	return v, err
}

func (s *Store) migrate(ctx context.Context) error {
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (datetime('now')))`); err != nil {
		return fmt.Errorf("store %s: create migrations table: %w", s.path, err)
	}
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	type mig struct {
		v    int
		name string
	}
	var ms []mig
	for _, f := range files {
		base := filepath.Base(f)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return fmt.Errorf("store: migration %s: name must start with a number and '_'", base)
		}
		ms = append(ms, mig{v, f})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].v < ms[j].v })
	current, err := s.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("store %s: read schema version: %w", s.path, err)
	}
	if n := len(ms); n > 0 && current > ms[n-1].v {
		return fmt.Errorf("store %s: schema version %d is newer than this binary knows (%d); use a newer mosaic or another MOSAIC_DB", s.path, current, ms[n-1].v)
	}
	for _, m := range ms {
		if m.v <= current {
			continue
		}
		body, err := migrations.ReadFile(m.name)
		if err != nil {
			return err
		}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("store %s: begin migration %d: %w", s.path, m.v, err)
		}
		if _, err := tx.ExecContext(ctx, string(body)); err != nil {
			tx.Rollback()
			return fmt.Errorf("store %s: apply migration %s: %w", s.path, filepath.Base(m.name), err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, name) VALUES (?, ?)`, m.v, filepath.Base(m.name)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("store %s: commit migration %d: %w", s.path, m.v, err)
		}
	}
	return nil
}

// ErrNotFound is returned when a requested row does not exist.
var ErrNotFound = errors.New("not found")
