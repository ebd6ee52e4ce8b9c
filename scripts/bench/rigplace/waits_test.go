package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

func row(cluster, id, name string, submit, start, end int64, gpus int) SacctRow {
	r := SacctRow{Cluster: cluster, JobID: id, Name: name, Submit: time.Unix(submit, 0), State: "COMPLETED", GPUs: gpus}
	if start > 0 {
		r.Start = time.Unix(start, 0)
	}
	if end > 0 {
		r.End = time.Unix(end, 0)
	}
	return r
}

// TestWaitsFromSacct: waits are sacct's start minus the arrival, per job; a Mosaic task
// moved from alpha to beta waits until its first start; a reused job id from before
// the arrival is not mistaken for ours; the lag runs to the first attempt's submit.
func TestWaitsFromSacct(t *testing.T) {
	base := int64(1796130000)
	at := func(off float64) time.Time { return time.Unix(base, 0).Add(time.Duration(off * float64(time.Second))) }
	subs := []Submitted{
		{Job: Job{Index: 0}, Arrival: at(0.4), Keys: []JobKey{{"alpha", "10", "s-00"}}},
		{Job: Job{Index: 1}, Arrival: at(3.2), Keys: []JobKey{{"beta", "7", "s-01"}}},
		// moved: the first attempt was cancelled pending on alpha, the second ran on beta
		{Job: Job{Index: 2}, Arrival: at(5.0), Keys: []JobKey{{"alpha", "11", "m-1"}, {"beta", "8", "m-2"}}},
	}
	rows := []SacctRow{
		row("beta", "7", "old-job", base-5000, base-5000, base-4990, 1), // same id, earlier rig life
		row("alpha", "10", "s-00", base+2, base+12, base+40, 2),         // 2 s in the submitter
		row("beta", "7", "s-01", base+3, base+3, base+20, 1),
		row("alpha", "11", "m-1", base+5, 0, 0, 0),
		row("beta", "8", "m-2", base+30, base+31, base+60, 4),
		row("beta", "9", "someone-else", base, base+1, base+100, 4),
	}
	rs, err := Waits(subs, rows)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		wait    time.Duration
		cluster string
		jobs    int
		lag     time.Duration
	}{{12 * time.Second, "alpha", 1, 2 * time.Second}, {0, "beta", 1, 0}, {26 * time.Second, "beta", 2, 0}}
	for i, w := range want {
		if rs[i].Wait != w.wait || rs[i].Cluster != w.cluster || rs[i].Jobs != w.jobs || rs[i].Lag != w.lag {
			t.Errorf("job %d: %+v, want %+v", i, rs[i], w)
		}
	}
	s := Summarize(rs)
	if s.N != 3 || s.Mean != (38*time.Second)/3 || s.P95 != 26*time.Second || s.Max != 26*time.Second || s.PerSite["beta"] != 2 || s.Moved != 1 || s.MeanLag != (2*time.Second)/3 {
		t.Fatalf("summary %+v", s)
	}

	ours := map[[2]string]bool{{"alpha", "10"}: true, {"beta", "7"}: true, {"alpha", "11"}: true, {"beta", "8"}: true}
	cpuJob := row("alpha", "12", "cpu-user", base+50, base+50, 0, 0) // still running
	cpuJob.CPUs = 24
	rows[5].CPUs = 8
	f := ForeignUse(append(rows, cpuJob), ours, time.Unix(base, 0), time.Unix(base+60, 0))
	// someone-else: 4 GPUs and 8 cores from +1 to +60 inside the window (it ran on to
	// +100); cpu-user: 24 cores from +50 to the window's end; the old job ended long
	// before the window.
	if f.Jobs != 2 || f.GPUJobs != 1 || f.GPUSeconds != 4*59 || f.CPUSeconds != 8*59+24*10 || len(f.Names) != 1 || f.Names[0] != "beta/someone-else" {
		t.Fatalf("foreign %+v", f)
	}
}

func TestWaitsRefusesWhatItCannotMeasure(t *testing.T) {
	base := int64(1796130000)
	arr := time.Unix(base, 0)
	for _, tc := range []struct {
		name string
		sub  Submitted
		rows []SacctRow
		want string
	}{
		{"not in sacct yet", Submitted{Arrival: arr, Keys: []JobKey{{"alpha", "10", "s-00"}}}, nil, "not in sacct"},
		{"other name under our id", Submitted{Arrival: arr, Keys: []JobKey{{"alpha", "10", "s-00"}}}, []SacctRow{row("alpha", "10", "x", base, base+1, base+2, 1)}, "not in sacct"},
		{"other cluster", Submitted{Arrival: arr, Keys: []JobKey{{"alpha", "10", "s-00"}}}, []SacctRow{row("beta", "10", "s-00", base, base+1, base+2, 1)}, "not in sacct"},
		{"submitted before the arrival", Submitted{Arrival: arr, Keys: []JobKey{{"alpha", "10", "s-00"}}}, []SacctRow{row("alpha", "10", "s-00", base-2, base+1, base+2, 1)}, "not in sacct"},
		{"never started", Submitted{Arrival: arr, Keys: []JobKey{{"alpha", "10", "s-00"}}}, []SacctRow{row("alpha", "10", "s-00", base, 0, 0, 0)}, "started"},
		{"no job at all", Submitted{Arrival: arr}, nil, "no Slurm job"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Waits([]Submitted{tc.sub}, tc.rows)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSummarizeP95IsNearestRank: of 20 waits 1..20 s the p95 is the 19th; of 10 it is
// the largest; the mean is exact.
func TestSummarizeP95IsNearestRank(t *testing.T) {
	mk := func(n int) []Result {
		rs := make([]Result, n)
		for i := range rs {
			rs[n-1-i] = Result{Wait: time.Duration(i+1) * time.Second, Cluster: "alpha", Jobs: 1} // unsorted on purpose
		}
		return rs
	}
	if s := Summarize(mk(20)); s.P95 != 19*time.Second || s.Mean != 10500*time.Millisecond || s.Max != 20*time.Second {
		t.Fatalf("20 waits: %+v", s)
	}
	if s := Summarize(mk(10)); s.P95 != 10*time.Second {
		t.Fatalf("10 waits: p95 %s", s.P95)
	}
	if s := Summarize(nil); s.N != 0 || s.Mean != 0 {
		t.Fatalf("no waits: %+v", s)
	}
	if !math.IsNaN(Ratio(time.Second, 0)) || Ratio(3*time.Second, 4*time.Second) != 0.75 {
		t.Fatal("ratio")
	}
}
