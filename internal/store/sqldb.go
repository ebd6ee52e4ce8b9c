package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrDuplicate is wrapped by the error of a write refused by a UNIQUE or PRIMARY KEY
// constraint (on either backend): e.g. CreateAttempt with a tag that exists.
var ErrDuplicate = errors.New("already exists")

// isUniqueViolation reports whether err is a unique/primary key violation of
// SQLite (SQLITE_CONSTRAINT_UNIQUE, _PRIMARYKEY) or PostgreSQL (SQLSTATE 23505).
func isUniqueViolation(err error) bool {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
	}
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}

// dialect is the SQL database behind a Store. Every query in this package is written
// once, in SQLite's spelling with `?` placeholders; conn and txn (the only way the
// Store reaches its database) rebind the placeholders for PostgreSQL.
type dialect int

const (
	dialectSQLite dialect = iota
	dialectPostgres
)

func (d dialect) String() string {
	if d == dialectPostgres {
		return "postgres"
	}
	return "sqlite"
}

// querier is what conn and txn have in common: code that runs both inside and
// outside a transaction takes one.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// conn is the Store's database: *sql.DB with the dialect's placeholders and argument
// types. Write queries with `?`; ids of inserted rows come back with `RETURNING id`
// (both databases have it; PostgreSQL has no LastInsertId), and upserts are written
// `INSERT ... ON CONFLICT (...) DO UPDATE/NOTHING` (both have it) rather than
// SQLite's `INSERT OR REPLACE/IGNORE`.
type conn struct {
	db *sql.DB
	d  dialect
}

var (
	_ querier = (*conn)(nil)
	_ querier = (*txn)(nil)
)

func (c *conn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return c.db.ExecContext(ctx, c.d.rebind(q), c.d.args(args)...)
}

func (c *conn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return c.db.QueryContext(ctx, c.d.rebind(q), c.d.args(args)...)
}

func (c *conn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return c.db.QueryRowContext(ctx, c.d.rebind(q), c.d.args(args)...)
}

// BeginTx starts a transaction (on SQLite an immediate one: the driver is opened with
// _txlock=immediate, so the write lock is taken at BEGIN).
func (c *conn) BeginTx(ctx context.Context, opts *sql.TxOptions) (*txn, error) {
	tx, err := c.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &txn{tx: tx, d: c.d}, nil
}

// Close closes the pool.
func (c *conn) Close() error { return c.db.Close() }

// txn is a transaction of a conn, rebinding like it.
type txn struct {
	tx *sql.Tx
	d  dialect
}

func (t *txn) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return t.tx.ExecContext(ctx, t.d.rebind(q), t.d.args(args)...)
}

func (t *txn) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return t.tx.QueryContext(ctx, t.d.rebind(q), t.d.args(args)...)
}

func (t *txn) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return t.tx.QueryRowContext(ctx, t.d.rebind(q), t.d.args(args)...)
}

// PrepareContext prepares a statement; its Exec/Query take arguments through stmt.
func (t *txn) PrepareContext(ctx context.Context, q string) (*stmt, error) {
	st, err := t.tx.PrepareContext(ctx, t.d.rebind(q))
	if err != nil {
		return nil, err
	}
	return &stmt{st: st, d: t.d}, nil
}

// Commit commits the transaction.
func (t *txn) Commit() error { return t.tx.Commit() }

// Rollback aborts the transaction (an error after Commit is ignored by callers).
func (t *txn) Rollback() error { return t.tx.Rollback() }

// stmt is a prepared statement of a txn.
type stmt struct {
	st *sql.Stmt
	d  dialect
}

func (s *stmt) ExecContext(ctx context.Context, args ...any) (sql.Result, error) {
	return s.st.ExecContext(ctx, s.d.args(args)...)
}

func (s *stmt) Close() error { return s.st.Close() }

// args converts arguments the PostgreSQL driver would not put in the column types
// the migrations declare: a Go bool stored in an INTEGER (BIGINT) flag column is 0/1,
// as SQLite's driver stores it.
func (d dialect) args(args []any) []any {
	if d != dialectPostgres {
		return args
	}
	var out []any
	for i, a := range args {
		b, ok := a.(bool)
		if !ok {
			continue
		}
		if out == nil {
			out = append([]any(nil), args...)
		}
		if b {
			out[i] = int64(1)
		} else {
			out[i] = int64(0)
		}
	}
	if out == nil {
		return args
	}
	return out
}

// rebind rewrites `?` placeholders to PostgreSQL's `$1..$n` (unchanged for SQLite).
func (d dialect) rebind(q string) string {
	if d != dialectPostgres {
		return q
	}
	return rebindDollar(q)
}

// rebindDollar replaces every `?` that is a placeholder with $1, $2, ... in order. A
// `?` inside a '...' string (a doubled quote escapes one), a "..." identifier, a -- comment to the
// end of the line or a /* */ comment (PostgreSQL's nest) is text and stays. An
// unterminated string or comment runs to the end of the query, as the server reads it.
func rebindDollar(q string) string {
	if !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	for i := 0; i < len(q); {
		if j, ok := skipText(q, i); ok {
			b.WriteString(q[i:j])
			i = j
			continue
		}
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
		} else {
			b.WriteByte(q[i])
		}
		i++
	}
	return b.String()
}

// skipText reports whether a string, a quoted identifier or a comment starts at q[i]
// (SQL text that is not code: no placeholder or keyword in it counts) and returns the
// index just past it. One lexer for the rebinder and the migration translator.
func skipText(q string, i int) (int, bool) {
	switch c := q[i]; {
	case c == '\'' || c == '"':
		return skipQuoted(q, i), true
	case c == '-' && i+1 < len(q) && q[i+1] == '-':
		if j := strings.IndexByte(q[i:], '\n'); j >= 0 {
			return i + j, true
		}
		return len(q), true
	case c == '/' && i+1 < len(q) && q[i+1] == '*':
		return skipBlockComment(q, i), true
	}
	return i, false
}

// skipQuoted returns the index just past the quoted run starting at q[i] (its quote
// character doubled inside is an escaped quote), or len(q) if it is not closed.
func skipQuoted(q string, i int) int {
	quote := q[i]
	for j := i + 1; j < len(q); j++ {
		if q[j] != quote {
			continue
		}
		if j+1 < len(q) && q[j+1] == quote {
			j++
			continue
		}
		return j + 1
	}
	return len(q)
}

// skipBlockComment returns the index just past the /* */ comment starting at q[i]
// (nested comments count, as in PostgreSQL), or len(q) if it is not closed.
func skipBlockComment(q string, i int) int {
	depth := 0
	for j := i; j+1 < len(q); {
		switch {
		case q[j] == '/' && q[j+1] == '*':
			depth++
			j += 2
		case q[j] == '*' && q[j+1] == '/':
			depth--
			j += 2
			if depth == 0 {
				return j
			}
		default:
			j++
		}
	}
	return len(q)
}
