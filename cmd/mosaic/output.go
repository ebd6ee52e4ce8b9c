package main

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/term"
)

// jsonFlag adds gh-style --json: alone it prints every field; --json=a,b keeps only
// those top-level fields (of the object, or of each element of a list).
//
// A command that declares what it prints (addJSONFlag's prints) has its field list
// checked when the flag is parsed, before the command does anything: a typo in
// --json=… must not fail after a task was submitted (a retry would submit it twice).
type jsonFlag struct {
	set    bool
	fields []string
	// prints are the types the command may print; empty = not checked up front.
	prints []reflect.Type
}

// addJSONFlag adds --json to cmd. prints are samples of what the command prints
// (a struct, a pointer to one or a slice of them); with them an unknown field is an
// error at flag parsing, before any side effect.
func addJSONFlag(cmd *cobra.Command, j *jsonFlag, prints ...any) {
	for _, p := range prints {
		j.prints = append(j.prints, reflect.TypeOf(p))
	}
	cmd.Flags().Var((*jsonValue)(j), "json", "print JSON; --json=field1,field2 keeps only those fields")
	cmd.Flags().Lookup("json").NoOptDefVal = "*"
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
	if len(v.prints) == 0 {
		return nil
	}
	// At parse time the command may print any of its types; checkFor narrows it.
	known := map[string]bool{}
	for _, t := range v.prints {
		names, ok := jsonFieldsOf(t)
		if !ok {
			return nil
		}
		for n := range names {
			known[n] = true
		}
	}
	return checkFields(v.fields, known)
}

// checkFor checks the selected fields against the type the command is about to
// print; call it before any side effect when a command prints one of several types.
func (j *jsonFlag) checkFor(sample any) error {
	if !j.set || len(j.fields) == 0 {
		return nil
	}
	names, ok := jsonFieldsOf(reflect.TypeOf(sample))
	if !ok {
		return nil
	}
	if err := checkFields(j.fields, names); err != nil {
		return fmt.Errorf("--json: %w", err)
	}
	return nil
}

func checkFields(fields []string, known map[string]bool) error {
	for _, f := range fields {
		if !known[f] {
			keys := make([]string, 0, len(known))
			for k := range known {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			return fmt.Errorf("unknown JSON field %q; available: %s", f, strings.Join(keys, ", "))
		}
	}
	return nil
}

var jsonMarshaler = reflect.TypeOf((*json.Marshaler)(nil)).Elem()

// jsonFieldsOf lists the top-level JSON object keys encoding/json writes for t (of
// each element for a slice). ok is false when they cannot be known from the type (a
// map, a custom marshaler, an interface).
func jsonFieldsOf(t reflect.Type) (map[string]bool, bool) {
	if t == nil {
		return nil, false
	}
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler) {
		return nil, false
	}
	out := map[string]bool{}
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
				for n := range sub {
					out[n] = true
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
		out[name] = true
	}
	return out, true
}

// print writes v as indented JSON, keeping only the selected fields. An unknown
// field is an error listing the available ones; a known field that v leaves out
// (omitempty) is printed as null.
func (j *jsonFlag) print(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	var out any = json.RawMessage(b)
	if len(j.fields) > 0 {
		var generic any
		if err := json.Unmarshal(b, &generic); err != nil {
			return err
		}
		static, _ := jsonFieldsOf(reflect.TypeOf(v))
		out, err = selectFields(generic, j.fields, static)
		if err != nil {
			return err
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func selectFields(v any, fields []string, static map[string]bool) (any, error) {
	switch t := v.(type) {
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			s, err := selectFields(e, fields, static)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	case map[string]any:
		out := map[string]any{}
		for _, f := range fields {
			val, ok := t[f]
			if !ok && static[f] {
				out[f] = nil
				continue
			}
			if !ok {
				keys := make([]string, 0, len(t))
				for k := range t {
					keys = append(keys, k)
				}
				sort.Strings(keys)
				return nil, fmt.Errorf("unknown JSON field %q; available: %s", f, strings.Join(keys, ", "))
			}
			out[f] = val
		}
		return out, nil
	case nil:
		return nil, nil
	}
	return nil, fmt.Errorf("--json fields apply to objects, not %s", reflect.TypeOf(v))
}

// color decides whether to colour what goes to w (--color, NO_COLOR, a terminal).
func color(w io.Writer) bool { return term.Color(w, colorMode, nil) }

func paint(on bool, code, s string) string { return term.Paint(on, code, s) }

// table writes squeue-like aligned columns.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }
