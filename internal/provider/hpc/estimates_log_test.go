package hpc

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// TestEstimateIsLoggedAtDebug runs a real estimate batch (stub Slurm through sh) and
// reads the Debug line it leaves: Slurm's own answer, the two plan times and the wait
// taken, so a rig run's placements can be explained afterwards; and nothing of the
// job's command. At Info the line is not written.
func TestEstimateIsLoggedAtDebug(t *testing.T) {
	now := time.Now().UTC()
	// n1's 4 GPUs are held for one more hour (2 h limit, 1 h in). root's 8 finished
	// jobs ran a quarter of their limits; the running one is past its predicted 30 min,
	// so the plan gives it a quarter of its last hour: 15 min.
	running := "18712|gpu|RUNNING|4294883062|" + now.Add(-time.Hour).Format(stdFmt) + "|2:00:00|1|64|gres:gpu:a100:4|n1|root|None|N/A|N/A|1|cpu=64,mem=250G,node=1,billing=64,gres/gpu=4,gres/gpu:a100=4|0|\n"
	soon := now.Add(time.Minute).In(time.Local).Format(stdFmt)
	spec := model.JobSpec{Name: "j", Partition: "gpu", Nodes: 1, NTasks: 1, CPUsPerTask: 8, GPUs: 1,
		Walltime: model.Duration(time.Hour), Command: "echo secret-command-text"}
	for _, level := range []slog.Level{slog.LevelDebug, slog.LevelInfo} {
		t.Run(level.String(), func(t *testing.T) {
			bin := t.TempDir()
			stub(t, bin, "sbatch", "sbatch: Job 4 to start at "+soon+" using 8 processors on nodes n1 in partition gpu\n", true, 0)
			stub(t, bin, "sinfo", sinfoOut, false, 0)
			stub(t, bin, "squeue", running, false, 0)
			stub(t, bin, "id", "root\n", false, 0)
			stub(t, bin, "sacct", rootQuarter, false, 0)
			var logs bytes.Buffer
			p, err := New(site.System{Name: "X", Kind: site.KindLocal, WorkDir: t.TempDir()},
				WithTransport(&shellSite{bin: bin}), WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: level}))))
			if err != nil {
				t.Fatal(err)
			}
			est, err := p.EstimateStarts(context.Background(), []model.JobSpec{spec})
			if err != nil || est[0].Err != nil {
				t.Fatalf("estimate: %v %v", err, est)
			}
			var line string
			for l := range strings.Lines(logs.String()) {
				if strings.Contains(l, "msg=estimate ") {
					line = l
				}
			}
			if level != slog.LevelDebug {
				if line != "" {
					t.Fatalf("estimate logged at %v: %s", level, line)
				}
				return
			}
			if line == "" {
				t.Fatalf("no estimate line at Debug in:\n%s", logs.String())
			}
			// Slurm says a minute; the plan on the limits an hour; predicted, 15 min. The
			// stubs print times to the second, so the waits are checked to within 2 s.
			if n := strings.Count(line, " system="); n != 1 {
				t.Errorf("estimate line names its system %d times, want once:\n%s", n, line)
			}
			fields := map[string]string{}
			for _, f := range strings.Fields(line) {
				if k, v, ok := strings.Cut(f, "="); ok {
					fields[k] = v
				}
			}
			for k, want := range map[string]string{"system": "X", "partition": "gpu", "gpus": "1",
				"walltime": "1h0m0s", "submissions_recorded": "0"} {
				if fields[k] != want {
					t.Errorf("estimate line: %s=%q, want %q:\n%s", k, fields[k], want, line)
				}
			}
			for k, want := range map[string]time.Duration{"site_wait": time.Minute, "plan_limits_wait": time.Hour,
				"plan_predicted_wait": 15 * time.Minute, "wait": 15 * time.Minute} {
				got, err := time.ParseDuration(fields[k])
				if err != nil || got < want-2*time.Second || got > want+2*time.Second {
					t.Errorf("estimate line: %s=%q, want %v (±2 s):\n%s", k, fields[k], want, line)
				}
			}
			if strings.Contains(logs.String(), "secret-command-text") {
				t.Errorf("the job's command reached the log:\n%s", logs.String())
			}
		})
	}
}
