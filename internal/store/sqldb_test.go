package store

import (
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
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := rebindDollar(c.in); got != c.want {
				t.Errorf("rebindDollar(%q)\n got %q\nwant %q", c.in, got, c.want)
			}
			if got := dialectSQLite.rebind(c.in); got != c.in {
				t.Errorf("SQLite must keep the query: %q", got)
			}
		})
	}
}

// placeholders counts the `?` rebindDollar should replace, by a second, simpler
// reading (a state machine over the same lexical rules).
func placeholders(q string) int {
	n := 0
	const (
		code = iota
		str
		ident
		line
		block
	)
	state, depth := code, 0
	for i := 0; i < len(q); i++ {
		c := q[i]
		next := byte(0)
		if i+1 < len(q) {
			next = q[i+1]
		}
		switch state {
		case code:
			switch {
			case c == '?':
				n++
			case c == '\'':
				state = str
			case c == '"':
				state = ident
			case c == '-' && next == '-':
				state, i = line, i+1
			case c == '/' && next == '*':
				state, depth, i = block, 1, i+1
			}
		case str, ident:
			q0 := byte('\'')
			if state == ident {
				q0 = '"'
			}
			if c == q0 {
				if next == q0 {
					i++
				} else {
					state = code
				}
			}
		case line:
			if c == '\n' {
				state = code
			}
		case block:
			switch {
			case c == '/' && next == '*':
				depth, i = depth+1, i+1
			case c == '*' && next == '/':
				depth, i = depth-1, i+1
				if depth == 0 {
					state = code
				}
			}
		}
	}
	return n
}

func FuzzRebindDollar(f *testing.F) {
	for _, s := range []string{`SELECT ?`, `'?'?`, `"?"?`, "-- ?\n?", `/* /* ? */ */ ?`, `'it''s' ?`, `?`, `/*`, `'`, `--`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		got := rebindDollar(q)
		n := placeholders(q)
		// Every placeholder became $1..$n in order, and nothing else changed: putting
		// the ? back gives the input (when it had no $k of its own to confuse).
		if !strings.Contains(q, "$") {
			back := got
			for k := n; k >= 1; k-- { // highest first, so $1 does not eat $10
				back = strings.Replace(back, "$"+strconv.Itoa(k), "?", 1)
			}
			if strings.Count(got, "$") != n {
				t.Fatalf("rebindDollar(%q) = %q: %d placeholders, want %d", q, got, strings.Count(got, "$"), n)
			}
			if n < 10 && back != q {
				t.Fatalf("rebindDollar(%q) = %q changed more than the placeholders", q, got)
			}
		}
		if n == 0 && got != q {
			t.Fatalf("no placeholders, but rebindDollar(%q) = %q", q, got)
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
