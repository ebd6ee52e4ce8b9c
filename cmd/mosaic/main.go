// Command mosaic is Mosaic's one binary: the core service (serve), and the CLI that
// talks to a running core over HTTP.
package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/mosaic-hpc/mosaic/client"
)

func main() {
	cmd := newRootCmd()
	if err := cmd.Execute(); err != nil {
		var ex *exitError
		if errors.As(err, &ex) {
			if ex.msg != "" {
				fmt.Fprintln(os.Stderr, "mosaic:", ex.msg)
			}
			os.Exit(ex.code)
		}
		fmt.Fprintln(os.Stderr, "mosaic:", err)
		if errors.Is(err, client.ErrNoCore) {
			os.Exit(3)
		}
		os.Exit(1)
	}
}

// exitError carries a specific exit code (e.g. a job's exit code for submit --wait).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }
