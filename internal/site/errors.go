package site

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// Error is one problem in a site catalog, located by file, line and field path
// (e.g. "systems[1].partitions[0].gpus").
type Error struct {
	File  string // file name as given to Parse/Load
	Line  int    // 1-based; 0 when unknown
	Field string // dotted field path; "" for whole-file problems
	Msg   string
}

// Error renders "file:line: field: msg".
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one catalog. It is the error type Parse, Load and
// Validate return, so callers can list all problems at once.
type Errors []*Error

// Error renders one problem per line.
func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap exposes the individual problems to errors.Is/As.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// AsErrors extracts the individual catalog problems from err (nil if err is not from
// this package).
func AsErrors(err error) Errors {
	var es Errors
	if errors.As(err, &es) {
		return es
	}
	var e *Error
	if errors.As(err, &e) {
		return Errors{e}
	}
	return nil
}

// reporter collects errors and warnings against one file, resolving field paths to lines.
type reporter struct {
	file  string
	lines map[string]int
	errs  Errors
	warns []string
}

// lineOf finds the line of path, or of its nearest ancestor that has one.
func (r *reporter) lineOf(path string) int {
	for p := path; p != ""; p = parentPath(p) {
		if l, ok := r.lines[p]; ok {
			return l
		}
	}
	return 0
}

func (r *reporter) errf(path, format string, args ...any) {
	r.errs = append(r.errs, &Error{File: r.file, Line: r.lineOf(path), Field: path, Msg: fmt.Sprintf(format, args...)})
}

func (r *reporter) errAt(line int, path, format string, args ...any) {
	r.errs = append(r.errs, &Error{File: r.file, Line: line, Field: path, Msg: fmt.Sprintf(format, args...)})
}

func (r *reporter) warnf(path, format string, args ...any) {
	e := &Error{File: r.file, Line: r.lineOf(path), Field: path, Msg: fmt.Sprintf(format, args...)}
	r.warns = append(r.warns, e.Error())
}

// err returns the collected errors sorted by line (stable), or nil.
func (r *reporter) err() error {
	if len(r.errs) == 0 {
		return nil
	}
	sort.SliceStable(r.errs, func(i, j int) bool { return r.errs[i].Line < r.errs[j].Line })
	return r.errs
}

// parentPath strips the last ".field" or "[i]" from a path.
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}

// suggest returns " (did you mean "x"?)" when word is close to one of candidates.
func suggest(word string, candidates []string) string {
	w := strings.ToLower(word)
	best, bestD := "", 1<<30
	for _, c := range candidates {
		d := editDistance(w, strings.ToLower(c))
		if d < bestD {
			best, bestD = c, d
		}
	}
	limit := 2
	if len(w) <= 3 {
		limit = 1
	}
	if best != "" && bestD <= limit {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// editDistance is the Levenshtein distance, bounded to short inputs (field names).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 1 << 20
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
