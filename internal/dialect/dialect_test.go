package dialect_test

import (
	"errors"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/dialect/pbs"
	"github.com/mosaic-hpc/mosaic/internal/dialect/slurm"
	"github.com/mosaic-hpc/mosaic/internal/errs"
)

// TestMark: the dialect's verdict on a failed command becomes sentinels on the error,
// and the error keeps the scheduler's own words.
func TestMark(t *testing.T) {
	for _, tc := range []struct {
		d                  dialect.Dialect
		stderr             string
		transient, unknown bool
	}{
		{&slurm.Slurm{}, "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation", true, true},
		{&slurm.Slurm{}, "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)", true, false},
		{&slurm.Slurm{}, "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified", false, false},
		{&pbs.PBS{}, "qsub: cannot connect to server pbspl1 (errno=111)", true, false},
		{&pbs.PBS{}, "qsub: Bad UID for job execution", false, false},
	} {
		out := dialect.Output{Stderr: []byte(tc.stderr), ExitCode: 1}
		base := errors.New(tc.stderr)
		err := dialect.Mark(tc.d, out, base)
		if err.Error() != base.Error() || !errors.Is(err, base) {
			t.Errorf("%s %q: message or chain changed: %v", tc.d.Name(), tc.stderr, err)
		}
		if got := errors.Is(err, errs.ErrTransient); got != tc.transient {
			t.Errorf("%s %q: transient %v, want %v", tc.d.Name(), tc.stderr, got, tc.transient)
		}
		if got := errors.Is(err, errs.ErrOutcomeUnknown); got != tc.unknown {
			t.Errorf("%s %q: outcome unknown %v, want %v", tc.d.Name(), tc.stderr, got, tc.unknown)
		}
	}
	if dialect.Mark(&slurm.Slurm{}, dialect.Output{}, nil) != nil {
		t.Fatal("Mark(nil) is not nil")
	}
}
