package hpc

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/transport"
)

// noAccounting makes sacct answer as it does on a cluster without slurmdbd, so the
// real squeue + scontrol fallback runs against the rig.
type noAccounting struct{ inner transport.Transport }

func (n noAccounting) Run(ctx context.Context, argv []string, stdin io.Reader) (transport.Result, error) {
	if argv[0] == "sacct" {
		return transport.Result{ExitCode: 1, Stderr: []byte("sacct: error: Slurm accounting storage is disabled\n")}, nil
	}
	return n.inner.Run(ctx, argv, stdin)
}

// TestRigNoAccountingFallback: states and exit codes come from squeue and scontrol.
func TestRigNoAccountingFallback(t *testing.T) {
	t.Parallel()
	p, ct := rigProvider(t, "alpha", "local")
	p.tr = noAccounting{inner: ct}
	ctx := context.Background()
	okSpec := spec(t, "fbok", "cpu", "true", 5*time.Minute)
	okID, err := p.Submit(ctx, okSpec)
	if err != nil {
		t.Fatal(err)
	}
	badID, err := p.Submit(ctx, spec(t, "fbbad", "cpu", "exit 7", 5*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if s := waitState(t, p, okID, 60*time.Second, final); s.State != model.JobSucceeded || s.Name != okSpec.Tag {
		t.Errorf("ok: %+v", s)
	}
	if s := waitState(t, p, badID, 60*time.Second, final); s.State != model.JobFailed || s.ExitCode != 7 {
		t.Errorf("failing: %+v", s)
	}
	found, err := p.FindByTag(ctx, []string{okSpec.Tag})
	if err != nil || found[okSpec.Tag].JobID != okID {
		t.Errorf("find by tag without accounting: %+v %v", found, err)
	}
	st, err := p.Status(ctx, []string{"999999"})
	if err != nil || len(st) != 0 {
		t.Errorf("unknown id: %+v %v", st, err)
	}
}
