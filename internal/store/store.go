// Package store is Mosaic's durable state: by default an SQLite database
// (modernc.org/sqlite, no cgo) opened in WAL mode with a busy timeout and foreign
// keys; with MOSAIC_DB=postgres://… a PostgreSQL database (pgx's database/sql
// driver). Both run the same code: queries are written once with `?` placeholders and
// rebound for PostgreSQL (sqldb.go), and the one set of embedded, numbered migrations
// is applied at open under a lock, translated for PostgreSQL (pgschema.go).
package store

import (
	"context"
	"database/sql"
	"embed"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/mosaic-hpc/mosaic/internal/config"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Store is an open database.
type Store struct {
	db   *conn
	path string // the SQLite file, or the PostgreSQL URL with its password redacted
	// movedAside is where a damaged file was moved by the Fresh option ("" if none).
	movedAside string
	fenceState // team mode's claim check (leader.go)
}

// Option changes how Open treats the database file.
type Option func(*openOptions)

type openOptions struct {
	fresh bool
	now   func() time.Time
}

// Fresh makes Open recover from a database file that fails the integrity check: the
// file (with its -wal and -shm) is moved aside as <path>.bad-<UTC time> and an empty
// store is started in its place. A healthy file is opened as usual and nothing is
// moved, so leaving --fresh on never loses history. It applies to SQLite files only:
// a PostgreSQL database is never moved aside or emptied (Open ignores the option).
func Fresh() Option { return func(o *openOptions) { o.fresh = true } }

// ErrDamaged is wrapped by the error Open returns for an empty, truncated, corrupted
// or foreign file where Mosaic's state is expected.
var ErrDamaged = errors.New("database file is empty or damaged")

// DamagedError says which file failed the integrity check, why, and what to do.
type DamagedError struct {
	Path    string
	Problem string
}

// Error implements error.
func (e *DamagedError) Error() string {
	return fmt.Sprintf("store %s: %s; Mosaic's state (tasks, attempts, events, history) is expected there, "+
		"so it was left untouched. Restore the file from a backup, or run `mosaic serve --fresh` to move it aside "+
		"as %s.bad-<time> and start with an empty store", e.Path, e.Problem, e.Path)
}

// Unwrap makes errors.Is(err, ErrDamaged) true.
func (e *DamagedError) Unwrap() error { return ErrDamaged }

// sqliteMagic opens every SQLite 3 database file (https://www.sqlite.org/fileformat.html#the_database_header).
const sqliteMagic = "SQLite format 3\x00"

// Open opens (creating if needed) the database at path and applies pending migrations.
// ":memory:" opens a private in-memory database (tests); a postgres:// or
// postgresql:// URL (IsPostgres) opens that PostgreSQL database, which must exist.
//
// An existing file is checked first: its SQLite header, then PRAGMA quick_check, then
// that it holds Mosaic's schema (or nothing). A file that fails is refused with a
// *DamagedError (never started empty over it), unless Fresh is given. A PostgreSQL
// database is checked to hold Mosaic's schema or no tables at all.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	o := openOptions{now: time.Now}
	for _, f := range opts {
		f(&o)
	}
	path, err := config.NormalizeDB(path)
	if err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	if IsPostgres(path) {
		return openPostgres(ctx, path)
	}
	if path == ":memory:" {
		db, err := openDB("file::memory:")
		if err != nil {
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
		// Every connection to :memory: is a new database; keep exactly one.
		db.SetMaxOpenConns(1)
		return finishOpen(ctx, &Store{db: newConn(db, dialectSQLite), path: path})
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("store: create directory for %s: %w", path, err)
	}
	s, err := openChecked(ctx, path)
	var de *DamagedError
	if err == nil || !errors.As(err, &de) || !o.fresh {
		return s, err
	}
	moved, merr := moveAside(path, o.now())
	if merr != nil {
		return nil, fmt.Errorf("%w; moving it aside failed: %w", err, merr)
	}
	s, err = openChecked(ctx, path)
	if err != nil {
		return nil, err
	}
	s.movedAside = moved
	return s, nil
}

// MovedAside is where Open (with Fresh) moved a damaged database file, or "".
func (s *Store) MovedAside() string { return s.movedAside }

func openDB(dsn string) (*sql.DB, error) {
	return sql.Open("sqlite", dsn+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)&_txlock=immediate")
}

// openChecked opens an existing or new database file after the integrity checks.
func openChecked(ctx context.Context, path string) (*Store, error) {
	exists, problem, err := checkHeader(path)
	if err != nil {
		return nil, err
	}
	if problem != "" {
		return nil, &DamagedError{Path: path, Problem: problem}
	}
	if exists {
		// Check on a read-only connection first: the normal one switches the file to
		// WAL mode, which would already write to a file that is not ours.
		ro, err := sql.Open("sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)")
		if err != nil {
			return nil, fmt.Errorf("store: open %s: %w", path, err)
		}
		problem := check(ctx, ro)
		ro.Close()
		if problem != "" {
			return nil, &DamagedError{Path: path, Problem: problem}
		}
	}
	db, err := openDB("file:" + path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	return finishOpen(ctx, &Store{db: newConn(db, dialectSQLite), path: path})
}

func finishOpen(ctx context.Context, s *Store) (*Store, error) {
	if err := s.migrate(ctx); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

// checkHeader reads the first 100 bytes of an existing file: a 0-byte file, one
// shorter than the header, one without the SQLite magic, or one whose size does not
// fit its page size is damaged. exists is false when there is no file yet.
func checkHeader(path string) (exists bool, problem string, err error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, "", nil
	}
	if err != nil {
		return false, "", fmt.Errorf("store %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return true, "is not a regular file", nil
	}
	if fi.Size() == 0 {
		return true, "is an empty file (0 bytes)", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return true, "", fmt.Errorf("store %s: %w", path, err)
	}
	defer f.Close()
	var h [100]byte
	n, err := io.ReadFull(f, h[:])
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return true, "", fmt.Errorf("store %s: read header: %w", path, err)
	}
	if m := min(n, len(sqliteMagic)); string(h[:m]) != sqliteMagic[:m] {
		return true, "is not an SQLite database (its first bytes are not the SQLite header)", nil
	}
	if n < len(h) {
		return true, fmt.Sprintf("is truncated (%d bytes, shorter than an SQLite header)", n), nil
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	if pageSize < 512 || pageSize > 65536 || pageSize&(pageSize-1) != 0 {
		return true, fmt.Sprintf("has a damaged header (page size %d)", pageSize), nil
	}
	if wal, err := os.Stat(path + "-wal"); err == nil && wal.Size() > 0 {
		// An interrupted checkpoint may leave the file shorter than its header says;
		// SQLite finishes it from the WAL. quick_check judges the result.
		return true, "", nil
	}
	if fi.Size()%pageSize != 0 {
		return true, fmt.Sprintf("is truncated (%d bytes is not a whole number of %d-byte pages)", fi.Size(), pageSize), nil
	}
	// The page count in the header is valid when its version-valid-for number
	// matches the change counter (file format, offsets 24, 28 and 92).
	if pages := int64(binary.BigEndian.Uint32(h[28:32])); pages > 0 &&
		binary.BigEndian.Uint32(h[92:96]) == binary.BigEndian.Uint32(h[24:28]) && fi.Size() < pages*pageSize {
		return true, fmt.Sprintf("is truncated (%d bytes; its header says %d pages of %d bytes)", fi.Size(), pages, pageSize), nil
	}
	return true, "", nil
}

// check runs PRAGMA quick_check (page and b-tree structure; see docs/PERFORMANCE.md
// for its cost) and makes sure the file holds Mosaic's schema or nothing at all.
func check(ctx context.Context, db *sql.DB) string {
	rows, err := db.QueryContext(ctx, `PRAGMA quick_check(5)`)
	if err != nil {
		return "fails SQLite's integrity check: " + err.Error()
	}
	var msgs []string
	for rows.Next() {
		var m string
		if err := rows.Scan(&m); err != nil {
			rows.Close()
			return "fails SQLite's integrity check: " + err.Error()
		}
		msgs = append(msgs, m)
	}
	err = rows.Err()
	rows.Close()
	if err != nil {
		return "fails SQLite's integrity check: " + err.Error()
	}
	if len(msgs) != 1 || msgs[0] != "ok" {
		return "fails SQLite's integrity check: " + strings.Join(msgs, "; ")
	}
	var tables, ours int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(CASE WHEN name = 'schema_migrations' THEN 1 END)
		FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).Scan(&tables, &ours); err != nil {
		return "cannot be read: " + err.Error()
	}
	if tables > 0 && ours == 0 {
		return fmt.Sprintf("is an SQLite database of another program (%d tables, none of them Mosaic's)", tables)
	}
	return ""
}

// moveAside renames path and its -wal and -shm files to <path>.bad-<UTC time>[-N]
// (keeping SQLite's sidecar names, so the moved file still opens with its journal).
func moveAside(path string, now time.Time) (string, error) {
	base := path + ".bad-" + now.UTC().Format("20060102T150405Z")
	dst := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if i > 1000 {
			return "", fmt.Errorf("store: too many %s files", base)
		}
		dst = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(path, dst); err != nil {
		return "", fmt.Errorf("store: move %s aside: %w", path, err)
	}
	for _, side := range []string{"-wal", "-shm", "-journal"} {
		if _, err := os.Lstat(path + side); err == nil {
			if err := os.Rename(path+side, dst+side); err != nil {
				return dst, fmt.Errorf("store: move %s aside: %w", path+side, err)
			}
		}
	}
	return dst, nil
}

// Path is the database file ("" or ":memory:" for in-memory), or for PostgreSQL its
// URL with the password redacted (safe to show).
func (s *Store) Path() string { return s.path }

// Backend is "sqlite" or "postgres".
func (s *Store) Backend() string { return s.db.d.String() }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// SchemaVersion returns the highest applied migration.
func (s *Store) SchemaVersion(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version),0) FROM schema_migrations`).Scan(&v)
	return v, err
}

// migrationsTable records the applied migrations (created before any of them).
const migrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL DEFAULT (datetime('now')))`

type migration struct {
	v    int
	name string // the embedded file's path
}

// migrationFiles lists the embedded migrations in version order.
func migrationFiles() ([]migration, error) {
	files, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, f := range files {
		base := filepath.Base(f)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("store: migration %s: name must start with a number and '_'", base)
		}
		ms = append(ms, migration{v, f})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].v < ms[j].v })
	return ms, nil
}

// ddl is a migration's text in the store's dialect.
func (s *Store) ddl(q string) (string, error) {
	if s.db.d == dialectPostgres {
		return translateForPostgres(q)
	}
	return q, nil
}

// migrationTx runs fn in a transaction that holds the migration lock: on PostgreSQL
// pg_advisory_xact_lock (released at commit or rollback), so replicas starting at
// once apply each migration once; on SQLite the transaction itself (BEGIN IMMEDIATE
// takes the write lock).
func (s *Store) migrationTx(ctx context.Context, what string, fn func(*txn) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store %s: begin %s: %w", s.path, what, err)
	}
	if s.db.d == dialectPostgres {
		if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(?)`, pgMigrateLockKey); err != nil {
			tx.Rollback()
			return fmt.Errorf("store %s: take the migration lock: %w", s.path, err)
		}
	}
	if err := fn(tx); err != nil {
		tx.Rollback()
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store %s: commit %s: %w", s.path, what, err)
	}
	return nil
}

func (s *Store) migrate(ctx context.Context) error {
	if err := s.migrationTx(ctx, "the migrations table", func(tx *txn) error {
		ddl, err := s.ddl(migrationsTable)
		if err != nil {
			return fmt.Errorf("store %s: migrations table: %w", s.path, err)
		}
		if _, err := tx.tx.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("store %s: create migrations table: %w", s.path, err)
		}
		return nil
	}); err != nil {
		return err
	}
	ms, err := migrationFiles()
	if err != nil {
		return err
	}
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
		base := filepath.Base(m.name)
		if err := s.migrationTx(ctx, "migration "+base, func(tx *txn) error {
			// Under the lock, look again: another process may have applied it meanwhile.
			var v int
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version),0) FROM schema_migrations`).Scan(&v); err != nil {
				return fmt.Errorf("store %s: read schema version: %w", s.path, err)
			}
			if v >= m.v {
				return nil
			}
			// No arguments: pgx sends it with the simple protocol, which runs a file of
			// several statements in one call (as SQLite's Exec does).
			ddl, err := s.ddl(string(body))
			if err != nil {
				return fmt.Errorf("store %s: migration %s: %w", s.path, base, err)
			}
			if _, err := tx.tx.ExecContext(ctx, ddl); err != nil {
				return fmt.Errorf("store %s: apply migration %s: %w", s.path, base, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations(version, name) VALUES (?, ?)`, m.v, base); err != nil {
				return fmt.Errorf("store %s: record migration %s: %w", s.path, base, err)
			}
			return nil
		}); err != nil {
			return err
		}
	}
	return nil
}

// ErrNotFound is returned when a requested row does not exist.
var ErrNotFound = errors.New("not found")
