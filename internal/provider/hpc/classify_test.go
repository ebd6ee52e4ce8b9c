package hpc

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
)

// TestSubmitRefusalIsClassifiedByTheDialect: the scheduler's message reaches the
// caller unchanged, marked with the site's dialect's class, and the script is named
// with the dialect's extension.
func TestSubmitRefusalIsClassifiedByTheDialect(t *testing.T) {
	for _, tc := range []struct {
		dialect, submit, stderr string
		transient, unknown      bool
		ext                     string
	}{
		{site.DialectSlurm, "sbatch", "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation", true, true, ".sbatch"},
		{site.DialectSlurm, "sbatch", "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified", false, false, ".sbatch"},
		{site.DialectPBS, "qsub", "Connection refused\nqsub: cannot connect to server pbs1 (errno=15010)", true, false, ".pbs"},
		{site.DialectPBS, "qsub", "qsub: Bad UID for job execution", false, false, ".pbs"},
	} {
		sys := site.System{Name: "X", Dialect: tc.dialect, WorkDir: "/scratch/alice", Accounts: []string{"acct"}}
		p, f := newFake(t, sys, func(argv []string) (transport.Result, error) {
			if argv[0] == tc.submit {
				return transport.Result{Stderr: []byte(tc.stderr + "\n"), ExitCode: 1}, nil
			}
			return transport.Result{}, nil
		})
		sp := model.JobSpec{Tag: "mosaic-t9-1", Partition: "cpu", Nodes: 1, Walltime: model.Duration(time.Hour), Command: "true"}
		_, err := p.Submit(context.Background(), sp)
		if err == nil {
			t.Fatalf("%s: refusal accepted", tc.stderr)
		}
		last := tc.stderr[strings.LastIndex(tc.stderr, "\n")+1:]
		if !strings.Contains(err.Error(), last) {
			t.Errorf("%q: the scheduler's words are lost: %v", tc.stderr, err)
		}
		if got := errors.Is(err, provider.ErrTransient); got != tc.transient {
			t.Errorf("%q: transient %v, want %v (%v)", tc.stderr, got, tc.transient, err)
		}
		if got := errors.Is(err, provider.ErrOutcomeUnknown); got != tc.unknown {
			t.Errorf("%q: outcome unknown %v, want %v", tc.stderr, got, tc.unknown)
		}
		if script := f.calls[0][len(f.calls[0])-1]; script != "/scratch/alice/mosaic/mosaic-t9-1"+tc.ext {
			t.Errorf("%s script %q, want extension %s", tc.dialect, script, tc.ext)
		}
	}
}
