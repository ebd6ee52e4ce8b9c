// Command mosaic is Mosaic's one binary: the core service (serve), and the CLI that
// talks to a running core over HTTP.
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
)

func main() {
	root := newRootCmd()
	cmd, err := root.ExecuteC()
	if err != nil {
		os.Exit(reportError(os.Stderr, cmd, os.Args[1:], err))
	}
}

// Exit statuses of the CLI (README.md, "Exit codes"). A job's own exit code, 1 to
// 124, is passed through unchanged (submit --wait, exec, agent run); Mosaic's own
// outcomes use 125 and above, so a script can always tell the two apart.
const (
	// exitTaskFailed: a task that failed without an exit code of its own that can
	// be passed through (walltime, node failure, a job exit code of 125–127).
	exitTaskFailed = 1
	// exitMosaic: Mosaic could not do what was asked: the core is not running or
	// answered an error, a site failed, a check (doctor, preflight, smoke) found
	// a problem, --wait-timeout ran out (the task goes on).
	exitMosaic = 125
	// exitUsage: an argument, flag or input file is wrong; nothing was done.
	exitUsage = 126
	// exitNotFound: the task, system or agent named does not exist (HTTP 404).
	exitNotFound = 127
	// exitInterrupted: Ctrl-C (128+SIGINT) stopped the command; a task goes on.
	exitInterrupted = 130
	// exitCancelled: the task waited for was cancelled (128+SIGTERM, as a job
	// ended by scancel or qdel).
	exitCancelled = 143
)

// Error kinds: the "code" of a JSON error (--json), stable for scripts.
const (
	kindError       = "error"
	kindUsage       = "usage"
	kindNotFound    = "not_found"
	kindNoCore      = "no_core"
	kindTaskFailed  = "task_failed"
	kindCancelled   = "cancelled"
	kindWaitTimeout = "wait_timeout"
	kindInterrupted = "interrupted"
	kindJobExit     = "exit_status" // a command's own exit status passed through
)

// jobExit maps a job's (or a remote command's) exit code to the CLI's: 1–124 and
// 128–255 (killed by signal N: 128+N) pass through; 125–127 would read as
// Mosaic's own statuses, so they become 1 (the real one is in the message).
func jobExit(code int) int {
	switch {
	case code <= 0 || code > 255:
		return exitTaskFailed
	case code >= exitMosaic && code <= exitNotFound:
		return exitTaskFailed
	}
	return code
}

// exitStatus maps a command's error to the process's exit status, its kind (the
// JSON error's code) and the line printed on stderr (none when empty).
func exitStatus(err error) (int, string, string) {
	var ex *exitError
	var ue *usageError
	var ae *campaign.ArgError
	var api *client.APIError
	switch {
	case errors.As(err, &ex):
		kind := ex.kind
		if kind == "" {
			kind = kindJobExit
		}
		return ex.code, kind, ex.msg
	case errors.As(err, &ue), errors.As(err, &ae), errors.Is(err, campaign.ErrNotDeclared), isCobraUsage(err):
		return exitUsage, kindUsage, err.Error()
	case errors.Is(err, client.ErrNoCore):
		return exitMosaic, kindNoCore, err.Error()
	case errors.As(err, &api) && api.Status == http.StatusNotFound:
		return exitNotFound, kindNotFound, err.Error()
	case errors.As(err, &api) && (api.Status == http.StatusBadRequest || api.Status == http.StatusUnprocessableEntity):
		// The core refused the request as it was given: nothing was done.
		return exitUsage, kindUsage, err.Error()
	}
	return exitMosaic, kindError, err.Error()
}

// isCobraUsage recognises the usage errors cobra returns untyped: an unknown
// command (before any flag is parsed) and required flags left out.
func isCobraUsage(err error) bool {
	m := err.Error()
	return strings.HasPrefix(m, "unknown command ") || strings.HasPrefix(m, "required flag(s) ") ||
		strings.HasPrefix(m, "if any flags in the group ")
}

// reportError writes err on w, as a line ("mosaic: …") or, when the command was
// asked for JSON (--json or --jq), as {"error": {...}} — and returns the exit
// status. cmd is the command that ran (or failed to parse); args the process's.
func reportError(w io.Writer, cmd *cobra.Command, args []string, err error) int {
	code, kind, msg := exitStatus(err)
	if kind == kindUsage && (isFlagError(err) || isCobraUsage(err)) && cmd != nil {
		msg += fmt.Sprintf("\nRun '%s --help' for usage.", cmd.CommandPath())
	}
	if wantsJSON(cmd, args) {
		e := jsonError{Message: msg, Code: kind, Exit: code}
		if e.Message == "" {
			e.Message = fmt.Sprintf("exit status %d", code)
		}
		b, _ := json.Marshal(struct {
			Error jsonError `json:"error"`
		}{e})
		fmt.Fprintln(w, string(b))
		return code
	}
	if msg != "" {
		fmt.Fprintln(w, "mosaic:", msg)
	}
	return code
}

// jsonError is an error as printed under --json: {"error": {"message", "code", "exit"}}.
type jsonError struct {
	Message string `json:"message"`
	Code    string `json:"code"`
	Exit    int    `json:"exit"`
}

// wantsJSON says whether the failed command was asked for JSON: its --json, --jq
// or -o json flag was set, or (a flag that did not parse stops before the others are
// read) one of them is on the command line before a "--".
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		for _, n := range []string{"json", "jq"} {
			if f := cmd.Flags().Lookup(n); f != nil && f.Changed {
				return true
			}
		}
		if f := cmd.Flags().Lookup("output"); f != nil && f.Changed && f.Value.String() == "json" {
			return true
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if a == "--json" || strings.HasPrefix(a, "--json=") || a == "--jq" || strings.HasPrefix(a, "--jq=") {
			return true
		}
	}
	return false
}

// commandExit is the status of a wrapper (agent run, spawn-site) that failed itself,
// from the code internal/campaign returns with the error: 2 an argument error, 127
// the agent's command could not be started (not found, as env(1) says), else 125.
func commandExit(code int) int {
	switch code {
	case 2:
		return exitUsage
	case 127:
		return exitNotFound
	}
	return exitMosaic
}

// exitError carries a specific exit code (e.g. a job's exit code for submit --wait)
// and its kind (kindJobExit when empty).
type exitError struct {
	code int
	kind string
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usageError is an argument, flag or input-file error found before any work
// is done: the process exits 126 (exitUsage).
type usageError struct {
	err  error
	flag bool // a flag that did not parse: the message ends with a usage hint
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// isFlagError reports whether err is a flag that did not parse.
func isFlagError(err error) bool {
	var ue *usageError
	return errors.As(err, &ue) && ue.flag
}

// usage marks err (nil stays nil) as a usage error.
func usage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err: err}
}

// usagef is usage(fmt.Errorf(...)).
func usagef(format string, args ...any) error { return usage(fmt.Errorf(format, args...)) }
