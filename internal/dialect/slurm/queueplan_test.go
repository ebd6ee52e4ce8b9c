package slurm

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// rigQueue is PlanQueueCommand's output captured on the rig (two partitions, cpu and
// gpuA100, on one node of 64 cores and 4 A100s), trimmed.
const rigQueue = `18717|cpu|PENDING|4294883057|2026-12-01T19:03:43|1:00|1|8|gres:gpu:a100:4||root|Resources
18727|gpuA100|PENDING|4294883047|N/A|2:00|1|6|gres:gpu:a100:3||root|Priority
18712|gpuA100|RUNNING|4294883062|2026-12-01T19:01:43|2:00|1|2|gres:gpu:a100:1|alpha-n1|root|None
18724|gpuA100|RUNNING|4294883050|2026-12-01T19:01:55|1:00|1|4|gres:gpu:a100:2|alpha-n1|root|None
`

func TestParsePlanQueue(t *testing.T) {
	jobs, err := ParsePlanQueue([]byte(rigQueue), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 4 {
		t.Fatalf("%d jobs, want 4", len(jobs))
	}
	j := jobs[0]
	if j.ID != "18717" || j.Running || !j.Eligible || j.GPUsPerNode != 4 || j.CPUs != 8 || j.Limit != time.Minute || j.Partitions[0] != "cpu" || j.User != "root" {
		t.Errorf("queued job: %+v", j)
	}
	r := jobs[2]
	if !r.Running || r.Start != time.Date(2026, 12, 1, 19, 1, 43, 0, time.UTC) || r.Limit != 2*time.Minute || !slices.Equal(r.NodeList, []string{"alpha-n1"}) || r.GPUsPerNode != 1 {
		t.Errorf("running job: %+v", r)
	}
	more := `7|a,b|PENDING|10|N/A|UNLIMITED|2|16|gres/gpu:h100=2,gres/mps:100|(null)|u|Dependency
8|a|PENDING|0|N/A|1:00:00|1|1|N/A||u|JobHeldUser
9|a|SUSPENDED|5|2026-12-01T10:00:00|1-00:00:00|2|128|gres/gpu=4|n[01-02]|v|None
`
	jobs, err = ParsePlanQueue([]byte(more), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if j := jobs[0]; j.Eligible || j.GPUsPerNode != 2 || j.Limit != 0 || !slices.Equal(j.Partitions, []string{"a", "b"}) {
		t.Errorf("dependency job: %+v", j)
	}
	if jobs[1].Eligible {
		t.Errorf("held job eligible: %+v", jobs[1])
	}
	if j := jobs[2]; !j.Running || !slices.Equal(j.NodeList, []string{"n01", "n02"}) || j.GPUsPerNode != 4 || j.Limit != 24*time.Hour {
		t.Errorf("suspended job: %+v", j)
	}
}

func TestParsePlanQueueMalformed(t *testing.T) {
	for name, in := range map[string]string{
		"too few fields":  "1|a|PENDING|1|N/A|1:00|1|1|N/A||u\n",
		"too many fields": "1|a|PENDING|1|N/A|1:00|1|1|N/A||u|None|x\n",
		"empty id":        "|a|PENDING|1|N/A|1:00|1|1|N/A||u|None\n",
		"no partition":    "1||PENDING|1|N/A|1:00|1|1|N/A||u|None\n",
		"unknown state":   "1|a|COMPLETED|1|N/A|1:00|1|1|N/A||u|None\n",
		"bad priority":    "1|a|PENDING|high|N/A|1:00|1|1|N/A||u|None\n",
		"negative prio":   "1|a|PENDING|-3|N/A|1:00|1|1|N/A||u|None\n",
		"bad limit":       "1|a|PENDING|1|N/A|soon|1|1|N/A||u|None\n",
		"zero nodes":      "1|a|PENDING|1|N/A|1:00|0|1|N/A||u|None\n",
		"bad cpus":        "1|a|PENDING|1|N/A|1:00|1|x|N/A||u|None\n",
		"bad gres":        "1|a|PENDING|1|N/A|1:00|1|1|gres:gpu:2(S:0|n1|u|None\n",
		"bad hostlist":    "1|a|RUNNING|1|2026-12-01T10:00:00|1:00|1|1|N/A|n[1-|u|None\n",
		"reversed range":  "1|a|RUNNING|1|2026-12-01T10:00:00|1:00|1|1|N/A|n[3-1]|u|None\n",
	} {
		if _, err := ParsePlanQueue([]byte(in), time.UTC); err == nil {
			t.Errorf("%s: no error for %q", name, in)
		} else if !strings.Contains(err.Error(), "squeue line 1") {
			t.Errorf("%s: error %q does not name the line", name, err)
		}
	}
}

func TestExpandHostlist(t *testing.T) {
	for in, want := range map[string][]string{
		"":                   nil,
		"n1":                 {"n1"},
		"n[1-3,7]":           {"n1", "n2", "n3", "n7"},
		"n[08-10]":           {"n08", "n09", "n10"},
		"r[1-2]-n[1-2]":      {"r1-n1", "r1-n2", "r2-n1", "r2-n2"},
		"a1,b[2-3],c":        {"a1", "b2", "b3", "c"},
		"gpu-[001-002],cpu1": {"gpu-001", "gpu-002", "cpu1"},
	} {
		got, err := ExpandHostlist(in)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("ExpandHostlist(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"n[1-", "n1]", "n[[1]]", "n[a-b]", "n[3-1]", "n[-2]", "n[0-99999999]", "n[1-300]-m[1-300]"} {
		if _, err := ExpandHostlist(bad); err == nil {
			t.Errorf("ExpandHostlist(%q): no error", bad)
		}
	}
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"n[1-3,7]", "r[1-2]-n[01-02]", "a,b", "n[", "x[1-65536]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := ExpandHostlist(s)
		if err == nil && len(names) > maxHostlist {
			t.Fatalf("%d names", len(names))
		}
	})
}

func FuzzParsePlanQueue(f *testing.F) {
	f.Add([]byte(rigQueue))
	f.Add([]byte("1|a|RUNNING|1|2026-12-01T10:00:00|1:00|2|1|gres/gpu=2|n[1-2]|u|None\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		jobs, err := ParsePlanQueue(b, time.UTC)
		if err != nil {
			return
		}
		for _, j := range jobs {
			if j.Nodes < 1 || j.ID == "" || len(j.Partitions) == 0 {
				t.Fatalf("accepted a bad job: %+v", j)
			}
		}
		// Whatever parses can be planned without a panic.
		nodes := []NodeLine{{Partition: "a", Node: "n1", State: "mixed", CPUs: 8, GPUs: 4, PartitionUp: true}}
		PlanStarts(nodes, jobs, "u", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), []PlanRequest{{Partition: "a", Nodes: 1, CPUsPerNode: 1, GPUsPerNode: 1, Walltime: time.Minute}})
	})
}

// rigNodes is one node of 64 cores and 4 GPUs in partitions cpu and gpuA100.
func rigNodes() []NodeLine {
	return []NodeLine{
		{Partition: "cpu", Node: "alpha-n1", State: "mixed", CPUs: 64, GPUs: 4, PartitionUp: true},
		{Partition: "gpuA100", Node: "alpha-n1", State: "mixed", CPUs: 64, GPUs: 4, PartitionUp: true},
	}
}

func TestPlanStartsCountsTheQueueAhead(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	running := QueuedJob{ID: "10", Partitions: []string{"gpuA100"}, Running: true, Priority: 100, Start: now.Add(-10 * time.Second),
		Limit: 2 * time.Minute, Nodes: 1, CPUs: 6, GPUsPerNode: 3, NodeList: []string{"alpha-n1"}, User: "me"}
	queued4 := QueuedJob{ID: "11", Partitions: []string{"cpu"}, Priority: 99, Limit: time.Minute, Nodes: 1, CPUs: 8, GPUsPerNode: 4, User: "me", Eligible: true}
	one := func(wall time.Duration) PlanRequest {
		return PlanRequest{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 2, GPUsPerNode: 1, Walltime: wall}
	}
	free := now.Add(110 * time.Second) // the running job's limit
	cases := []struct {
		name string
		jobs []QueuedJob
		req  PlanRequest
		want time.Time
	}{
		{"one GPU free, nothing queued: now", []QueuedJob{running}, one(2 * time.Minute), now},
		// Slurm's will-run test says "now" here too; the 4-GPU job ahead starts when the
		// running one's limit ends, and a 2-minute job would delay it.
		{"behind a queued 4-GPU job", []QueuedJob{running, queued4}, one(2 * time.Minute), free.Add(time.Minute)},
		{"short enough to backfill before it", []QueuedJob{running, queued4}, one(time.Minute), now},
		{"held jobs are not ahead", []QueuedJob{running, func() QueuedJob { q := queued4; q.Eligible = false; return q }()}, one(2 * time.Minute), now},
		{"two GPUs wait for the running job", []QueuedJob{running}, PlanRequest{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 4, GPUsPerNode: 2, Walltime: time.Minute}, free},
		{"more GPUs than a node has: not planned", []QueuedJob{running}, PlanRequest{Partition: "gpuA100", Nodes: 1, GPUsPerNode: 8, Walltime: time.Minute}, time.Time{}},
		{"unknown partition: not planned", []QueuedJob{running}, PlanRequest{Partition: "nope", Nodes: 1, Walltime: time.Minute}, time.Time{}},
	}
	for _, c := range cases {
		got := PlanStarts(rigNodes(), c.jobs, "me", now, []PlanRequest{c.req})
		if !got[0].Equal(c.want) {
			t.Errorf("%s: start %v, want %v", c.name, got[0].Sub(now), c.want.Sub(now))
		}
	}
}

func TestPlanStartsPriorityOfANewJob(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	full := QueuedJob{ID: "1", Partitions: []string{"gpuA100"}, Running: true, Priority: 1, Start: now, Limit: time.Minute,
		Nodes: 1, CPUs: 8, GPUsPerNode: 4, NodeList: []string{"alpha-n1"}, User: "other"}
	// Another user's queued job of low priority, and one of ours above it.
	low := QueuedJob{ID: "2", Partitions: []string{"gpuA100"}, Priority: 5, Limit: time.Hour, Nodes: 1, CPUs: 8, GPUsPerNode: 4, User: "other", Eligible: true}
	mine := QueuedJob{ID: "3", Partitions: []string{"gpuA100"}, Priority: 50, Limit: time.Minute, Nodes: 1, CPUs: 8, GPUsPerNode: 4, User: "me", Eligible: true}
	req := []PlanRequest{{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 2, GPUsPerNode: 4, Walltime: time.Minute}}
	// Our own queued job tells our priority (50): the other user's job (5) is not ahead.
	if got := PlanStarts(rigNodes(), []QueuedJob{full, low, mine}, "me", now, req)[0]; !got.Equal(now.Add(2 * time.Minute)) {
		t.Errorf("with our own job queued: %v, want 2m (after ours, before theirs)", got.Sub(now))
	}
	// With no job of ours queued every queued job counts (pessimistic).
	if got := PlanStarts(rigNodes(), []QueuedJob{full, low}, "me", now, req)[0]; !got.Equal(now.Add(61 * time.Minute)) {
		t.Errorf("with none of ours queued: %v, want 1h1m", got.Sub(now))
	}
}

func TestPlanStartsMultiNodeAndDownNodes(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	nodes := []NodeLine{
		{Partition: "p", Node: "n1", State: "idle", CPUs: 4, PartitionUp: true},
		{Partition: "p", Node: "n2", State: "mixed", CPUs: 4, PartitionUp: true},
		{Partition: "p", Node: "n3", State: "down*", CPUs: 4, PartitionUp: true},
	}
	busy := QueuedJob{ID: "1", Partitions: []string{"p"}, Running: true, Priority: 1, Start: now, Limit: 30 * time.Minute, Nodes: 1, CPUs: 4, NodeList: []string{"n2"}}
	req := []PlanRequest{{Partition: "p", Nodes: 2, CPUsPerNode: 4, Walltime: time.Hour}}
	if got := PlanStarts(nodes, []QueuedJob{busy}, "me", now, req)[0]; !got.Equal(now.Add(30 * time.Minute)) {
		t.Errorf("two nodes, one busy for 30m, one down: %v, want 30m", got.Sub(now))
	}
	req[0].Nodes = 3
	if got := PlanStarts(nodes, []QueuedJob{busy}, "me", now, req)[0]; !got.IsZero() {
		t.Errorf("three nodes with one down: %v, want not planned", got)
	}
}

func TestPlanStartsBounds(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	whole := PlanRequest{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 64, Walltime: time.Minute}
	// More queued jobs than MaxPlanQueued: the highest priorities are planned, the rest
	// not counted (each takes the whole node for a minute).
	var jobs []QueuedJob
	for i := range MaxPlanQueued + 5 {
		jobs = append(jobs, QueuedJob{ID: strconv.Itoa(100 + i), Partitions: []string{"gpuA100"}, Priority: int64(10_000 - i),
			Limit: time.Minute, Nodes: 1, CPUs: 64, Eligible: true})
	}
	if got := PlanStarts(rigNodes(), jobs, "me", now, []PlanRequest{whole})[0]; !got.Equal(now.Add(MaxPlanQueued * time.Minute)) {
		t.Errorf("behind %d whole-node minutes: %v, want %v (the %d highest priorities)", len(jobs), got.Sub(now), time.Duration(MaxPlanQueued)*time.Minute, MaxPlanQueued)
	}
	// A partition larger than MaxPlanNodes is not planned.
	var big []NodeLine
	for i := range MaxPlanNodes + 1 {
		big = append(big, NodeLine{Partition: "big", Node: "n" + strconv.Itoa(i), State: "idle", CPUs: 4, PartitionUp: true})
	}
	if got := PlanStarts(big, nil, "me", now, []PlanRequest{{Partition: "big", Nodes: 1, CPUsPerNode: 1, Walltime: time.Minute}})[0]; !got.IsZero() {
		t.Errorf("a partition of %d nodes was planned: %v", len(big), got)
	}
	// A plan over its work budget is no plan (thousands of running jobs on one node).
	var crowd []QueuedJob
	nodes := []NodeLine{{Partition: "p", Node: "n1", State: "mixed", CPUs: 1 << 20, PartitionUp: true}}
	for i := range 6000 {
		crowd = append(crowd, QueuedJob{ID: strconv.Itoa(i), Partitions: []string{"p"}, Running: true, Priority: 1, Start: now,
			Limit: time.Duration(i+1) * time.Second, Nodes: 1, CPUs: 1, NodeList: []string{"n1"}})
	}
	if got := PlanStarts(nodes, crowd, "me", now, []PlanRequest{{Partition: "p", Nodes: 1, CPUsPerNode: 1 << 20, Walltime: time.Minute}})[0]; !got.IsZero() {
		t.Errorf("a plan over its work budget gave %v", got.Sub(now))
	}
}

func TestPlanStartsOnlyResourceWaitsAreAhead(t *testing.T) {
	now := time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC)
	out := []byte("5|gpuA100|PENDING|9|N/A|1:00:00|1|64|N/A||other|QOSMaxJobsPerUserLimit\n6|gpuA100|PENDING|9|N/A|1:00:00|1|64|N/A||other|Resources\n")
	jobs, err := ParsePlanQueue(out, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if jobs[0].Eligible || !jobs[1].Eligible {
		t.Fatalf("eligible: %v %v, want a job held by its QOS limit not ahead, one waiting for resources ahead", jobs[0].Eligible, jobs[1].Eligible)
	}
	if got := PlanStarts(rigNodes(), jobs, "me", now, []PlanRequest{{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 64, Walltime: time.Minute}})[0]; !got.Equal(now.Add(time.Hour)) {
		t.Errorf("start %v, want 1h (behind the one job waiting for resources only)", got.Sub(now))
	}
}

func TestSlurmPlanStartsRefusesACutListing(t *testing.T) {
	d := &Slurm{}
	cmds, limit := d.PlanCommands()
	if len(cmds) != 4 || limit != PlanOutputCap {
		t.Fatalf("plan commands %v, limit %d", cmds, limit)
	}
	sinfo := []byte("gpuA100|alpha-n1|mixed|64|0/64/0/64|256000|0|gpu:a100:4|gpu:a100:0(IDX:N/A)|1-00:00:00|up|1-infinite|(null)|\n")
	huge := []byte(strings.Repeat("x", PlanOutputCap))
	now := time.Now()
	spec := []model.JobSpec{{Partition: "gpuA100", Nodes: 1, NTasks: 1, CPUsPerTask: 1, Walltime: model.Duration(time.Minute)}}
	if _, err := d.PlanStarts([]dialect.Output{{Stdout: sinfo}, {Stdout: huge}, {Stdout: []byte("me\n")}, {}}, spec, now); err == nil {
		t.Error("a queue listing cut at the cap was planned")
	}
	if _, err := d.PlanStarts([]dialect.Output{{Stdout: sinfo}, {}, {Stdout: []byte("two users\n")}, {}}, spec, now); err == nil {
		t.Error("a garbled user name was accepted")
	}
	if _, err := d.PlanStarts([]dialect.Output{{Stdout: sinfo}, {}, {Stdout: []byte("me\n")}}, spec, now); err == nil {
		t.Error("three outputs for four commands were planned")
	}
	// The runtime history is optional: failing, garbled or cut, the limits plan stands.
	for _, hist := range []dialect.Output{{ExitCode: 1, Stdout: []byte("sacct: error: Problem talking to the database\n")},
		{Stdout: []byte("garbage\n")}, {Stdout: huge}, {}} {
		got, err := d.PlanStarts([]dialect.Output{{Stdout: sinfo}, {}, {Stdout: []byte("me\n")}, hist}, spec, now)
		if err != nil || len(got) != 1 || !got[0].Limits.Equal(now) || !got[0].Predicted.IsZero() {
			t.Errorf("an empty queue, history %q: %v %v, want now and no prediction", truncate(string(hist.Stdout)), got, err)
		}
	}
}
