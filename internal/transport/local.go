package transport

import (
	"context"
	"errors"
	"io"
	"os"
)

// Local runs commands on this host. Use it when Mosaic runs on the login node itself.
type Local struct {
	// Env is added to this process's environment (e.g. "SLURM_CONF=/etc/slurm/x.conf").
	Env []string
	// Dir is the working directory; "" means the current one.
	Dir string
	Limits
}

// Run executes argv[0] with argv[1:] directly (no shell).
func (l *Local) Run(ctx context.Context, argv []string, stdin io.Reader) (Result, error) {
	if len(argv) == 0 {
		return Result{}, errors.New("local transport: empty command")
	}
	env := append(os.Environ(), l.Env...)
	return runProcess(ctx, l.Limits, argv[0], argv[1:], env, l.Dir, stdin)
}
