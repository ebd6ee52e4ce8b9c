package slurm

import (
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
)

func TestScriptExt(t *testing.T) {
	if got := (&Slurm{}).ScriptExt(); got != ".sbatch" {
		t.Fatalf("ScriptExt = %q, want .sbatch", got)
	}
}

// TestClassify: real messages of sbatch, squeue and the ssh in front of them.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		msg  string
		want dialect.Class
	}{
		{"sbatch: error: Batch job submission failed: Socket timed out on send/recv operation", dialect.OutcomeUnknown},
		{"sbatch: error: Batch job submission failed: Zero Bytes were transmitted or received", dialect.OutcomeUnknown},
		{"sbatch: error: Batch job submission failed: Unable to contact slurm controller (connect failure)", dialect.Transient},
		{"squeue: error: slurm_load_jobs error: Unable to contact slurm controller (connect failure)", dialect.Transient},
		{"sinfo: error: slurm_load_partitions: Socket timed out on send/recv operation", dialect.OutcomeUnknown},
		{"sbatch: error: Slurm temporarily unable to accept job, sleeping and retrying", dialect.Transient},
		{"sbatch: error: Batch job submission failed: Resource temporarily unavailable", dialect.Transient},
		{"sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified", dialect.Permanent},
		{"sbatch: error: Batch job submission failed: Requested node configuration is not available", dialect.Permanent},
		{"sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job submit limit, user's size and/or time limits)", dialect.Permanent},
		{"sbatch: error: invalid partition specified: nosuch", dialect.Permanent},
		{"ssh: connect to host delta port 22: Connection timed out", dialect.Transient},
		{"Connection to delta closed by remote host.\nclient_loop: send disconnect: Broken pipe", dialect.OutcomeUnknown},
		{"", dialect.Permanent},
	} {
		if got := (&Slurm{}).Classify(tc.msg); got != tc.want {
			t.Errorf("Classify(%q) = %s, want %s", tc.msg, got, tc.want)
		}
	}
}
