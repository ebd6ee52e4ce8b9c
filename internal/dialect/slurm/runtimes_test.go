package slurm

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
)

// The rig's sacct -P output for RuntimeHistoryCommand's format (Slurm 22.05).
const rigHistory = `26046|00:00:02|00:05:00
26053|00:00:02|00:05:00
26056|00:00:03|00:05:00
26059|00:00:01|00:05:00
26062|00:00:02|00:05:00
`

func TestParseRuntimeHistory(t *testing.T) {
	got, err := ParseRuntimeHistory([]byte(rigHistory+"26070|1-02:00:00|UNLIMITED\n26071|00:10:00|Partition_Limit\n26072_3|05:00|10:00\n26073|00:00:02|\n"), false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 9 {
		t.Fatalf("%d jobs, want 9: %+v", len(got), got)
	}
	if j := got[0]; j.ID != "26046" || j.Elapsed != 2*time.Second || j.Limit != 5*time.Minute {
		t.Errorf("first job %+v", j)
	}
	if j := got[5]; j.Elapsed != 26*time.Hour || j.Limit != 0 {
		t.Errorf("unlimited job %+v, want 26h of no limit", j)
	}
	if j := got[6]; j.Limit != 0 {
		t.Errorf("a partition's limit is no ratio: %+v", j)
	}
	if j := got[7]; j.ID != "26072_3" || j.Elapsed != 5*time.Minute || j.Limit != 10*time.Minute {
		t.Errorf("array task %+v", j)
	}
	if j := got[8]; j.Limit != 0 || j.Elapsed != 2*time.Second {
		t.Errorf("a limit not stored yet is no limit: %+v", j)
	}
}

func TestParseRuntimeHistoryMalformed(t *testing.T) {
	for _, in := range []string{
		"26046|00:00:02\n",               // too few fields
		"26046|00:00:02|00:05:00|x\n",    // too many
		"|00:00:02|00:05:00\n",           // no id
		"26046|UNLIMITED|00:05:00\n",     // elapsed is a time, not a limit
		"26046||00:05:00\n",              // no elapsed
		"26046|-00:00:02|00:05:00\n",     // negative
		"26046|00:00:02|soon\n",          // bad limit
		"26046|99999999-00:00:00|1:00\n", // overflow
	} {
		if _, err := ParseRuntimeHistory([]byte(in), false); err == nil {
			t.Errorf("%q was accepted", in)
		} else if !strings.Contains(err.Error(), "sacct line 1") {
			t.Errorf("%q: error %q does not name the line", in, err)
		}
	}
	// A listing cut at the cap loses its last (partial) line, not the whole history.
	got, err := ParseRuntimeHistory([]byte(rigHistory+"26063|00:0"), true)
	if err != nil || len(got) != 5 {
		t.Errorf("cut listing: %d jobs, %v; want the 5 whole lines", len(got), err)
	}
}

// history is n jobs of the given limit, each running frac of it, ids from first.
func history(first, n int, limit time.Duration, frac float64) []RanJob {
	out := make([]RanJob, n)
	for i := range out {
		out[i] = RanJob{ID: fmt.Sprint(first + i), Elapsed: time.Duration(float64(limit) * frac), Limit: limit}
	}
	return out
}

func TestRuntimesPredictFromTheUsersRecentJobs(t *testing.T) {
	if (Runtimes{}).Predict(time.Hour) != time.Hour || (Runtimes{}).Known() {
		t.Fatal("the zero Runtimes must predict the limit")
	}
	if rt := NewRuntimes(history(1, RuntimeMinSamples-1, time.Hour, 0.1)); rt.Known() {
		t.Error("fewer than RuntimeMinSamples jobs predicted something")
	}
	// Enough jobs, but of different limits: none is predicted.
	var mixed []RanJob
	for i := range 2 * RuntimeMinSamples {
		mixed = append(mixed, history(i*10, 1, time.Duration(i+1)*time.Minute, 0.1)...)
	}
	if rt := NewRuntimes(mixed); rt.Known() {
		t.Error("jobs of all different limits predicted something")
	}
	// Two minutes: a quarter; one minute: a half; other limits are not predicted (a
	// user's test jobs say nothing of their long runs).
	hist := append(history(100, 6, 2*time.Minute, 0.25), history(200, 5, time.Minute, 0.5)...)
	rt := NewRuntimes(hist)
	for _, c := range []struct {
		limit, want time.Duration
	}{
		{2 * time.Minute, 30 * time.Second},
		{time.Minute, 30 * time.Second},
		{10 * time.Minute, 10 * time.Minute},
		{0, 0}, // unlimited stays unlimited
	} {
		if got := rt.Predict(c.limit); got != c.want {
			t.Errorf("limit %v: predicted %v, want %v", c.limit, got, c.want)
		}
	}
	// Only the latest RuntimeWindow jobs of a limit count (by job id, whatever the
	// listing's order), however many jobs of other limits came since.
	old := history(1, 200, time.Hour, 1)
	recent := history(1000, RuntimeWindow, time.Hour, 0.1)
	others := history(5000, 3*RuntimeWindow, time.Minute, 0.9)
	if got := NewRuntimes(append(append(recent, others...), old...)).Predict(time.Hour); got != 6*time.Minute {
		t.Errorf("predicted %v from the recent jobs, want 6m", got)
	}
	// A run of jobs that failed at once is not a free machine: at least a twentieth.
	if got := NewRuntimes(history(1, 10, time.Hour, 0)).Predict(time.Hour); got != 3*time.Minute {
		t.Errorf("predicted %v after instant failures, want 3m", got)
	}
	// Jobs without a limit give no ratio.
	if rt := NewRuntimes(history(1, 10, 0, 0.5)); rt.Known() {
		t.Error("jobs without a limit predicted something")
	}
	// Over-run (a job past its limit by the grace time): at most the limit.
	if got := NewRuntimes(history(1, 10, time.Minute, 1.5)).Predict(time.Minute); got != time.Minute {
		t.Errorf("predicted %v, want the limit", got)
	}
}

func TestPlanStartsPredicted(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	rt := NewRuntimes(history(1, 8, 2*time.Minute, 0.25)) // the user's 2-minute jobs run 30 s
	running := func(user string, ran time.Duration) QueuedJob {
		return QueuedJob{ID: "10", Partitions: []string{"gpuA100"}, Running: true, Priority: 100, Start: now.Add(-ran),
			Limit: 2 * time.Minute, Nodes: 1, CPUs: 8, GPUsPerNode: 4, NodeList: []string{"alpha-n1"}, User: user}
	}
	queued := QueuedJob{ID: "11", Partitions: []string{"gpuA100"}, Priority: 99, Limit: 2 * time.Minute, Nodes: 1, CPUs: 8, GPUsPerNode: 4, User: "me", Eligible: true}
	req := []PlanRequest{{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 2, GPUsPerNode: 4, Walltime: 2 * time.Minute}}
	for _, c := range []struct {
		name        string
		jobs        []QueuedJob
		limits, got time.Duration
	}{
		{"my running job ends after its prediction", []QueuedJob{running("me", 10*time.Second)}, 110 * time.Second, 20 * time.Second},
		{"another user's job keeps its limit", []QueuedJob{running("other", 10*time.Second)}, 110 * time.Second, 110 * time.Second},
		// Past its 30 s prediction with 60 s of its limit left: a quarter of that.
		{"past its prediction: a share of what is left", []QueuedJob{running("me", time.Minute)}, time.Minute, 15 * time.Second},
		{"my queued job runs for its prediction", []QueuedJob{running("me", 10*time.Second), queued}, 230 * time.Second, 50 * time.Second},
	} {
		lim := PlanStarts(rigNodes(), c.jobs, "me", now, req)[0]
		got := PlanStartsPredicted(rigNodes(), c.jobs, "me", now, req, rt)[0]
		if lim.Sub(now) != c.limits || got.Sub(now) != c.got {
			t.Errorf("%s: limits %v, predicted %v; want %v, %v", c.name, lim.Sub(now), got.Sub(now), c.limits, c.got)
		}
	}
	// The zero Runtimes is the limits' plan.
	jobs := []QueuedJob{running("me", 10*time.Second), queued}
	if a, b := PlanStarts(rigNodes(), jobs, "me", now, req)[0], PlanStartsPredicted(rigNodes(), jobs, "me", now, req, Runtimes{})[0]; !a.Equal(b) {
		t.Errorf("no history: %v against the limits' %v", b, a)
	}
}

func TestPlanQueuedIsTheJobsOwnPlaceInLine(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	rt := NewRuntimes(history(1, 8, 2*time.Minute, 0.25))
	run := QueuedJob{ID: "10", Partitions: []string{"gpuA100"}, Running: true, Priority: 100, Start: now.Add(-10 * time.Second),
		Limit: 2 * time.Minute, Nodes: 1, CPUs: 8, GPUsPerNode: 4, NodeList: []string{"alpha-n1"}, User: "me"}
	first := QueuedJob{ID: "11", Partitions: []string{"gpuA100"}, Priority: 99, Limit: 2 * time.Minute, Nodes: 1, CPUs: 8, GPUsPerNode: 4, User: "me", Eligible: true}
	second := first
	second.ID, second.Priority = "12", 98
	jobs := []QueuedJob{run, first, second}
	for _, c := range []struct {
		id          string
		rt          Runtimes
		want        time.Duration
		unplannable bool
	}{
		{"11", Runtimes{}, 110 * time.Second, false},
		{"12", Runtimes{}, 230 * time.Second, false},
		{"12", rt, 50 * time.Second, false},
		{"10", Runtimes{}, 0, true}, // running: not queued
		{"99", Runtimes{}, 0, true}, // not listed
	} {
		got := PlanQueued(rigNodes(), jobs, "me", now, c.id, c.rt)
		if c.unplannable != got.IsZero() || !c.unplannable && got.Sub(now) != c.want {
			t.Errorf("job %s (history %v): %v, want %v", c.id, c.rt.Known(), got.Sub(now), c.want)
		}
	}
	// Through the dialect: both plans from the same outputs.
	d := &Slurm{}
	sinfo := []byte("gpuA100|alpha-n1|mixed|64|0/64/0/64|256000|0|gpu:a100:4|gpu:a100:0(IDX:N/A)|1-00:00:00|up|1-infinite|(null)|\n")
	st := func(t time.Time) string { return t.Format("2006-01-02T15:04:05") }
	queue := "10|gpuA100|RUNNING|100|" + st(now.Add(-10*time.Second)) + "|2:00|1|8|gres:gpu:a100:4|alpha-n1|me|None|N/A|N/A|1|cpu=8,mem=32G,node=1,billing=8,gres/gpu=4,gres/gpu:a100=4|0|\n" +
		"11|gpuA100|PENDING|99|N/A|2:00|1|8|gres:gpu:a100:4||me|Priority|N/A|N/A|1|cpu=8,mem=32G,node=1,billing=8,gres/gpu=4,gres/gpu:a100=4|0|\n"
	hist := strings.Repeat("1|00:00:30|00:02:00\n", 8)
	ps, err := d.PlanQueued([]dialect.Output{{Stdout: sinfo}, {Stdout: []byte(queue)}, {Stdout: []byte("me\n")}, {Stdout: []byte(hist)}}, "11", now)
	if err != nil {
		t.Fatal(err)
	}
	if ps.Limits.Sub(now) != 110*time.Second || ps.Predicted.Sub(now) != 20*time.Second || ps.Gain() != 90*time.Second {
		t.Errorf("planned %+v (gain %v), want 110 s on the limits, 20 s predicted", ps, ps.Gain())
	}
}

func FuzzParseRuntimeHistory(f *testing.F) {
	f.Add([]byte(rigHistory), false)
	f.Add([]byte("1|00:00:01|UNLIMITED\n2|1-00:00:00|Partition_Limit\n3|0"), true)
	f.Fuzz(func(t *testing.T, b []byte, cut bool) {
		jobs, err := ParseRuntimeHistory(b, cut)
		if err != nil {
			return
		}
		rt := NewRuntimes(jobs)
		for _, lim := range []time.Duration{0, time.Second, time.Minute, 48 * time.Hour} {
			if p := rt.Predict(lim); p < 0 || p > lim {
				t.Fatalf("limit %v predicted %v", lim, p)
			}
		}
	})
}

// TestPlanStartsReservesWholeNodes: Slurm's backfill reserves a queued job's whole
// node from its planned start, so a lower-priority job may use a free GPU before it
// only if its limit ends by then. Seen on the rig (beta, 02:13:41 UTC): a 3-GPU job
// with 44 s of its limit left, a 2-GPU job queued for the node, and a new 1-GPU job of
// 2 minutes in the free GPU waited for the queued job's start, though the GPUs would
// have sufficed for both.
func TestPlanStartsReservesWholeNodes(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	running := QueuedJob{ID: "22163", Partitions: []string{"cpu"}, Running: true, Priority: 100, Start: now.Add(-16 * time.Second),
		Limit: time.Minute, Nodes: 1, CPUs: 6, GPUsPerNode: 3, NodeList: []string{"alpha-n1"}, User: "me"}
	queued := QueuedJob{ID: "22168", Partitions: []string{"cpu"}, Priority: 99, Limit: time.Minute, Nodes: 1, CPUs: 4, GPUsPerNode: 2, User: "me", Eligible: true}
	one := func(limit time.Duration) PlanRequest {
		return PlanRequest{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 2, GPUsPerNode: 1, Walltime: limit}
	}
	jobs := []QueuedJob{running, queued}
	for _, c := range []struct {
		name  string
		limit time.Duration
		want  time.Duration
	}{
		{"a 2-minute job waits for the queued job's start", 2 * time.Minute, 44 * time.Second},
		{"a job that ends by then backfills now", 40 * time.Second, 0},
	} {
		if got := PlanStarts(rigNodes(), jobs, "me", now, []PlanRequest{one(c.limit)})[0]; got.Sub(now) != c.want {
			t.Errorf("%s: %v, want %v", c.name, got.Sub(now), c.want)
		}
	}
	// With predicted runtimes (18 s of a minute) the running job ends in 2 s, the
	// queued job starts then, and the new job beside it.
	rt := NewRuntimes(history(1, 8, time.Minute, 0.3))
	if got := PlanStartsPredicted(rigNodes(), jobs, "me", now, []PlanRequest{one(2 * time.Minute)}, rt)[0]; got.Sub(now) != 2*time.Second {
		t.Errorf("predicted: %v, want 2s", got.Sub(now))
	}
	// The queued job's own slot: the running job's limit, or its prediction.
	if got := PlanQueued(rigNodes(), jobs, "me", now, "22168", Runtimes{}); got.Sub(now) != 44*time.Second {
		t.Errorf("queued job's slot %v, want 44s", got.Sub(now))
	}
}
