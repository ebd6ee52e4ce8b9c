package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
)

// TestExitStatus: usage and launch argument errors exit 126 (also wrapped), the
// core being absent or failing 125, a 404 127, a command's own code wins.
func TestExitStatus(t *testing.T) {
	cases := []struct {
		err  error
		code int
		kind string
		msg  string
	}{
		{errors.New("boom"), 125, kindError, "boom"},
		{usagef("bad %s", "flag"), 126, kindUsage, "bad flag"},
		{fmt.Errorf("launch: %w", &campaign.ArgError{Err: errors.New("site x is not in the sites catalog")}), 126, kindUsage, "launch: site x is not in the sites catalog"},
		{fmt.Errorf("status: %w", client.ErrNoCore), 125, kindNoCore, "status: " + client.ErrNoCore.Error()},
		{fmt.Errorf("task: %w", &client.APIError{Status: 404, Title: "Not Found", Detail: "no task x"}), 127, kindNotFound, ""},
		{&client.APIError{Status: 422, Title: "Unprocessable Entity", Detail: "gpus.min > gpus.max"}, 126, kindUsage, ""},
		{&client.APIError{Status: 500, Title: "Internal Server Error"}, 125, kindError, ""},
		{&exitError{code: 130, kind: kindInterrupted, msg: "interrupted"}, 130, kindInterrupted, "interrupted"},
		{&exitError{code: 5}, 5, kindJobExit, ""},
		{errors.New(`unknown command "x" for "mosaic"`), 126, kindUsage, `unknown command "x" for "mosaic"`},
		{errors.New(`required flag(s) "name" not set`), 126, kindUsage, `required flag(s) "name" not set`},
	}
	for _, c := range cases {
		code, kind, msg := exitStatus(c.err)
		if c.msg == "" {
			c.msg = c.err.Error()
		}
		if code != c.code || kind != c.kind || msg != c.msg {
			t.Errorf("exitStatus(%v) = %d %s %q, want %d %s %q", c.err, code, kind, msg, c.code, c.kind, c.msg)
		}
	}
	if usage(nil) != nil {
		t.Error("usage(nil) is not nil")
	}
}

// TestJobExitNeverReadsAsMosaics: a job's exit code passes through unless it
// would read as one of Mosaic's own statuses (125–127) or is no code at all.
func TestJobExitNeverReadsAsMosaics(t *testing.T) {
	for in, want := range map[int]int{1: 1, 2: 2, 3: 3, 7: 7, 124: 124, 125: 1, 126: 1, 127: 1, 128: 128, 137: 137, 143: 143, 255: 255,
		0: 1, -1: 1, 256: 1, 1000: 1} {
		if got := jobExit(in); got != want {
			t.Errorf("jobExit(%d) = %d, want %d", in, got, want)
		}
	}
	for in, want := range map[int]int{0: 125, 1: 125, 2: 126, 127: 127} {
		if got := commandExit(in); got != want {
			t.Errorf("commandExit(%d) = %d, want %d", in, got, want)
		}
	}
}

// TestExitForTask: --wait mirrors the job: its code, 1 when it has none, 143 when
// the task was cancelled.
func TestExitForTask(t *testing.T) {
	code := func(c int) *int { return &c }
	for _, c := range []struct {
		state string
		exit  *int
		want  int
	}{
		{"succeeded", nil, 0}, {"failed", code(7), 7}, {"failed", nil, 1}, {"failed", code(127), 1},
		{"failed", code(137), 137}, {"cancelled", nil, 143},
	} {
		td := &client.TaskDetail{}
		td.ID, td.State = "t1", c.state
		if c.exit != nil {
			td.Attempts = []*v1.Attempt{{N: 1, ExitCode: c.exit}}
		}
		got := 0
		if err := exitForTask(td); err != nil {
			got, _, _ = exitStatus(err)
		}
		if got != c.want {
			t.Errorf("%s exit %v: status %d, want %d", c.state, c.exit, got, c.want)
		}
	}
}

// TestFlagErrorsAreUsageErrors: a flag or argument that does not parse, on any
// command, is a usage error (exit 126), the other commands' own errors untouched.
func TestFlagErrorsAreUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"campaign", "launch", "--bogus"},
		{"tasks", "--bogus"},
		{"campaign", "launch", "--startup-timeout", "soon"},
		{"campaign", "stop"},
		{"campaign", "timeline"},
		{"campaign", "resume", "a", "b"},
		{"agent", "run"},
		{"agent", "run", "--run-id", "r", "--name", "a"},
		{"task"},
		{"task", "a", "b"},
		{"submit"},
		{"nosuchcommand"},
		{"campaign", "nosuchcommand"},
		{"tasks", "--jq", ".["},
		{"tasks", "--json=a..b"},
		{"submit", "--name", "x", "--gpus", "a..b"},
		{"submit", "--name", "x", "--gpus", "2", "--envelope", "env.yaml"},
		{"events", "--follow", "--before", "3"},
		{"sim", "replay"},
		{"init-sites", "nosuchmachine"},
		{"put-file", "delta", "/nonexistent/file", "--to", "x"},
	} {
		root := newRootCmd()
		root.SetArgs(args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		_, err := root.ExecuteC()
		if code, _, _ := exitStatus(err); code != exitUsage {
			t.Errorf("mosaic %v: %v, exit %d, want %d", args, err, code, exitUsage)
		}
	}
}

// TestUsageHintAndJSONErrors: a flag error ends with the --help hint; under --json
// (or --jq) the error is one JSON object on stderr with message, code and exit.
func TestUsageHintAndJSONErrors(t *testing.T) {
	run := func(args ...string) (string, int) {
		root := newRootCmd()
		root.SetArgs(args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		cmd, err := root.ExecuteC()
		if err == nil {
			t.Fatalf("mosaic %v succeeded", args)
		}
		var b bytes.Buffer
		code := reportError(&b, cmd, args, err)
		return b.String(), code
	}
	out, code := run("submit", "--gpus")
	if code != exitUsage || !strings.HasSuffix(out, "\nRun 'mosaic submit --help' for usage.\n") || !strings.HasPrefix(out, "mosaic: flag needs an argument") {
		t.Errorf("flag error: exit %d, stderr %q", code, out)
	}
	out, code = run("tasks", "--json", "--bogus")
	var e struct {
		Error jsonError `json:"error"`
	}
	if err := json.Unmarshal([]byte(out), &e); err != nil || code != exitUsage || e.Error.Code != kindUsage || e.Error.Exit != exitUsage ||
		!strings.Contains(e.Error.Message, "unknown flag: --bogus") {
		t.Errorf("JSON flag error: exit %d, stderr %q (%v)", code, out, err)
	}
	t.Setenv("MOSAIC_URL", "http://127.0.0.1:1")
	t.Setenv("MOSAIC_TOKEN", "mtk_test")
	out, code = run("tasks", "--jq", ".[].id")
	if err := json.Unmarshal([]byte(out), &e); err != nil || code != exitMosaic || e.Error.Code != kindNoCore || !strings.Contains(e.Error.Message, "mosaic serve") {
		t.Errorf("JSON error of an absent core: exit %d, stderr %q (%v)", code, out, err)
	}
	if out, _ = run("tasks", "-o", "json"); !strings.HasPrefix(out, `{"error":`) {
		t.Errorf("-o json: the error is not JSON: %q", out)
	}
	out, code = run("tasks")
	if code != exitMosaic || !strings.HasPrefix(out, "mosaic: ") || strings.Contains(out, "{") {
		t.Errorf("plain error of an absent core: exit %d, stderr %q", code, out)
	}
}
