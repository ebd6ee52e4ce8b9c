// Command mosaic is Mosaic's one binary: the core service (serve), and the CLI that
// talks to a running core over HTTP.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
)

func main() {
	cmd := newRootCmd()
	if err := cmd.Execute(); err != nil {
		code, msg := exitStatus(err)
		if msg != "" {
			fmt.Fprintln(os.Stderr, "mosaic:", msg)
		}
		os.Exit(code)
	}
}

// Exit statuses of the CLI (a command's own, such as a job's exit code for
// submit --wait or 130 after Ctrl-C, travel in an exitError).
const (
	exitFailure = 1 // the work failed
	exitUsage   = 2 // an argument, flag or input file is wrong; nothing was done
	exitNoCore  = 3 // no core answers (client.ErrNoCore)
)

// exitStatus maps a command's error to the process's exit status and the line
// printed on stderr (none when empty).
func exitStatus(err error) (int, string) {
	var ex *exitError
	var ue *usageError
	var ae *campaign.ArgError
	switch {
	case errors.As(err, &ex):
		return ex.code, ex.msg
	case errors.As(err, &ue), errors.As(err, &ae), errors.Is(err, campaign.ErrNotDeclared):
		return exitUsage, err.Error()
	case errors.Is(err, client.ErrNoCore):
		return exitNoCore, err.Error()
	}
	return exitFailure, err.Error()
}

// exitError carries a specific exit code (e.g. a job's exit code for submit --wait).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// usageError is an argument, flag or input-file error found before any work
// is done: the process exits 2 (exitUsage).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// usage marks err (nil stays nil) as a usage error.
func usage(err error) error {
	if err == nil {
		return nil
	}
	return &usageError{err: err}
}

// usagef is usage(fmt.Errorf(...)).
func usagef(format string, args ...any) error { return usage(fmt.Errorf(format, args...)) }
