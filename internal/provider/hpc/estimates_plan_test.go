package hpc

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
)

// shellSite runs each remote command with the real sh, its PATH led by a directory of
// stub Slurm commands (sbatch, sinfo, squeue, id) that print captured-format outputs.
type shellSite struct {
	bin   string
	calls [][]string
}

func (s *shellSite) Run(ctx context.Context, argv []string, stdin io.Reader) (transport.Result, error) {
	s.calls = append(s.calls, argv)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "PATH="+s.bin+":"+os.Getenv("PATH"))
	cmd.Stdin = stdin
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	rc := 0
	if ee, ok := err.(*exec.ExitError); ok {
		rc, err = ee.ExitCode(), nil
	}
	return transport.Result{Stdout: out.Bytes(), Stderr: errb.Bytes(), ExitCode: rc}, err
}

// stub writes an executable bin/name that prints body to stdout (toStderr: stderr,
// as sbatch --test-only does) and exits with rc.
func stub(t *testing.T, bin, name, body string, toStderr bool, rc int) {
	t.Helper()
	data := filepath.Join(bin, name+".out")
	if err := os.WriteFile(data, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	redir := ""
	if toStderr {
		redir = " >&2"
	}
	sh := "#!/bin/sh\ncat '" + data + "'" + redir + "\nexit " + string(rune('0'+rc)) + "\n"
	if err := os.WriteFile(filepath.Join(bin, name), []byte(sh), 0o700); err != nil {
		t.Fatal(err)
	}
}

// rootQuarter is a runtime history of root's: 8 jobs that ran 30 min of 2 h.
var rootQuarter = strings.Repeat("18000|00:30:00|02:00:00\n", 8)

// PlanCapLines of the running line reach the dialect's plan output cap.
const PlanCapLines = (2<<20)/80 + 1

const stdFmt = "2006-01-02T15:04:05"

// TestEstimateStartsPlansBehindTheQueue runs EstimateStarts' real remote command
// (estimateScript + planScript) through sh against stub Slurm commands printing the
// rig's formats, and reads it with the real parsers.
func TestEstimateStartsPlansBehindTheQueue(t *testing.T) {
	now := time.Now().UTC()
	// n1 (64 cores, 4 GPUs; sinfoOut) is held by a running job of 64 cores and 4 GPUs
	// for one more hour; a queued job of 4 GPUs and 2 hours waits ahead.
	running := "18712|gpu|RUNNING|4294883062|" + now.Add(-time.Hour).Format(stdFmt) + "|2:00:00|1|64|gres:gpu:a100:4|n1|root|None|N/A|N/A|1|cpu=64,mem=250G,node=1,billing=64,gres/gpu=4,gres/gpu:a100=4|0|\n"
	pending := "18727|gpu|PENDING|4294883047|N/A|2:00:00|1|8|gres:gpu:a100:4||root|Priority|N/A|N/A|1|cpu=8,mem=32G,node=1,billing=8,gres/gpu=4,gres/gpu:a100=4|0|\n"
	// Only the GPUs are held: 8 of 64 cores, all 4 GPUs, one more hour.
	gpuHeld := "18712|gpu|RUNNING|4294883062|" + now.Add(-time.Hour).Format(stdFmt) + "|2:00:00|1|8|gres:gpu:a100:4|n1|root|None|N/A|N/A|1|cpu=8,mem=32G,node=1,billing=8,gres/gpu=4,gres/gpu:a100=4|0|\n"
	soon := now.Add(time.Minute).In(time.Local).Format(stdFmt)
	late := now.Add(10 * time.Hour).In(time.Local).Format(stdFmt)
	slurmSays := func(at string) string {
		return "sbatch: Job 4 to start at " + at + " using 8 processors on nodes n1 in partition gpu\n"
	}
	spec := model.JobSpec{Name: "j", Partition: "gpu", Nodes: 1, NTasks: 1, CPUsPerTask: 8, GPUs: 1,
		Walltime: model.Duration(time.Hour), Command: "true"}
	for _, tc := range []struct {
		name          string
		sbatch, queue string
		queueRC       int
		idOut         string
		gpus          int    // the specs' GPUs (1 unless set; -1: none)
		hist          string // the user's runtime history (sacct)
		histRC        int
		// want is the earliest acceptable start, before the latest.
		after, before time.Time
	}{
		{"plan later than Slurm wins", slurmSays(soon), running + pending, 0, "alice\n", 0, "", 0, now.Add(3 * time.Hour).Add(-time.Minute), now.Add(3 * time.Hour).Add(time.Minute)},
		// Slurm's answer carries its allowance for the queue (WillRunQueueAllowance): the
		// pending job's 64 cores (a whole node of the partition's) × 2 h over 64 cores,
		// 2 h, taken off before the later of it and the plan is taken.
		{"Slurm later than plan wins, less its queue allowance", slurmSays(late), running + pending, 0, "alice\n", 0, "", 0, now.Add(8 * time.Hour).Add(-time.Second), now.Add(8 * time.Hour).Add(time.Second)},
		{"Slurm's queue allowance gives way to the plan", slurmSays(now.Add(4 * time.Hour).In(time.Local).Format(stdFmt)), running + pending, 0, "alice\n", 0, "", 0, now.Add(3 * time.Hour).Add(-time.Minute), now.Add(3 * time.Hour).Add(time.Minute)},
		{"failing listing leaves Slurm's", slurmSays(soon), running, 1, "alice\n", 0, "", 0, now.Add(time.Minute - time.Second), now.Add(time.Minute + time.Second)},
		{"garbled listing leaves Slurm's", slurmSays(soon), "18712|gpu|RUNNING|garbage\n", 0, "alice\n", 0, "", 0, now.Add(time.Minute - time.Second), now.Add(time.Minute + time.Second)},
		{"cut listing leaves Slurm's", slurmSays(soon), running[:40], 0, "alice\n", 0, "", 0, now.Add(time.Minute - time.Second), now.Add(time.Minute + time.Second)},
		{"the GPUs a job requests are planned", slurmSays(soon), gpuHeld, 0, "alice\n", 0, "", 0, now.Add(time.Hour - time.Minute), now.Add(time.Hour + time.Minute)},
		{"a job without GPUs passes GPU-held cores", slurmSays(soon), gpuHeld, 0, "alice\n", -1, "", 0, now.Add(time.Minute - time.Second), now.Add(time.Minute + time.Second)},
		{"a listing at the cap leaves Slurm's", slurmSays(soon), strings.Repeat(running, PlanCapLines), 0, "alice\n", 0, "", 0, now.Add(time.Minute - time.Second), now.Add(time.Minute + time.Second)},
		{"no user leaves Slurm's", slurmSays(soon), running + pending, 0, "", 0, "", 0, now.Add(time.Minute - time.Second), now.Add(time.Minute + time.Second)},
		// root's jobs run a quarter of their limits: the running one (past its 30 min)
		// a quarter of its last hour, 15 min; the queued one 30 min after it; the new
		// 1-hour job 15 min after that. The plan on the limits says 3 h.
		{"predicted runtimes bring the plan forward", slurmSays(soon), running + pending, 0, "root\n", 0, rootQuarter, 0, now.Add(45*time.Minute - time.Minute), now.Add(45*time.Minute + time.Minute)},
		{"another user's history is not theirs", slurmSays(soon), running + pending, 0, "alice\n", 0, rootQuarter, 0, now.Add(3*time.Hour - time.Minute), now.Add(3*time.Hour + time.Minute)},
		{"failing history leaves the limits' plan", slurmSays(soon), running + pending, 0, "root\n", 0, rootQuarter, 1, now.Add(3*time.Hour - time.Minute), now.Add(3*time.Hour + time.Minute)},
		{"Slurm's later answer keeps the gain only", slurmSays(late), running + pending, 0, "root\n", 0, rootQuarter, 0, now.Add(10*time.Hour - 2*time.Hour - 2*time.Hour - 15*time.Minute - time.Minute), now.Add(10*time.Hour - 2*time.Hour - 2*time.Hour - 15*time.Minute + time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			stub(t, bin, "sbatch", tc.sbatch, true, 0)
			stub(t, bin, "sinfo", sinfoOut, false, 0)
			stub(t, bin, "squeue", tc.queue, false, tc.queueRC)
			stub(t, bin, "id", tc.idOut, false, 0)
			stub(t, bin, "sacct", tc.hist, false, tc.histRC)
			spec := spec
			switch {
			case tc.gpus < 0:
				spec.GPUs = 0
			case tc.gpus > 0:
				spec.GPUs = tc.gpus
			}
			s := &shellSite{bin: bin}
			p, err := New(site.System{Name: "X", Kind: site.KindLocal, WorkDir: t.TempDir()},
				WithTransport(s), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			est, err := p.EstimateStarts(context.Background(), []model.JobSpec{spec, spec})
			if err != nil {
				t.Fatal(err)
			}
			if len(s.calls) != 1 {
				t.Fatalf("%d remote commands, want one (estimates and plan together)", len(s.calls))
			}
			for i, e := range est {
				if e.Err != nil {
					t.Fatalf("estimate %d: %v", i, e.Err)
				}
			}
			// A batch's specs are each planned alone behind the queue.
			for i, e := range est {
				if e.Start.Before(tc.after) || e.Start.After(tc.before) {
					t.Errorf("estimate %d starts %v, want within [%v, %v]", i, e.Start, tc.after, tc.before)
				}
			}
		})
	}
}

// TestQueuedStartMovesSlurmsAnswerByThePredictedGain runs QueuedStart's real remote
// command through sh: squeue --start's answer for a queued job, moved earlier by what
// planning the user's own jobs for their predicted runtimes gains over their limits.
func TestQueuedStartMovesSlurmsAnswerByThePredictedGain(t *testing.T) {
	now := time.Now().UTC()
	// root's 4-GPU job has run 10 min of 2 h; root's queued job 18727 waits for it.
	listing := "18712|gpu|RUNNING|4294883062|" + now.Add(-10*time.Minute).Format(stdFmt) + "|2:00:00|1|8|gres:gpu:a100:4|n1|root|None|N/A|N/A|1|cpu=8,mem=32G,node=1,billing=8,gres/gpu=4,gres/gpu:a100=4|0|\n" +
		"18727|gpu|PENDING|4294883047|N/A|2:00:00|1|8|gres:gpu:a100:4||root|Resources|N/A|N/A|1|cpu=8,mem=32G,node=1,billing=8,gres/gpu=4,gres/gpu:a100=4|0|\n"
	slurmStart := now.Add(110 * time.Minute).In(time.Local).Format(stdFmt)
	slurmLate := now.Add(200 * time.Minute).In(time.Local).Format(stdFmt)
	for _, tc := range []struct {
		name    string
		start   string // squeue --start's line
		startRC int
		hist    string
		histRC  int
		want    time.Duration // from now; -1: the zero time
		wantErr bool
	}{
		// Predicted 30 min of its 2 h, the running job ends in 20 min, not 110.
		{"predicted gain", slurmStart + "\n", 0, rootQuarter, 0, 20 * time.Minute, false},
		{"no history: Slurm's answer", slurmStart + "\n", 0, "", 0, 110 * time.Minute, false},
		{"failing history: Slurm's answer", slurmStart + "\n", 0, rootQuarter, 1, 110 * time.Minute, false},
		// squeue --start later than the plan (set when the scheduler last looked): the
		// plan's slot, on the limits without a history, predicted with one.
		{"late answer, no history: the limits' slot", slurmLate + "\n", 0, "", 0, 110 * time.Minute, false},
		{"late answer: the predicted slot", slurmLate + "\n", 0, rootQuarter, 0, 20 * time.Minute, false},
		{"not planned yet", "N/A\n", 0, rootQuarter, 0, -1, false},
		{"squeue --start fails", "slurm_load_jobs error: Invalid job id specified\n", 1, rootQuarter, 0, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bin := t.TempDir()
			stub(t, bin, "squeue-listing", listing, false, 0)
			stub(t, bin, "squeue-start", tc.start, tc.startRC != 0, tc.startRC)
			sq := "#!/bin/sh\ncase \" $* \" in *' --start '*) exec '" + bin + "/squeue-start' ;; esac\nexec '" + bin + "/squeue-listing'\n"
			if err := os.WriteFile(filepath.Join(bin, "squeue"), []byte(sq), 0o700); err != nil {
				t.Fatal(err)
			}
			stub(t, bin, "sinfo", sinfoOut, false, 0)
			stub(t, bin, "id", "root\n", false, 0)
			stub(t, bin, "sacct", tc.hist, false, tc.histRC)
			s := &shellSite{bin: bin}
			p, err := New(site.System{Name: "X", Kind: site.KindLocal, WorkDir: t.TempDir()},
				WithTransport(s), WithLogger(slog.New(slog.DiscardHandler)))
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.QueuedStart(context.Background(), "18727")
			if len(s.calls) != 1 {
				t.Fatalf("%d remote commands, want one (start and plan together)", len(s.calls))
			}
			switch {
			case tc.wantErr:
				if err == nil || !strings.Contains(err.Error(), "Invalid job id") {
					t.Fatalf("error %v, want squeue's", err)
				}
			case err != nil:
				t.Fatal(err)
			case tc.want < 0:
				if !got.IsZero() {
					t.Errorf("start %v, want none", got)
				}
			default:
				if d := got.Sub(now); d < tc.want-time.Minute || d > tc.want+time.Minute {
					t.Errorf("start in %v, want %v", d, tc.want)
				}
			}
		})
	}
}
