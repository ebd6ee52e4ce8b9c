package mcp

import (
	"reflect"
	"strings"
	"testing"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// TestDeprecatedArgsTableMatchesTheTools: every renamed argument in the table
// exists under both names in its tool's input, the old one described as a
// deprecated alias of the new one, so the table (and the docs made from it) cannot
// drift from the tools.
func TestDeprecatedArgsTableMatchesTheTools(t *testing.T) {
	inputs := map[string]any{"find_idle": FindIdleIn{}, "task_logs": TaskLogsIn{}, "recent_events": RecentEventsIn{}, "list_tasks": ListTasksIn{}}
	for tool, renames := range deprecatedArgs {
		in, ok := inputs[tool]
		if !ok {
			t.Errorf("tool %s of the table has no input type here", tool)
			continue
		}
		fields := map[string]reflect.StructField{}
		rt := reflect.TypeOf(in)
		for i := range rt.NumField() {
			f := rt.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			fields[name] = f
		}
		for old, cur := range renames {
			if _, ok := fields[cur]; !ok {
				t.Errorf("%s has no argument %s", tool, cur)
			}
			f, ok := fields[old]
			if !ok {
				t.Errorf("%s no longer accepts the deprecated %s", tool, old)
				continue
			}
			if want := "deprecated alias of " + cur; !strings.HasPrefix(f.Tag.Get("jsonschema"), want) {
				t.Errorf("%s.%s is described %q, want it to start %q", tool, old, f.Tag.Get("jsonschema"), want)
			}
		}
	}
}

// TestPickAlias: an argument under either name, or both agreeing, is taken; two
// different values are refused naming the current name.
func TestPickAlias(t *testing.T) {
	for _, tc := range []struct {
		cur, old, want int
		err            bool
	}{{0, 0, 0, false}, {5, 0, 5, false}, {0, 5, 5, false}, {5, 5, 5, false}, {5, 6, 0, true}} {
		got, err := pickInt(tc.cur, tc.old, "tail", "tail_bytes")
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("pickInt(%d, %d) = %d, %v", tc.cur, tc.old, got, err)
		}
		if err != nil && !strings.Contains(err.Error(), "give tail only") {
			t.Errorf("error %q does not say which name to use", err)
		}
	}
	if got, err := pickList([]string{"a"}, nil, "kind", "kinds"); err != nil || len(got) != 1 {
		t.Errorf("pickList current only: %v %v", got, err)
	}
	if got, err := pickList(nil, []string{"b"}, "kind", "kinds"); err != nil || got[0] != "b" {
		t.Errorf("pickList old only: %v %v", got, err)
	}
	if _, err := pickList([]string{"a"}, []string{"b"}, "kind", "kinds"); err == nil {
		t.Error("pickList with two different lists accepted")
	}
}

// TestActionableSiteFailures: an agent told of a site failure learns which site and
// what to look at, not that the core is "not ready".
func TestActionableSiteFailures(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   []string
	}{
		{503, []string{"unavailable now", "Gone", "cannot be reached", "list_resources"}},
		{502, []string{"a site failed the request", "Gone", "system_env"}},
	} {
		err := actionable(&v1.Error{Status: tc.status, Detail: "Gone: ssh 127.0.0.1: connection refused"})
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%d: %q does not say %q", tc.status, err, w)
			}
		}
	}
}
