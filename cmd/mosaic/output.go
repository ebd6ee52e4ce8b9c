package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"reflect"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/itchyny/gojq"
	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/term"
)

// jsonFlag is gh-style --json and --jq, one implementation for every command that
// prints data. --json alone prints every field; --json=a,b keeps only those fields
// (of the object, or of each element of a list), and a field may be a path into
// nested objects (--json=decision.chosen,state: {"decision":{"chosen":…},"state":…};
// through a list it applies to each element: attempts.system). --jq EXPR filters the
// JSON (after --json's selection) with a jq expression (gojq): strings print raw,
// other values as compact JSON, one per line, like `jq -rc`. --jq implies --json.
//
// A command that declares what it prints (addJSONFlag's prints) has its field list
// checked when the flag is parsed, before the command does anything: a typo in
// --json=… must not fail after a task was submitted (a retry would submit it twice).
// The --jq expression is compiled at parse time for the same reason.
type jsonFlag struct {
	set    bool
	fields []string
	// prints are the types the command may print; empty = not checked up front.
	prints []reflect.Type
	jq     string
	code   *gojq.Code
	// ctx bounds a jq program's run (the command's context once it runs).
	ctx context.Context
}

// addJSONFlag adds --json and --jq to cmd. prints are samples of what the command
// prints (a struct, a pointer to one or a slice of them); with them an unknown
// field is an error at flag parsing, before any side effect.
func addJSONFlag(cmd *cobra.Command, j *jsonFlag, prints ...any) {
	for _, p := range prints {
		j.prints = append(j.prints, reflect.TypeOf(p))
	}
	cmd.Flags().Var((*jsonValue)(j), "json", "print JSON; --json=field1,field2 keeps only those fields (paths such as decision.chosen allowed)")
	cmd.Flags().Lookup("json").NoOptDefVal = "*"
	cmd.Flags().Var((*jqValue)(j), "jq", "filter the JSON with a jq expression, e.g. --jq '.[].id' (implies --json)")
	_ = cmd.RegisterFlagCompletionFunc("json", func(_ *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		return completeJSONFields(j.prints, toComplete), cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
	_ = cmd.RegisterFlagCompletionFunc("jq", cobra.NoFileCompletions)
	// The jq program runs under the command's context (Ctrl-C stops a runaway one).
	prev := cmd.PreRunE
	cmd.PreRunE = func(c *cobra.Command, args []string) error {
		j.ctx = c.Context()
		if prev != nil {
			return prev(c, args)
		}
		return nil
	}
}

type jsonValue jsonFlag

func (v *jsonValue) String() string { return strings.Join(v.fields, ",") }
func (v *jsonValue) Type() string   { return "fields" }
func (v *jsonValue) Set(s string) error {
	v.set = true
	v.fields = nil
	if s == "*" || s == "" {
		return nil
	}
	v.fields = model.SplitList(s)
	for _, f := range v.fields {
		if err := checkPathSyntax(f); err != nil {
			return err
		}
	}
	if len(v.prints) == 0 {
		return nil
	}
	// At parse time the command may print any of its types: a field is known when
	// one of them has it; checkFor narrows to the type actually printed.
	for _, f := range v.fields {
		var firstErr error
		ok := false
		for _, t := range v.prints {
			err := checkPath(t, f)
			if err == nil {
				ok = true
				break
			}
			if firstErr == nil {
				firstErr = err
			}
		}
		if !ok {
			return firstErr
		}
	}
	return nil
}

type jqValue jsonFlag

func (v *jqValue) String() string { return v.jq }
func (v *jqValue) Type() string   { return "expression" }
func (v *jqValue) Set(s string) error {
	code, err := compileJQ(s)
	if err != nil {
		return err
	}
	v.set, v.jq, v.code = true, s, code
	return nil
}

// compileJQ parses and compiles a jq expression; $ENV and env are the process's
// (the CLI runs as the user), input/inputs have no further input.
func compileJQ(s string) (*gojq.Code, error) {
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty jq expression (try --jq . for everything)")
	}
	q, err := gojq.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("jq expression %q: %w", s, err)
	}
	code, err := gojq.Compile(q)
	if err != nil {
		return nil, fmt.Errorf("jq expression %q: %w", s, err)
	}
	return code, nil
}

// checkFor checks the selected fields against the type the command is about to
// print; call it before any side effect when a command prints one of several types.
func (j *jsonFlag) checkFor(sample any) error {
	if !j.set || len(j.fields) == 0 {
		return nil
	}
	for _, f := range j.fields {
		if err := checkPath(reflect.TypeOf(sample), f); err != nil {
			return fmt.Errorf("--json: %w", err)
		}
	}
	return nil
}

// checkPathSyntax refuses an empty segment ("a..b", ".a", "a.").
func checkPathSyntax(path string) error {
	for seg := range strings.SplitSeq(path, ".") {
		if seg == "" {
			return fmt.Errorf("JSON field path %q has an empty segment; write a.b.c", path)
		}
	}
	return nil
}

// checkPath checks a dotted field path against the JSON that encoding/json writes
// for t, as far as the type tells (a map, an interface or a custom marshaler ends
// the check: anything below it is accepted and printed as null when absent).
func checkPath(t reflect.Type, path string) error {
	segs := strings.Split(path, ".")
	for i, seg := range segs {
		names, ok := jsonFieldsOf(t)
		if !ok {
			return nil
		}
		ft, found := names[seg]
		if !found {
			where := ""
			if i > 0 {
				where = " under " + strings.Join(segs[:i], ".")
			}
			return fmt.Errorf("unknown JSON field %q; available%s: %s", path, where, strings.Join(sortedKeys(names), ", "))
		}
		t = ft
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

var jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

// jsonFieldsOf lists the JSON object keys encoding/json writes for t (of each
// element for a slice), each with its Go type. ok is false when they cannot be
// known from the type (a map, a custom marshaler, an interface, a scalar).
func jsonFieldsOf(t reflect.Type) (map[string]reflect.Type, bool) {
	if t == nil {
		return nil, false
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return nil, false
	}
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				sub, ok := jsonFieldsOf(ft)
				if !ok {
					return nil, false
				}
				for n, st := range sub {
					out[n] = st
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out, true
}

// jsonPaths lists the field paths of t, nested to depth levels, for completion.
func jsonPaths(t reflect.Type, depth int) []string {
	names, ok := jsonFieldsOf(t)
	if !ok {
		return nil
	}
	var out []string
	for _, n := range sortedKeys(names) {
		out = append(out, n)
		if depth > 1 {
			for _, sub := range jsonPaths(names[n], depth-1) {
				out = append(out, n+"."+sub)
			}
		}
	}
	return out
}

// completeJSONFields completes the last item of a --json=a,b,… list with the
// field paths of the printed types.
func completeJSONFields(prints []reflect.Type, toComplete string) []string {
	done, last := "", toComplete
	if i := strings.LastIndex(toComplete, ","); i >= 0 {
		done, last = toComplete[:i+1], toComplete[i+1:]
	}
	seen := map[string]bool{}
	var out []string
	for _, t := range prints {
		for _, p := range jsonPaths(t, 2) {
			if strings.HasPrefix(p, last) && !seen[p] {
				seen[p] = true
				out = append(out, done+p)
			}
		}
	}
	return out
}

// print writes v as indented JSON, keeping only the selected fields, then through
// the jq program when there is one. An unknown field is an error listing the
// available ones; a known field that v leaves out (omitempty) is printed as null.
func (j *jsonFlag) print(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var out any = json.RawMessage(b)
	if len(j.fields) > 0 || j.code != nil {
		generic, err := decodeJSON(b)
		if err != nil {
			return err
		}
		if len(j.fields) > 0 {
			if generic, err = selectFields(generic, j.fields, reflect.TypeOf(v)); err != nil {
				return err
			}
		}
		if j.code != nil {
			return j.runJQ(w, generic)
		}
		out = generic
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// decodeJSON reads JSON keeping numbers exact (nanosecond times exceed float64).
func decodeJSON(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// maxJQOutputs bounds what one jq program may print (`range(1e12)` would not end).
const maxJQOutputs = 1_000_000

// runJQ prints what the jq program yields for v: strings raw, others compact JSON.
func (j *jsonFlag) runJQ(w io.Writer, v any) error {
	ctx := j.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	iter := j.code.RunWithContext(ctx, v)
	for n := 0; ; n++ {
		if n >= maxJQOutputs {
			return fmt.Errorf("--jq %q: stopped after %d results", j.jq, maxJQOutputs)
		}
		r, ok := iter.Next()
		if !ok {
			return nil
		}
		if err, isErr := r.(error); isErr {
			var halt *gojq.HaltError
			if errors.As(err, &halt) && halt.Value() == nil {
				return nil // halt: stop without an error
			}
			return fmt.Errorf("--jq %q: %w", j.jq, err)
		}
		if s, isStr := r.(string); isStr {
			if _, err := fmt.Fprintln(w, s); err != nil {
				return err
			}
			continue
		}
		b, err := gojq.Marshal(r)
		if err != nil {
			return fmt.Errorf("--jq %q: %w", j.jq, err)
		}
		if _, err := fmt.Fprintf(w, "%s\n", b); err != nil {
			return err
		}
	}
}

// selectFields keeps only the given field paths of v (an object, or each element of
// a list). t is v's Go type: a path the type declares but v leaves out is null.
func selectFields(v any, fields []string, t reflect.Type) (any, error) {
	if l, ok := v.([]any); ok {
		out := make([]any, 0, len(l))
		for _, e := range l {
			s, err := selectFields(e, fields, t)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	if v == nil {
		return nil, nil
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, fmt.Errorf("--json fields apply to objects, not %s", jsonKind(v))
	}
	out := map[string]any{}
	for _, f := range fields {
		if err := selectPath(out, v, strings.Split(f, "."), f, t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// selectPath copies the value at segs of src into dst (building the objects on the
// way). Through a list the rest of the path applies to each element.
func selectPath(dst map[string]any, src any, segs []string, full string, t reflect.Type) error {
	m, ok := src.(map[string]any)
	if !ok {
		return fmt.Errorf("--json field %q: %s is %s, not an object", full, strings.TrimSuffix(full, "."+strings.Join(segs, ".")), jsonKind(src))
	}
	seg := segs[0]
	var ft reflect.Type
	names, typed := jsonFieldsOf(t)
	if typed {
		ft = names[seg]
	}
	val, present := m[seg]
	if !present {
		if typed && ft == nil {
			return fmt.Errorf("unknown JSON field %q; available: %s", full, strings.Join(sortedKeys(m), ", "))
		}
		if !typed && t != nil && len(segs) == len(strings.Split(full, ".")) {
			// The top level of a value whose type says nothing: only what it has.
			return fmt.Errorf("unknown JSON field %q; available: %s", full, strings.Join(sortedKeys(m), ", "))
		}
		dst[seg] = nil // declared (or below an untyped value) but left out: null
		return nil
	}
	if len(segs) == 1 {
		dst[seg] = val
		return nil
	}
	switch sub := val.(type) {
	case nil:
		dst[seg] = nil
		return nil
	case []any:
		var prev []any
		if p, ok := dst[seg].([]any); ok && len(p) == len(sub) {
			prev = p
		} else {
			prev = make([]any, len(sub))
		}
		for i, e := range sub {
			if e == nil {
				continue
			}
			em, _ := prev[i].(map[string]any)
			if em == nil {
				em = map[string]any{}
			}
			if err := selectPath(em, e, segs[1:], full, ft); err != nil {
				return err
			}
			prev[i] = em
		}
		dst[seg] = prev
		return nil
	}
	dm, _ := dst[seg].(map[string]any)
	if dm == nil {
		dm = map[string]any{}
	}
	if err := selectPath(dm, val, segs[1:], full, ft); err != nil {
		return err
	}
	dst[seg] = dm
	return nil
}

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case json.Number, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return reflect.TypeOf(v).String()
}

// wide is -o wide / --wide: tables print every value whole (names, reasons,
// messages), never cut to fit.
var wide bool

// addWideFlag adds --wide and -o/--output (wide, table or json) to a table command.
func addWideFlag(cmd *cobra.Command, j *jsonFlag) {
	cmd.Flags().BoolVar(&wide, "wide", false, "never cut names, reasons or messages to fit (same as -o wide)")
	cmd.Flags().VarP(&outputValue{j: j}, "output", "o", "output format: table (default), wide or json")
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions([]string{"table", "wide", "json"}, cobra.ShellCompDirectiveNoFileComp))
}

type outputValue struct {
	j   *jsonFlag
	val string
}

func (o *outputValue) String() string { return o.val }
func (o *outputValue) Type() string   { return "format" }
func (o *outputValue) Set(s string) error {
	switch s {
	case "table":
		wide = false
	case "wide":
		wide = true
	case "json":
		if o.j != nil {
			o.j.set = true
		}
	default:
		return fmt.Errorf("-o %q: want table, wide or json", s)
	}
	o.val = s
	return nil
}

// clip is oneLine, except under --wide, which never cuts.
func clip(s string, n int) string {
	if wide {
		return strings.Join(strings.Fields(s), " ")
	}
	return oneLine(s, n)
}

// color decides whether to colour what goes to w (--color, NO_COLOR, a terminal).
func color(w io.Writer) bool { return term.Color(w, colorMode, nil) }

func paint(on bool, code, s string) string { return term.Paint(on, code, s) }

// table writes squeue-like aligned columns.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }
