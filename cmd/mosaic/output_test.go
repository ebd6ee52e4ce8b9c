package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"

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
