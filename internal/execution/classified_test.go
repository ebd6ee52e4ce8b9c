package execution

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// flakySite refuses the first refusals submits with the Slurm message msg (as the
// hpc provider returns it: classified by the dialect), then submits for real.
type flakySite struct {
	*simprov.Provider
	msg      string
	mu       sync.Mutex
	refusals int
	submits  int
}

func (r *flakySite) Submit(ctx context.Context, spec model.JobSpec) (string, error) {
	r.mu.Lock()
	r.submits++
	refuse := r.refusals > 0
	if refuse {
		r.refusals--
	}
	r.mu.Unlock()
	if refuse {
		return "", slurmRefusal(r.msg)
	}
	return r.Provider.Submit(ctx, spec)
}

// TestSubmitRetriesWhatTheDialectCallsTransient: the dispatcher retries in place a
// refusal the dialect classified transient, and never a permanent one, by the
// classified error alone (no message matching in the execution layer).
func TestSubmitRetriesWhatTheDialectCallsTransient(t *testing.T) {
	for _, tc := range []struct {
		name    string
		msg     string
		submits int
		jobID   bool
	}{
		{"transient is retried", "sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)", 2, true},
		{"busy is retried", "sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying", 2, true},
		{"permanent is not", "sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			site := &flakySite{Provider: newSimSite(t, "A"), msg: tc.msg, refusals: 1}
			st, err := store.Open(ctx, filepath.Join(t.TempDir(), "m.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { st.Close() })
			e := New(Options{Store: st, Providers: provMap{"A": site}, Placer: fixedPlacer{"A"}, SubmitBackoff: time.Millisecond})
			newTask(t, st, "t", "true")
			_ = e.Dispatch(ctx, "t", &Placement{System: "A", Partition: "cpu", Account: "acct", Spec: specFor(&model.Task{Command: "true"})}, "test")
			site.mu.Lock()
			n := site.submits
			site.mu.Unlock()
			if n != tc.submits {
				t.Fatalf("the site was asked to submit %d times, want %d", n, tc.submits)
			}
			atts, err := st.Attempts(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			if len(atts) == 0 || (atts[0].JobID != "") != tc.jobID {
				t.Fatalf("attempts %+v: want job id %v on the first", atts, tc.jobID)
			}
		})
	}
}
