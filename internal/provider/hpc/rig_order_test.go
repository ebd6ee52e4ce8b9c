package hpc

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// TestRigSmallestFirstOrdersOwnJobs: on beta with order_own_jobs: smallest-first, the
// node's 4 GPUs are held; a 2-GPU job of 2 minutes (4 GPU-minutes: nice 64) is
// submitted, then a 1-GPU job of 1 minute (nice 0). Slurm puts the later, smaller job
// ahead (a higher priority). A new 2-GPU job of 1 minute (nice 32) stands behind the
// small job and ahead of the niced one, so the provider plans it beside the small job
// when the node frees; counted behind both (as the user's lowest queued job, the plan
// before nice was read) it would wait for the small job's minute.
func TestRigSmallestFirstOrdersOwnJobs(t *testing.T) {
	p, _ := rigProvider(t, "beta", "ssh")
	WithRuntimePredictions(false)(p)
	p.sys.OrderOwnJobs = site.OrderSmallestFirst
	ctx := context.Background()
	submit := func(what string, gpus int, wall time.Duration, cmd string) string {
		t.Helper()
		s := spec(t, what, "gpuA100", cmd, wall)
		s.GPUs = gpus
		id, err := p.Submit(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{id}) })
		return id
	}
	block := submit("soblock", 4, 2*time.Minute, "sleep 100")
	waitState(t, p, block, 60*time.Second, func(s model.JobState) bool { return s == model.JobRunning })
	big := submit("sobig", 2, 2*time.Minute, "true")
	small := submit("sosmall", 1, time.Minute, "true")
	waitState(t, p, small, 30*time.Second, func(s model.JobState) bool { return s == model.JobPending })

	out, err := p.run(ctx, []string{"squeue", "--noheader", "--jobs=" + big + "," + small, "--format=%i|%Q|%y"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	prio, nice := map[string]int64{}, map[string]int64{}
	for _, l := range strings.Fields(string(out.Stdout)) {
		f := strings.Split(l, "|")
		if len(f) != 3 {
			t.Fatalf("squeue line %q", l)
		}
		prio[f[0]], _ = strconv.ParseInt(f[1], 10, 64)
		nice[f[0]], _ = strconv.ParseInt(f[2], 10, 64)
	}
	if nice[big] != 2*site.DefaultOrderNiceStep || nice[small] != 0 {
		t.Errorf("nice: the 2-GPU job %d, the 1-GPU job %d; want %d and 0", nice[big], nice[small], 2*site.DefaultOrderNiceStep)
	}
	if prio[small] <= prio[big] {
		t.Errorf("priority: the later 1-GPU job %d, the niced 2-GPU job %d; want the small one ahead", prio[small], prio[big])
	}

	probe := spec(t, "soprobe", "gpuA100", "true", time.Minute)
	probe.GPUs = 2
	est, err := p.EstimateStarts(ctx, []model.JobSpec{probe})
	if err != nil || est[0].Err != nil {
		t.Fatalf("estimate: %v %v", err, est[0].Err)
	}
	st, err := p.Status(ctx, []string{block})
	if err != nil {
		t.Fatal(err)
	}
	free := st[block].Start.Add(2 * time.Minute)
	if st[block].Start.IsZero() {
		t.Fatalf("the blocker has no start: %+v", st[block])
	}
	if d := est[0].Start.Sub(free); d < -5*time.Second || d > 30*time.Second {
		t.Errorf("a new 2-GPU job is estimated to start %v after the node frees (at %v); want about then",
			d.Round(time.Second), free.Format(time.TimeOnly))
	}
}
