package main

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
)

// TestExitStatus: usage and launch argument errors exit 2 (also wrapped), the
// core being absent 3, a command's own code wins, anything else 1.
func TestExitStatus(t *testing.T) {
	cases := []struct {
		err  error
		code int
		msg  string
	}{
		{errors.New("boom"), 1, "boom"},
		{usagef("bad %s", "flag"), 2, "bad flag"},
		{fmt.Errorf("launch: %w", &campaign.ArgError{Err: errors.New("site x is not in the sites catalog")}), 2, "launch: site x is not in the sites catalog"},
		{fmt.Errorf("status: %w", client.ErrNoCore), 3, "status: " + client.ErrNoCore.Error()},
		{&exitError{code: 130, msg: "interrupted"}, 130, "interrupted"},
		{&exitError{code: 5}, 5, ""},
	}
	for _, c := range cases {
		code, msg := exitStatus(c.err)
		if code != c.code || msg != c.msg {
			t.Errorf("exitStatus(%v) = %d %q, want %d %q", c.err, code, msg, c.code, c.msg)
		}
	}
	if usage(nil) != nil {
		t.Error("usage(nil) is not nil")
	}
}

// TestFlagErrorsAreUsageErrors: a flag that does not parse, on any command, is a
// usage error (exit 2), the other commands' own errors untouched.
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
	} {
		root := newRootCmd()
		root.SetArgs(args)
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		err := root.Execute()
		if code, _ := exitStatus(err); code != 2 {
			t.Errorf("mosaic %v: %v, exit %d, want 2", args, err, code)
		}
	}
}
