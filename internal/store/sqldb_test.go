package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestRebindDollar(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"none", `SELECT 1`, `SELECT 1`},
		{"empty", ``, ``},
		{"in order", `INSERT INTO t (a, b) VALUES (?, ?)`, `INSERT INTO t (a, b) VALUES ($1, $2)`},
		{"adjacent", `??`, `$1$2`},
		{"ten and more", strings.Repeat("?,", 11) + "?", "$1,$2,$3,$4,$5,$6,$7,$8,$9,$10,$11,$12"},
		{"in a string", `SELECT '?' , ?`, `SELECT '?' , $1`},
		{"escaped quote in a string", `SELECT 'it''s ?', ?`, `SELECT 'it''s ?', $1`},
		{"empty string", `SELECT '', ?`, `SELECT '', $1`},
		{"identifier", `SELECT "a?b" FROM t WHERE x = ?`, `SELECT "a?b" FROM t WHERE x = $1`},
		{"escaped quote in an identifier", `SELECT "a""?" , ?`, `SELECT "a""?" , $1`},
		{"line comment", "SELECT ? -- what? this?\n, ?", "SELECT $1 -- what? this?\n, $2"},
		{"line comment at the end", "SELECT ? -- ?", "SELECT $1 -- ?"},
		{"block comment", `SELECT /* ? */ ?`, `SELECT /* ? */ $1`},
		{"nested block comment", `SELECT /* a /* ? */ ? */ ?`, `SELECT /* a /* ? */ ? */ $1`},
		{"unterminated string", `SELECT ?, 'abc ?`, `SELECT $1, 'abc ?`},
		{"unterminated identifier", `SELECT ?, "abc ?`, `SELECT $1, "abc ?`},
		{"unterminated comment", `SELECT ? /* ?`, `SELECT $1 /* ?`},
		{"lone dash and slash", `SELECT 1 - ?, 4 / ?`, `SELECT 1 - $1, 4 / $2`},
		{"star slash outside a comment", `SELECT 2 */ ?`, `SELECT 2 */ $1`},
		{"multibyte text", `SELECT 'é?', ? -- ü`, `SELECT 'é?', $1 -- ü`},
		// E'...' strings: a backslash escapes the quote after it.
		{"escape string", `SELECT E'it\'s ?', ?`, `SELECT E'it\'s ?', $1`},
		{"lower-case escape string", `SELECT e'\'?', ?`, `SELECT e'\'?', $1`},
		{"escaped backslash ends before the quote", `SELECT E'a\\', ?, '?'`, `SELECT E'a\\', $1, '?'`},
		{"doubled quote in an escape string", `SELECT E'a''?', ?`, `SELECT E'a''?', $1`},
		{"unterminated escape string", `SELECT ?, E'\' ?`, `SELECT $1, E'\' ?`},
		{"word ending in e before a string", `SELECT name'?', ?`, `SELECT name'?', $1`},
		// Dollar-quoted strings.
		{"dollar string", `SELECT $$ it's ? $$, ?`, `SELECT $$ it's ? $$, $1`},
		{"tagged dollar string", `SELECT $q$ $$ ? $q$, ?`, `SELECT $q$ $$ ? $q$, $1`},
		{"unterminated dollar string", `SELECT ?, $a$ ?`, `SELECT $1, $a$ ?`},
		{"numbered parameter is no tag", `SELECT $1, ?, $2`, `SELECT $1, $1, $2`},
		{"dollar inside an identifier", `SELECT a$b$ FROM t WHERE x = ?`, `SELECT a$b$ FROM t WHERE x = $1`},
		// Collation: SQLite's BINARY is PostgreSQL's "C".
		{"collate binary", `SELECT id FROM t ORDER BY id COLLATE BINARY, n`, `SELECT id FROM t ORDER BY id COLLATE "C", n`},
		{"collate binary lower case", `ORDER BY x collate  binary LIMIT ?`, `ORDER BY x COLLATE "C" LIMIT $1`},
		{"collate binary in a string stays", `SELECT 'COLLATE BINARY', ?`, `SELECT 'COLLATE BINARY', $1`},
		{"collate nocase stays", `ORDER BY x COLLATE NOCASE`, `ORDER BY x COLLATE NOCASE`},
		{"concatenation after a placeholder", `SELECT ?||'a', ? || 'b'`, `SELECT $1||'a', $2 || 'b'`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := rebindDollar(c.in)
			if err != nil || got != c.want {
				t.Errorf("rebindDollar(%q)\n got %q, %v\nwant %q", c.in, got, err, c.want)
			}
			if got, err := dialectSQLite.rebind(c.in); got != c.in || err != nil {
				t.Errorf("SQLite must keep the query: %q, %v", got, err)
			}
		})
	}
}

// TestRebindRefusesJSONBOperators: the jsonb ? operators cannot be told from a
// placeholder; the certain forms are refused, naming the query.
func TestRebindRefusesJSONBOperators(t *testing.T) {
	for _, q := range []string{
		`SELECT 1 FROM t WHERE data ? 'key'`,
		`SELECT 1 FROM t WHERE data ?E'k'`,
		`SELECT 1 FROM t WHERE data ?| ARRAY['a','b'] AND id = ?`,
		`SELECT 1 FROM t WHERE data ?& ARRAY['a']`,
		`SELECT 1 FROM t WHERE data ?|ARRAY['a']`,
	} {
		got, err := rebindDollar(q)
		if !errors.Is(err, ErrQueryRefused) || !strings.Contains(err.Error(), q) || got != "" {
			t.Errorf("rebindDollar(%q) = %q, %v; want ErrQueryRefused naming the query", q, got, err)
		}
	}
	// Through the Store's own helper: the refused query never reaches the server.
	c := newConn(nil, dialectPostgres)
	if err := c.QueryRowContext(context.Background(), `SELECT 1 WHERE '{}'::jsonb ? 'k'`).Scan(new(int)); !errors.Is(err, ErrQueryRefused) {
		t.Errorf("QueryRowContext: %v, want ErrQueryRefused", err)
	}
	if _, err := c.ExecContext(context.Background(), `DELETE FROM t WHERE d ?& ARRAY['a']`); !errors.Is(err, ErrQueryRefused) {
		t.Errorf("ExecContext: %v, want ErrQueryRefused", err)
	}
}

func FuzzRebindDollar(f *testing.F) {
	for _, s := range []string{`SELECT ?`, `'?'?`, `"?"?`, "-- ?\n?", `/* /* ? */ */ ?`, `'it''s' ?`, `?`, `/*`, `'`, `--`,
		`E'\\'?' ?`, `$$?$$ ?`, `$q$?$q$?`, `d ? 'k'`, `x ?| y`, `ORDER BY a COLLATE BINARY`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		got, err := rebindDollar(q)
		if err != nil {
			if !errors.Is(err, ErrQueryRefused) || got != "" {
				t.Fatalf("rebindDollar(%q) = %q, %v", q, got, err)
			}
			return
		}
		if strings.Contains(q, "$") || strings.Contains(strings.ToUpper(q), "COLLATE") {
			return
		}
		// Without $ or COLLATE in the input, only placeholders change: each became $k,
		// numbered 1..n in order, and putting the ? back gives the input.
		n := strings.Count(got, "$")
		if strings.Count(got, "?")+n != strings.Count(q, "?") {
			t.Fatalf("rebindDollar(%q) = %q: %d placeholders and %d ? left, input has %d ?", q, got, n, strings.Count(got, "?"), strings.Count(q, "?"))
		}
		back := got
		for k := n; k >= 1; k-- { // highest first, so $1 does not eat $10
			if !strings.Contains(back, "$"+strconv.Itoa(k)) {
				t.Fatalf("rebindDollar(%q) = %q: no $%d", q, got, k)
			}
			back = strings.Replace(back, "$"+strconv.Itoa(k), "?", 1)
		}
		if n < 10 && back != q {
			t.Fatalf("rebindDollar(%q) = %q changed more than the placeholders", q, got)
		}
	})
}

func TestDialectArgs(t *testing.T) {
	in := []any{true, false, "x", 3}
	got := dialectPostgres.args(in)
	if got[0] != int64(1) || got[1] != int64(0) || got[2] != "x" || got[3] != 3 {
		t.Fatalf("postgres args %#v", got)
	}
	if in[0] != true {
		t.Fatal("the caller's slice was changed")
	}
	if s := dialectSQLite.args(in); s[0] != true {
		t.Fatalf("sqlite args %#v", s)
	}
}
