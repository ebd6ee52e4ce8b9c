package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
)

// jsonFlag adds gh-style --json: alone it prints every field; --json=a,b keeps only
// those top-level fields (of the object, or of each element of a list).
type jsonFlag struct {
	set    bool
	fields []string
}

func addJSONFlag(cmd *cobra.Command, j *jsonFlag) {
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
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			v.fields = append(v.fields, f)
		}
	}
	return nil
}

// printJSON writes v as indented JSON, keeping only the selected fields. An unknown
// field is an error listing the available ones.
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
		out, err = selectFields(generic, j.fields)
		if err != nil {
			return err
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func selectFields(v any, fields []string) (any, error) {
	switch t := v.(type) {
	case []any:
		out := make([]any, 0, len(t))
		for _, e := range t {
			s, err := selectFields(e, fields)
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

// color decides whether to colour output: only on a terminal and without NO_COLOR.
func color(w io.Writer) bool {
	if _, ok := os.LookupEnv("NO_COLOR"); ok {
		return false
	}
	f, ok := w.(*os.File)
	return ok && (isatty.IsTerminal(f.Fd()) || isatty.IsCygwinTerminal(f.Fd()))
}

func paint(on bool, code, s string) string {
	if !on {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

// table writes squeue-like aligned columns.
func table(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 0, 2, ' ', 0) }
