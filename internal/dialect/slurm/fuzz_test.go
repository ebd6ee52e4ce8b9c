package slurm

import (
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
)

func addFixtures(f *testing.F, names ...string) {
	for _, n := range names {
		f.Add(fixture(f, n))
	}
	f.Add([]byte(""))
	f.Add([]byte("|||||||||||||"))
	f.Add([]byte("\x00\xff\n\n|"))
}

func FuzzParseSinfo(f *testing.F) {
	addFixtures(f, "sinfo-alpha-mixed.txt", "sinfo-beta-drained.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		nodes, err := ParseSinfo(b)
		if err == nil {
			recs := PartitionRecords(nodes)
			for _, r := range recs {
				if r.FreeGPUs < 0 || r.FreeCores < 0 || r.Nodes.Total <= 0 {
					t.Fatalf("impossible record %+v", r)
				}
			}
		}
	})
}

func FuzzParseQueue(f *testing.F) {
	addFixtures(f, "squeue-queue-alpha.txt")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseQueue(b) })
}

func FuzzParseSacct(f *testing.F) {
	addFixtures(f, "sacct-alpha.txt", "sacct-alpha-finished.txt")
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := ParseSacct(b, utc)
		if err == nil {
			for id, s := range got {
				if id == "" || s.JobID != id || s.ExitCode < 0 {
					t.Fatalf("bad status %q %+v", id, s)
				}
			}
		}
	})
}

func FuzzParseSqueueJobs(f *testing.F) {
	addFixtures(f, "squeue-jobs-alpha.txt")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseSqueueJobs(b, utc) })
}

func FuzzParseScontrol(f *testing.F) {
	addFixtures(f, "scontrol-oneliner-alpha.txt", "scontrol-multiline-alpha.txt")
	f.Fuzz(func(t *testing.T, b []byte) { _, _ = ParseScontrolJobs(b, utc) })
}

func FuzzParseGres(f *testing.F) {
	for _, s := range []string{"gpu:a100:4(S:0-1)", "gpu:4", "(null)", "gpu:a:2(IDX:0-1),gpu:b:1", "shard:64K"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		gs, err := ParseGres(s)
		if err == nil {
			for _, g := range gs {
				if g.Count < 0 || g.Name == "" {
					t.Fatalf("bad gres %+v from %q", g, s)
				}
			}
		}
	})
}

func FuzzParseSubmitEstimate(f *testing.F) {
	f.Add([]byte("123;alpha\n"), fixture(f, "sbatch-test-only.stderr.txt"))
	f.Fuzz(func(t *testing.T, out, errb []byte) {
		_, _ = ParseSubmit(dialect.Output{Stdout: out, Stderr: errb})
		_, _ = ParseEstimate(dialect.Output{Stdout: out, Stderr: errb}, nil)
	})
}
