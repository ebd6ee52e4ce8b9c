package hpc

import (
	"context"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect/slurm"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// rawEstimate is Slurm's own answer (sbatch --test-only) for spec, without the plan.
func rawEstimate(t *testing.T, p *Provider, spec model.JobSpec) time.Time {
	t.Helper()
	ctx := context.Background()
	spec.Tag += "-raw"
	_, files, script, err := p.prepare(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.upload(ctx, files.Script, script); err != nil {
		t.Fatal(err)
	}
	out, err := p.run(ctx, p.d.EstimateCommand(files.Script), nil)
	if err != nil {
		t.Fatal(err)
	}
	at, err := p.d.ParseEstimate(out)
	if err != nil {
		t.Fatal(err)
	}
	return at
}

// TestRigEstimatePlansBehindTheQueue: on beta (not parallel: it has the package's rig
// to itself), a 3-GPU job runs with a 3-minute limit and a 4-GPU job of 1 minute
// queues behind it. Slurm's will-run test (sbatch --test-only, what sbatch -M decides
// on) says a new 1-GPU job of 5 minutes starts now (Slurm 22.05 says "in a minute"),
// in the free GPU; it cannot (it would delay the queued job), and the provider's
// estimate says when it can: after the queued job's minute. A 1-GPU job of 1 minute
// fits before the queued job's slot and is not delayed by the plan.
//
// The rig's history of the user's jobs (its tests' short jobs) would predict the
// blocker to end early: this test plans on the limits (WithRuntimePredictions(false));
// TestRigRuntimeHistory checks the history on the rig.
func TestRigEstimatePlansBehindTheQueue(t *testing.T) {
	p, _ := rigProvider(t, "beta", "ssh")
	WithRuntimePredictions(false)(p)
	ctx := context.Background()
	block := spec(t, "qpblock", "gpuA100", "sleep 170", 3*time.Minute)
	block.GPUs = 3
	bid, err := p.Submit(ctx, block)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{bid}) })
	st := waitState(t, p, bid, 60*time.Second, func(s model.JobState) bool { return s == model.JobRunning })
	started := time.Now()
	if !st.Start.IsZero() {
		started = st.Start
	}
	queued := spec(t, "qpnext", "gpuA100", "true", time.Minute)
	queued.GPUs = 4
	qid, err := p.Submit(ctx, queued)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{qid}) })
	waitState(t, p, qid, 30*time.Second, func(s model.JobState) bool { return s == model.JobPending })

	long := spec(t, "qplong", "gpuA100", "true", 5*time.Minute)
	long.GPUs = 1
	short := spec(t, "qpshort", "gpuA100", "true", time.Minute)
	short.GPUs = 1
	rawShort := rawEstimate(t, p, short)
	if raw := rawEstimate(t, p, long); time.Until(raw) > 90*time.Second {
		// The premise of the plan: docs/PLACEMENT.md ("On real Slurm").
		t.Errorf("sbatch --test-only says the 5-minute job starts in %v; Slurm's will-run test was expected to ignore the queued job (start within a minute)", time.Until(raw).Round(time.Second))
	}
	slot := started.Add(3 * time.Minute) // the queued job starts when the blocker's limit ends
	got, err := p.EstimateStarts(ctx, []model.JobSpec{long, short})
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range got {
		if e.Err != nil {
			t.Fatalf("spec %d: %v", i, e.Err)
		}
	}
	if want := slot.Add(time.Minute); got[0].Start.Before(want.Add(-5*time.Second)) || got[0].Start.After(want.Add(time.Minute)) {
		t.Errorf("the 2-minute job: estimate %v from now, want after the queued job's minute (%v from now)",
			time.Until(got[0].Start).Round(time.Second), time.Until(want).Round(time.Second))
	}
	if d := got[1].Start.Sub(rawShort); d > 10*time.Second {
		t.Errorf("the 1-minute job fits before the queued job's slot: estimate %v after Slurm's own, want Slurm's own", d.Round(time.Second))
	}
	// The single estimate is planned too (replanning asks it for one job).
	one, err := p.EstimateStart(ctx, long)
	if err != nil {
		t.Fatal(err)
	}
	if one.Sub(got[0].Start).Abs() > 10*time.Second {
		t.Errorf("single estimate %v, batch %v", one, got[0].Start)
	}
}

// TestRigRuntimeHistory: the runtime history command (sacct on Slurm 22.05) lists a job
// of the user's that just completed, with its elapsed time and limit, and the plan
// commands' outputs on the rig give a prediction.
func TestRigRuntimeHistory(t *testing.T) {
	p, _ := rigProvider(t, "alpha", "ssh")
	ctx := context.Background()
	s := spec(t, "rthist", "cpu", "sleep 2", 7*time.Minute)
	id, err := p.Submit(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{id}) })
	waitState(t, p, id, 60*time.Second, func(s model.JobState) bool { return s.Final() })
	var found *slurm.RanJob
	for try := 0; try < 30 && found == nil; try++ { // slurmdbd stores the end within seconds
		out, err := p.run(ctx, slurm.RuntimeHistoryCommand(), nil)
		if err != nil || out.ExitCode != 0 {
			t.Fatalf("runtime history: %v, exit %d: %s", err, out.ExitCode, out.Stderr)
		}
		hist, err := slurm.ParseRuntimeHistory(out.Stdout, false)
		if err != nil {
			t.Fatal(err)
		}
		for i := range hist {
			// For a few seconds after a short job ends, slurmdbd lists it without its
			// limit (no ratio: the predictor skips it).
			if hist[i].ID == id && hist[i].Limit > 0 {
				found = &hist[i]
			}
		}
		if found == nil {
			time.Sleep(time.Second)
		}
	}
	if found == nil {
		t.Fatalf("job %s is not in the user's runtime history", id)
	}
	if found.Limit != 7*time.Minute || found.Elapsed < time.Second || found.Elapsed > 30*time.Second {
		t.Errorf("job %s: ran %v of %v, want about 2 s of 7m", id, found.Elapsed, found.Limit)
	}
}

// TestRigEstimateTakesOffSlurmsQueueAllowance: on beta, a 3-GPU job runs (3-minute
// limit) and two 4-GPU jobs of 2 and 3 minutes queue behind it in gpuA100. A new 1-GPU
// job of 1 minute fits in the free GPU before the first queued job's slot, and Slurm's
// backfill starts it at once; but sbatch --test-only promises it a start 5 minutes
// away, the queued jobs' limits added one after the other (slurmctld's
// _delayed_job_start_time, slurm.WillRunQueueAllowance). The provider's estimate takes
// that allowance off Slurm's answer and says "now", and the job, submitted, starts.
func TestRigEstimateTakesOffSlurmsQueueAllowance(t *testing.T) {
	p, _ := rigProvider(t, "beta", "ssh")
	WithRuntimePredictions(false)(p)
	ctx := context.Background()
	submit := func(s model.JobSpec) string {
		t.Helper()
		id, err := p.Submit(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{id}) })
		return id
	}
	block := spec(t, "qablock", "gpuA100", "sleep 170", 3*time.Minute)
	block.GPUs = 3
	waitState(t, p, submit(block), 60*time.Second, func(s model.JobState) bool { return s == model.JobRunning })
	for i, lim := range []time.Duration{2 * time.Minute, 3 * time.Minute} {
		q := spec(t, "qaqueued"+string(rune('a'+i)), "gpuA100", "true", lim)
		q.GPUs = 4
		waitState(t, p, submit(q), 30*time.Second, func(s model.JobState) bool { return s == model.JobPending })
	}
	probe := spec(t, "qaprobe", "gpuA100", "true", time.Minute)
	probe.GPUs = 1
	if in := time.Until(rawEstimate(t, p, probe)); in < 4*time.Minute+30*time.Second || in > 5*time.Minute+30*time.Second {
		// The premise: slurmctld adds the queued jobs' 2 + 3 minutes (docs/PLACEMENT.md).
		t.Errorf("sbatch --test-only says the 1-GPU job starts in %v; Slurm was expected to add the queued jobs' limits, 5m", in.Round(time.Second))
	}
	got, err := p.EstimateStart(ctx, probe)
	if err != nil {
		t.Fatal(err)
	}
	if in := time.Until(got); in > 20*time.Second {
		t.Errorf("estimate: starts in %v, want now (Slurm's queue allowance taken off; the job fits before the queued jobs' slot)", in.Round(time.Second))
	}
	sent := time.Now()
	st := waitState(t, p, submit(probe), 60*time.Second, func(s model.JobState) bool {
		return s == model.JobRunning || s == model.JobCompleting || s == model.JobSucceeded
	})
	if !st.Start.IsZero() && st.Start.Sub(sent) > 30*time.Second {
		t.Errorf("the 1-GPU job started %v after it was sent; the estimate said now", st.Start.Sub(sent).Round(time.Second))
	}
}
