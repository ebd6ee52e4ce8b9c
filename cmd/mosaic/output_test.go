package main

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/client"
)

// TestJSONFieldsCheckedAtParse: with the printed type declared, an unknown --json
// field fails while flags are parsed, before RunE (and so before any side effect).
func TestJSONFieldsCheckedAtParse(t *testing.T) {
	cases := []struct {
		arg  string
		want string // "" = accepted
	}{
		{"--json", ""},
		{"--json=id,name,state,attempts,policy,decision", ""}, // embedded Task fields count
		{"--json=task,dry_run", ""},                           // SubmitResult fields
		{"--json=nosuchfield", `unknown JSON field "nosuchfield"`},
		{"--json=id,nosuchfield", `unknown JSON field "nosuchfield"`},
		{"--json=ID", `unknown JSON field "ID"`}, // keys are case-sensitive
	}
	for _, tc := range cases {
		ran := false
		cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { ran = true; return nil }}
		var j jsonFlag
		addJSONFlag(cmd, &j, client.SubmitResult{}, client.TaskDetail{})
		cmd.SetArgs([]string{tc.arg})
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		err := cmd.Execute()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.arg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.arg, err, tc.want)
		case tc.want != "" && ran:
			t.Errorf("%s: the command ran despite the bad field list", tc.arg)
		}
	}
}

// TestJSONCheckForNarrows: submit prints a SubmitResult, or a TaskDetail with --wait;
// checkFor refuses a field the one actually printed lacks.
func TestJSONCheckForNarrows(t *testing.T) {
	j := jsonFlag{set: true, fields: []string{"dry_run"}}
	if err := j.checkFor(client.SubmitResult{}); err != nil {
		t.Errorf("dry_run on SubmitResult: %v", err)
	}
	if err := j.checkFor(client.TaskDetail{}); err == nil {
		t.Error("dry_run on TaskDetail: accepted")
	}
}

// TestJSONKnownButOmittedFieldIsNull: a declared field the value omits (omitempty)
// prints as null instead of failing after the fact.
func TestJSONKnownButOmittedFieldIsNull(t *testing.T) {
	j := jsonFlag{set: true, fields: []string{"task", "dry_run"}}
	var b bytes.Buffer
	if err := j.print(&b, &client.SubmitResult{DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"task": null`) {
		t.Errorf("got %s", b.String())
	}
}

// TestEveryJSONCommandChecksFieldsFirst walks the whole command tree: every command
// with --json declares what it prints, so an unknown field is refused while flags are
// parsed — before a submit, put-file, smoke job or login could happen.
func TestEveryJSONCommandChecksFieldsFirst(t *testing.T) {
	var walk func(c *cobra.Command)
	n := 0
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup("json"); f != nil {
			n++
			if err := f.Value.Set("nosuchfield_for_test"); err == nil {
				t.Errorf("%q: --json=nosuchfield_for_test accepted at parse time; declare the printed type in addJSONFlag", c.CommandPath())
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(newRootCmd())
	if n < 20 {
		t.Fatalf("only %d commands with --json found; the walk is broken", n)
	}
}

// sampleSubmit is a SubmitResult with a task, attempts and a decision.
func sampleSubmit() *client.SubmitResult {
	exit := 3
	r := &client.SubmitResult{Task: &client.TaskDetail{}, Decision: &v1.Decision{Chosen: "Delta@NCSA:cpu", Mode: "auto", Ranker: "heuristic"}}
	r.Task.ID, r.Task.Name, r.Task.State = "t1", "train", "running"
	r.Task.Attempts = []*v1.Attempt{{N: 1, System: "Delta@NCSA", Partition: "cpu"}, {N: 2, System: "Anvil@RCAC", Partition: "wholenode", ExitCode: &exit}}
	return r
}

// TestJSONNestedFieldPaths: --json=a.b keeps nested fields, through lists for
// each element; a declared field left out is null; typos are refused naming what
// is available at that level.
func TestJSONNestedFieldPaths(t *testing.T) {
	cases := []struct {
		fields string
		want   string // compact JSON
		err    string
	}{
		{"decision.chosen,task.state", `{"decision":{"chosen":"Delta@NCSA:cpu"},"task":{"state":"running"}}`, ""},
		{"task.attempts.system", `{"task":{"attempts":[{"system":"Delta@NCSA"},{"system":"Anvil@RCAC"}]}}`, ""},
		{"task.attempts.system,task.attempts.exit_code", `{"task":{"attempts":[{"exit_code":null,"system":"Delta@NCSA"},{"exit_code":3,"system":"Anvil@RCAC"}]}}`, ""},
		{"task.id,task.name,dry_run", `{"dry_run":false,"task":{"id":"t1","name":"train"}}`, ""},
		{"decision.chosn", "", `unknown JSON field "decision.chosn"; available under decision:`},
		{"task.nope", "", `unknown JSON field "task.nope"; available under task:`},
		{"decision.chosen.x", "", `is a string, not an object`},
	}
	for _, c := range cases {
		var j jsonFlag
		j.prints = []reflect.Type{reflect.TypeOf(client.SubmitResult{})}
		err := (*jsonValue)(&j).Set(c.fields)
		var b bytes.Buffer
		if err == nil {
			err = j.print(&b, sampleSubmit())
		}
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("--json=%s: %v, want an error with %q", c.fields, err, c.err)
			}
		case err != nil:
			t.Errorf("--json=%s: %v", c.fields, err)
		default:
			var got bytes.Buffer
			if err := json.Compact(&got, b.Bytes()); err != nil || got.String() != c.want {
				t.Errorf("--json=%s: %s, want %s", c.fields, got.String(), c.want)
			}
		}
	}
}

// TestJSONFieldListMalformed: field lists and paths that cannot mean anything are
// refused when the flag is parsed.
func TestJSONFieldListMalformed(t *testing.T) {
	for _, s := range []string{"a..b", ".a", "a.", "task..id", "id,.x"} {
		var j jsonFlag
		if err := (*jsonValue)(&j).Set(s); err == nil {
			t.Errorf("--json=%s accepted", s)
		}
	}
}

// TestJQ: --jq filters the JSON (after --json's selection): strings raw, other
// values compact, one per line; a bad expression is refused at parse time; a
// runtime error is an error naming the expression.
func TestJQ(t *testing.T) {
	cases := []struct {
		fields, expr, want, err string
	}{
		{"", ".task.id", "t1\n", ""},
		{"", ".task.attempts[] | .system", "Delta@NCSA\nAnvil@RCAC\n", ""},
		{"", ".task.attempts | length", "2\n", ""},
		{"", "[.task.attempts[] | {n, system}]", `[{"n":1,"system":"Delta@NCSA"},{"n":2,"system":"Anvil@RCAC"}]` + "\n", ""},
		{"task.state", ".", `{"task":{"state":"running"}}` + "\n", ""},
		{"", ".task.attempts[-1].exit_code", "3\n", ""},
		{"", "empty", "", ""},
		{"", ".task.id | tonumber", "", `--jq ".task.id | tonumber"`},
	}
	for _, c := range cases {
		var j jsonFlag
		if c.fields != "" {
			if err := (*jsonValue)(&j).Set(c.fields); err != nil {
				t.Fatal(err)
			}
		}
		if err := (*jqValue)(&j).Set(c.expr); err != nil {
			t.Fatalf("--jq %s: %v", c.expr, err)
		}
		if !j.set {
			t.Errorf("--jq %s does not imply --json", c.expr)
		}
		var b bytes.Buffer
		err := j.print(&b, sampleSubmit())
		switch {
		case c.err != "":
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("--jq %s: %v, want error %q", c.expr, err, c.err)
			}
		case err != nil:
			t.Errorf("--jq %s: %v", c.expr, err)
		case b.String() != c.want:
			t.Errorf("--jq %s: %q, want %q", c.expr, b.String(), c.want)
		}
	}
	for _, bad := range []string{"", "  ", ".[", "foo(", ".a |"} {
		var j jsonFlag
		if err := (*jqValue)(&j).Set(bad); err == nil {
			t.Errorf("--jq %q accepted", bad)
		}
	}
}

// TestJQKeepsBigNumbersExact: numbers go through jq without float rounding
// (nanosecond timestamps and ids exceed 2^53).
func TestJQKeepsBigNumbersExact(t *testing.T) {
	var j jsonFlag
	if err := (*jqValue)(&j).Set(".n"); err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := j.print(&b, map[string]int64{"n": 1764600000123456789}); err != nil || b.String() != "1764600000123456789\n" {
		t.Errorf("got %q, %v", b.String(), err)
	}
	j = jsonFlag{set: true, fields: []string{"n"}}
	b.Reset()
	if err := j.print(&b, map[string]int64{"n": 1764600000123456789}); err != nil || !strings.Contains(b.String(), "1764600000123456789") {
		t.Errorf("--json=n: %q, %v", b.String(), err)
	}
}

// TestWideNeverCuts: names, reasons and messages are cut to fit, except with --wide
// or -o wide; -o json is --json.
func TestWideNeverCuts(t *testing.T) {
	long := strings.Repeat("n", 45)
	root := newRootCmd()
	tasks, _, _ := root.Find([]string{"tasks"})
	if err := tasks.ParseFlags(nil); err != nil || clip(long, 30) == long {
		t.Fatalf("without --wide a 45-character name is not cut: %q", clip(long, 30))
	}
	if err := tasks.ParseFlags([]string{"--wide"}); err != nil || clip(long, 30) != long {
		t.Errorf("--wide cut the name: %q (%v)", clip(long, 30), err)
	}
	root = newRootCmd()
	tasks, _, _ = root.Find([]string{"tasks"})
	if err := tasks.ParseFlags([]string{"-o", "wide"}); err != nil || clip(long, 30) != long {
		t.Errorf("-o wide cut the name: %q (%v)", clip(long, 30), err)
	}
	if err := tasks.ParseFlags([]string{"-o", "yaml"}); err == nil {
		t.Error("-o yaml accepted")
	}
	root = newRootCmd()
	tasks, _, _ = root.Find([]string{"tasks"})
	if err := tasks.ParseFlags([]string{"-o", "json"}); err != nil || !tasks.Flags().Lookup("json").Value.(*jsonValue).set {
		t.Errorf("-o json does not select JSON (%v)", err)
	}
	if got := oneLine("αβγδεζηθ", 5); got != "αβγδ…" {
		t.Errorf("oneLine cuts bytes, not characters: %q", got)
	}
}

// FuzzJSONSelect: any field list over any JSON document selects or refuses
// cleanly, and what it selects is valid JSON.
func FuzzJSONSelect(f *testing.F) {
	f.Add(`{"a":{"b":[{"c":1},{"c":2}]},"d":"x"}`, "a.b.c,d")
	f.Add(`[{"a":1},{"a":{"b":null}}]`, "a.b")
	f.Add(`{"a":[1,2,[3]]}`, "a.x")
	f.Add(`null`, "a")
	f.Fuzz(func(t *testing.T, doc, fields string) {
		v, err := decodeJSON([]byte(doc))
		if err != nil {
			return
		}
		var j jsonFlag
		if (*jsonValue)(&j).Set(fields) != nil {
			return
		}
		out, err := selectFields(v, j.fields, nil)
		if err != nil {
			return
		}
		if _, err := json.Marshal(out); err != nil {
			t.Fatalf("selected %v from %s by %q: not JSON: %v", out, doc, fields, err)
		}
	})
}

// TestNewOutput: logs --follow prints what the newest tail adds to the one shown
// before, exactly while the stream fits the window, and resumes after the overlap
// once the window slides; with no overlap it marks the gap.
func TestNewOutput(t *testing.T) {
	cases := []struct{ prev, cur, want string }{
		{"", "", ""},
		{"", "a\n", "a\n"},
		{"a\n", "a\nb\n", "b\n"},
		{"a\nb\n", "a\nb\n", ""},
		{"line1\nline2\nline3\n", "line2\nline3\nline4\n", "line4\n"}, // the window slid by one line
		{"line1\nline2\n", "line3\nline4\n", "…\nline3\nline4\n"},     // more than a window between reads
		{"abcabc", "bcabcX", "X"},
		{"old output\n", "", ""},                 // a new, still empty file
		{"x\n", "rewritten\n", "…\nrewritten\n"}, // the file was rewritten
		{strings.Repeat("a", 100), strings.Repeat("a", 100) + "b", "b"},
	}
	for _, c := range cases {
		if got := newOutput(c.prev, c.cur); got != c.want {
			t.Errorf("newOutput(%q, %q) = %q, want %q", c.prev, c.cur, got, c.want)
		}
	}
}

// FuzzNewOutput: whatever two tails are, the new part is the end of cur (or cur
// after the gap line), and a window that slid over distinct lines resumes exactly.
func FuzzNewOutput(f *testing.F) {
	f.Add("a\nb\nc\n", 2, "d\n")
	f.Add("abcabc", 1, "X")
	f.Add("", 0, "")
	f.Fuzz(func(t *testing.T, prev string, slide int, added string) {
		if slide < 0 || slide > len(prev) {
			return
		}
		cur := prev[slide:] + added
		got := newOutput(prev, cur)
		if !strings.HasSuffix(cur, got) && got != "…\n"+cur {
			t.Fatalf("newOutput(%q, %q) = %q: not an end of cur", prev, cur, got)
		}
		if len(got) > len(cur)+len("…\n") {
			t.Fatalf("newOutput(%q, %q) = %q: longer than cur", prev, cur, got)
		}
	})
}
