package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

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
	QueryRowContext(ctx context.Context, query string, args ...any) *row
}

// conn is the Store's database: *sql.DB with the dialect's placeholders and argument
// types. Write queries with `?`; ids of inserted rows come back with `RETURNING id`
// (both databases have it; PostgreSQL has no LastInsertId), and upserts are written
// `INSERT ... ON CONFLICT (...) DO UPDATE/NOTHING` (both have it) rather than
// SQLite's `INSERT OR REPLACE/IGNORE`.
type conn struct {
	bound
	db *sql.DB
}

func newConn(db *sql.DB, d dialect) *conn { return &conn{bound: bound{r: db, d: d}, db: db} }

var (
	_ querier = (*conn)(nil)
	_ querier = (*txn)(nil)
)

// runner is what *sql.DB and *sql.Tx have in common.
type runner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// bound runs queries on a runner in the dialect: the query rebound (or refused), the
// arguments converted. conn and txn are one each.
type bound struct {
	r runner
	d dialect
}

func (b bound) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	rq, err := b.d.rebind(q)
	if err != nil {
		return nil, err
	}
	return b.r.ExecContext(ctx, rq, b.d.args(args)...)
}

func (b bound) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	rq, err := b.d.rebind(q)
	if err != nil {
		return nil, err
	}
	return b.r.QueryContext(ctx, rq, b.d.args(args)...)
}

func (b bound) QueryRowContext(ctx context.Context, q string, args ...any) *row {
	rq, err := b.d.rebind(q)
	if err != nil {
		return &row{err: err}
	}
	return &row{Row: b.r.QueryRowContext(ctx, rq, b.d.args(args)...)}
}

// row is *sql.Row, or the error of a query the dialect refused before sending it.
type row struct {
	*sql.Row
	err error
}

// Scan is sql.Row's Scan, or the refusal.
func (r *row) Scan(dest ...any) error {
	if r.err != nil {
		return r.err
	}
	return r.Row.Scan(dest...)
}

// Err is sql.Row's Err, or the refusal.
func (r *row) Err() error {
	if r.err != nil {
		return r.err
	}
	return r.Row.Err()
}

// BeginTx starts a transaction (on SQLite an immediate one: the driver is opened with
// _txlock=immediate, so the write lock is taken at BEGIN).
func (c *conn) BeginTx(ctx context.Context, opts *sql.TxOptions) (*txn, error) {
	tx, err := c.db.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &txn{bound: bound{r: tx, d: c.d}, tx: tx}, nil
}

// Close closes the pool.
func (c *conn) Close() error { return c.db.Close() }

// txn is a transaction of a conn, rebinding like it.
type txn struct {
	bound
	tx *sql.Tx
}

// PrepareContext prepares a statement; its Exec/Query take arguments through stmt.
func (t *txn) PrepareContext(ctx context.Context, q string) (*stmt, error) {
	rq, err := t.d.rebind(q)
	if err != nil {
		return nil, err
	}
	st, err := t.tx.PrepareContext(ctx, rq)
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

// args converts arguments for the database, on both backends alike (so that what one
// stores the other stores too):
//   - a string (text from ssh or sbatch stderr, a site's error, an event message) is
//     made valid UTF-8 (each invalid byte run becomes U+FFFD) without NUL bytes (each
//     becomes U+FFFD): PostgreSQL refuses both in text, where SQLite would store them;
//   - on PostgreSQL a Go bool stored in an INTEGER (BIGINT) flag column is 0/1, as
//     SQLite's driver stores it.
//
// The caller's slice is never changed.
func (d dialect) args(args []any) []any {
	var out []any
	set := func(i int, v any) {
		if out == nil {
			out = append([]any(nil), args...)
		}
		out[i] = v
	}
	for i, a := range args {
		switch v := a.(type) {
		case string:
			if s := cleanText(v); s != v {
				set(i, s)
			}
		case bool:
			if d != dialectPostgres {
				continue
			}
			if v {
				set(i, int64(1))
			} else {
				set(i, int64(0))
			}
		}
	}
	if out == nil {
		return args
	}
	return out
}

// cleanText is s as valid UTF-8 without NUL bytes (both become U+FFFD).
func cleanText(s string) string {
	if utf8.ValidString(s) && strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}

// rebind rewrites a query for the dialect: unchanged for SQLite; for PostgreSQL `?`
// placeholders become `$1..$n` and `COLLATE BINARY` (SQLite's default collation,
// written on text ORDER BY keys) becomes `COLLATE "C"`, so text sorts by bytes on
// both, whatever the database's own collation. A query that uses a jsonb `?`
// operator is refused (ErrQueryRefused): store SQL must not use them.
func (d dialect) rebind(q string) (string, error) {
	if d != dialectPostgres {
		return q, nil
	}
	return rebindDollar(q)
}

// ErrQueryRefused is wrapped by the error of a query the PostgreSQL rebinder will not
// send (a bug in the store's SQL, never in its data).
var ErrQueryRefused = errors.New("query refused by the store's SQL rebinder")

// rebindDollar replaces every `?` that is a placeholder with $1, $2, ... in order, and
// `COLLATE BINARY` with `COLLATE "C"`. A `?` inside a '...' string (a doubled quote
// escapes one), an E'...' string (a backslash escapes too), a $$...$$ or $tag$...$tag$
// string, a "..." identifier, a -- comment to the end of the line or a /* */ comment
// (PostgreSQL's nest) is text and stays. An unterminated string or comment runs to
// the end of the query, as the server reads it.
//
// PostgreSQL's jsonb operators `?`, `?|` and `?&` cannot be told from a placeholder in
// general; the forms that are certainly operators — `?|`/`?&` (not `?||`), and a `?`
// followed by a string literal — are refused with an error naming the query. Store
// SQL must not use them (write jsonb_exists, jsonb_exists_any, jsonb_exists_all).
func rebindDollar(q string) (string, error) {
	if !strings.Contains(q, "?") && !strings.Contains(strings.ToUpper(q), "COLLATE") {
		return q, nil
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
		c := q[i]
		switch {
		case c == '?':
			if jsonbOperator(q, i) {
				return "", fmt.Errorf("%w: %q uses a jsonb ? operator at byte %d, which cannot be told from a placeholder; "+
					"write jsonb_exists/jsonb_exists_any/jsonb_exists_all instead", ErrQueryRefused, q, i)
			}
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			i++
		case isWordByte(c) && (i == 0 || !isWordByte(q[i-1]) && q[i-1] != '$'):
			j := wordEnd(q, i)
			if strings.EqualFold(q[i:j], "COLLATE") {
				if k, ok := matchWords(q, j, "BINARY"); ok {
					b.WriteString(`COLLATE "C"`)
					i = k
					continue
				}
			}
			b.WriteString(q[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}

// jsonbOperator reports whether the `?` at q[i] is certainly a jsonb operator: `?|` or
// `?&` (but `?||` is a placeholder and a concatenation), or a `?` whose next token is
// a string literal (`data ? 'key'`: a placeholder is never followed by one).
func jsonbOperator(q string, i int) bool {
	if i+1 < len(q) && (q[i+1] == '&' || q[i+1] == '|' && (i+2 >= len(q) || q[i+2] != '|')) {
		return true
	}
	k := skipSpace(q, i+1)
	if k < len(q) && q[k] == '\'' {
		return true
	}
	if k+1 < len(q) && (q[k] == 'E' || q[k] == 'e') && q[k+1] == '\'' {
		return true
	}
	return false
}

// skipText reports whether a string, a quoted identifier or a comment starts at q[i]
// (SQL text that is not code: no placeholder or keyword in it counts) and returns the
// index just past it. One lexer for the rebinder and the migration translator.
func skipText(q string, i int) (int, bool) {
	wordBefore := i > 0 && (isWordByte(q[i-1]) || q[i-1] == '$')
	switch c := q[i]; {
	case c == '\'' || c == '"':
		return skipQuoted(q, i), true
	case (c == 'E' || c == 'e') && !wordBefore && i+1 < len(q) && q[i+1] == '\'':
		return skipEscapeString(q, i+1), true
	case c == '$' && !wordBefore:
		if tag, ok := dollarTag(q, i); ok {
			if j := strings.Index(q[i+len(tag):], tag); j >= 0 {
				return i + len(tag) + j + len(tag), true
			}
			return len(q), true
		}
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

// dollarTag returns the opening `$tag$` of a dollar-quoted string at q[i]: `$$`, or `$`
// and an identifier (a letter or _ first, then letters, digits, _; never a digit
// first, so `$1` is a parameter) and `$`.
func dollarTag(q string, i int) (string, bool) {
	j := i + 1
	if j < len(q) && q[j] >= '0' && q[j] <= '9' {
		return "", false
	}
	for j < len(q) && isWordByte(q[j]) {
		j++
	}
	if j < len(q) && q[j] == '$' {
		return q[i : j+1], true
	}
	return "", false
}

// skipEscapeString returns the index just past the E'...' string whose quote is at
// q[i]: a backslash escapes the next byte, a doubled quote is a quote; len(q) if it is
// not closed.
func skipEscapeString(q string, i int) int {
	for j := i + 1; j < len(q); j++ {
		switch q[j] {
		case '\\':
			j++
		case '\'':
			if j+1 < len(q) && q[j+1] == '\'' {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(q)
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
