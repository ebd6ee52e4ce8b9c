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

// gpuLine is a PlanQueueCommand line of the rig's format with the given state, start,
// nodes, node list, reason and the four GPU fields (%b, tres-per-job, tres-per-task and
// tasks, tres-alloc).
func gpuLine(id, state, start string, nodes int, nodeList, reason, perNode, perJob, perTask, tasks, alloc string) string {
	return strings.Join([]string{id, "gpuA100", state, "4294875269", start, "2:00", strconv.Itoa(nodes), "2", perNode, nodeList,
		"root", reason, perJob, perTask, tasks, alloc, "0"}, "|") + "|\n"
}

func TestParsePlanQueue(t *testing.T) {
	jobs, err := ParsePlanQueue(fixture(t, "squeue-plan-alpha.txt"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 {
		t.Fatalf("%d jobs, want 2", len(jobs))
	}
	if j := jobs[0]; j.ID != "26513" || j.Running || !j.Eligible || j.GPUsPerNode != 1 || j.CPUs != 2 || j.Limit != time.Minute || j.Partitions[0] != "gpuA100" || j.User != "root" {
		t.Errorf("queued job: %+v", j)
	}
	if r := jobs[1]; !r.Running || r.Start != time.Date(2026, 12, 2, 1, 38, 9, 0, time.UTC) || r.Limit != 2*time.Minute || !slices.Equal(r.NodeList, []string{"alpha-n1"}) || r.GPUsPerNode != 1 {
		t.Errorf("running job: %+v", r)
	}
	jobs, err = ParsePlanQueue(fixture(t, "squeue-plan-beta.txt"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 2 || jobs[0].Running || !jobs[0].Eligible || jobs[0].GPUsPerNode != 2 || !jobs[1].Running || jobs[1].GPUsPerNode != 3 || jobs[1].CPUs != 6 {
		t.Errorf("beta: %+v", jobs)
	}
	more := `7|a,b|PENDING|10|N/A|UNLIMITED|2|16|gres/gpu:h100=2,gres/mps=100|(null)|u|Dependency|N/A|N/A|N/A|N/A|0|
8|a|PENDING|0|N/A|1:00:00|1|1|N/A||u|JobHeldUser|N/A|N/A|1|cpu=1,mem=4G,node=1,billing=1|0|
9|a|SUSPENDED|5|2026-12-01T10:00:00|1-00:00:00|2|128|gres/gpu=4|n[01-02]|v|None|N/A|N/A|2|cpu=128,node=2,gres/gpu=8|0|
`
	jobs, err = ParsePlanQueue([]byte(more), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if j := jobs[0]; j.Eligible || j.GPUsPerNode != 2 || j.Limit != 0 || !slices.Equal(j.Partitions, []string{"a", "b"}) {
		t.Errorf("dependency job: %+v", j)
	}
	if jobs[1].Eligible || jobs[1].GPUsPerNode != 0 {
		t.Errorf("held job without GPUs: %+v", jobs[1])
	}
	if j := jobs[2]; !j.Running || !slices.Equal(j.NodeList, []string{"n01", "n02"}) || j.GPUsPerNode != 4 || j.Limit != 24*time.Hour {
		t.Errorf("suspended job: %+v", j)
	}
}

// TestParsePlanQueueGPUsHoweverAsked: a job's GPUs per node come from what it holds
// (running: tres-alloc) or asked for (per node, per job, per task × tasks, else its
// requested TRES), spread over its nodes.
func TestParsePlanQueueGPUsHoweverAsked(t *testing.T) {
	const at = "2026-12-02T01:38:09"
	for _, c := range []struct {
		name string
		line string
		want int
	}{
		{"running --gpus 4: what it holds", gpuLine("1", "RUNNING", at, 1, "alpha-n1", "None", "N/A", "gres:gpu:4", "N/A", "1", "cpu=2,mem=8G,node=1,billing=2,gres/gpu=4,gres/gpu:a100=4"), 4},
		{"running --gpus 3 on 2 nodes: ceil", gpuLine("2", "RUNNING", at, 2, "n[1-2]", "None", "N/A", "gres:gpu:3", "N/A", "1", "cpu=4,node=2,gres/gpu=3"), 2},
		{"running: tres-alloc over %b", gpuLine("3", "RUNNING", at, 1, "n1", "None", "gres:gpu:a100:1", "N/A", "N/A", "1", "cpu=2,gres/gpu=2,gres/gpu:a100=2"), 2},
		{"running without tres-alloc: the request", gpuLine("4", "RUNNING", at, 1, "n1", "None", "N/A", "gres:gpu:2", "N/A", "1", "N/A"), 2},
		{"running: tres-alloc without GPUs", gpuLine("5", "RUNNING", at, 1, "n1", "None", "N/A", "N/A", "N/A", "1", "cpu=2,mem=8G,node=1,billing=2"), 0},
		{"pending per node", gpuLine("6", "PENDING", "N/A", 2, "", "Priority", "gres:gpu:a100:2", "N/A", "N/A", "1", "cpu=2,gres/gpu=4"), 2},
		{"pending --gpus 4 on 1 node", gpuLine("7", "PENDING", "N/A", 1, "", "Resources", "N/A", "gres:gpu:4", "N/A", "1", "cpu=2,gres/gpu=4"), 4},
		{"pending --gpus a100:3 on 2 nodes", gpuLine("8", "PENDING", "N/A", 2, "", "Resources", "N/A", "gres:gpu:a100:3", "N/A", "N/A", "N/A"), 2},
		{"pending later release's form", gpuLine("9", "PENDING", "N/A", 1, "", "Resources", "N/A", "gres/gpu:a100=3", "N/A", "1", "N/A"), 3},
		{"pending --gpus-per-task 1 × 4 tasks on 2 nodes", gpuLine("10", "PENDING", "N/A", 2, "", "Resources", "N/A", "N/A", "gres:gpu:1", "4", "N/A"), 2},
		{"pending per task, no task count: one", gpuLine("11", "PENDING", "N/A", 1, "", "Resources", "N/A", "N/A", "cpu=4,gres:gpu:2", "N/A", "N/A"), 2},
		{"pending --gpus-per-socket: requested TRES", gpuLine("12", "PENDING", "N/A", 1, "", "Resources", "N/A", "N/A", "N/A", "1", "cpu=2,node=1,gres/gpu=2"), 2},
		{"pending other GRES only", gpuLine("13", "PENDING", "N/A", 1, "", "Resources", "gres:mps:100", "N/A", "N/A", "1", "cpu=2,gres/mps=100"), 0},
		{"pending two types per node add up", gpuLine("14", "PENDING", "N/A", 1, "", "Resources", "gres:gpu:a100:1,gres:gpu:v100:2", "N/A", "N/A", "1", "N/A"), 3},
		{"pending bare gpu: one", gpuLine("15", "PENDING", "N/A", 1, "", "Resources", "gres:gpu", "N/A", "N/A", "1", "N/A"), 1},
		{"pending MIG type, count", gpuLine("16", "PENDING", "N/A", 1, "", "Resources", "gres:gpu:3g.20gb:2(IDX:0-1)", "N/A", "N/A", "1", "N/A"), 2},
	} {
		jobs, err := ParsePlanQueue([]byte(c.line), time.UTC)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if jobs[0].GPUsPerNode != c.want {
			t.Errorf("%s: %d GPUs per node, want %d", c.name, jobs[0].GPUsPerNode, c.want)
		}
	}
}

func TestParsePlanQueueMalformed(t *testing.T) {
	pend := func(perNode, perJob, perTask, tasks, alloc string) string {
		return gpuLine("1", "PENDING", "N/A", 1, "", "None", perNode, perJob, perTask, tasks, alloc)
	}
	for name, in := range map[string]string{
		"too few fields":          "1|a|PENDING|1|N/A|1:00|1|1|N/A||u|None|N/A|N/A|1|\n",
		"too many fields":         "1|a|PENDING|1|N/A|1:00|1|1|N/A||u|None|N/A|N/A|1|N/A|0|x|\n",
		"the old --format line":   "1|a|PENDING|1|N/A|1:00|1|1|N/A||u|None\n",
		"empty id":                "|a|PENDING|1|N/A|1:00|1|1|N/A||u|None|N/A|N/A|1|N/A|0|\n",
		"no partition":            "1||PENDING|1|N/A|1:00|1|1|N/A||u|None|N/A|N/A|1|N/A|0|\n",
		"unknown state":           "1|a|COMPLETED|1|N/A|1:00|1|1|N/A||u|None|N/A|N/A|1|N/A|0|\n",
		"bad priority":            "1|a|PENDING|high|N/A|1:00|1|1|N/A||u|None|N/A|N/A|1|N/A|0|\n",
		"negative prio":           "1|a|PENDING|-3|N/A|1:00|1|1|N/A||u|None|N/A|N/A|1|N/A|0|\n",
		"bad limit":               "1|a|PENDING|1|N/A|soon|1|1|N/A||u|None|N/A|N/A|1|N/A|0|\n",
		"zero nodes":              "1|a|PENDING|1|N/A|1:00|0|1|N/A||u|None|N/A|N/A|1|N/A|0|\n",
		"bad cpus":                "1|a|PENDING|1|N/A|1:00|1|x|N/A||u|None|N/A|N/A|1|N/A|0|\n",
		"bad gres":                "1|a|PENDING|1|N/A|1:00|1|1|gres:gpu:2(S:0|n1|u|None|N/A|N/A|1|N/A|0|\n",
		"bad hostlist":            "1|a|RUNNING|1|2026-12-01T10:00:00|1:00|1|1|N/A|n[1-|u|None|N/A|N/A|1|N/A|0|\n",
		"reversed range":          "1|a|RUNNING|1|2026-12-01T10:00:00|1:00|1|1|N/A|n[3-1]|u|None|N/A|N/A|1|N/A|0|\n",
		"without the nice column": "1|a|PENDING|1|N/A|1:00|1|1|N/A||u|None|N/A|N/A|1|N/A|\n",
		"bad nice":                "1|a|PENDING|1|N/A|1:00|1|1|N/A||u|None|N/A|N/A|1|N/A|low|\n",
		"empty nice":              "1|a|PENDING|1|N/A|1:00|1|1|N/A||u|None|N/A|N/A|1|N/A||\n",
		"nice out of range":       "1|a|PENDING|1|N/A|1:00|1|1|N/A||u|None|N/A|N/A|1|N/A|99999999999|\n",
		"per node: empty count":   pend("gres:gpu:", "N/A", "N/A", "1", "N/A"),
		"per node: garbage":       pend("!!", "N/A", "N/A", "1", "N/A"),
		"per node: sign type":     pend("gres:gpu:-1", "N/A", "N/A", "1", "N/A"),
		"per job: bad count":      pend("N/A", "gres/gpu=x", "N/A", "1", "N/A"),
		"per job: negative":       pend("N/A", "gres/gpu=-4", "N/A", "1", "N/A"),
		"per job: overflow":       pend("N/A", "gres:gpu:99999999999999999999", "N/A", "1", "N/A"),
		"per job: over 2^20":      pend("N/A", "gres/gpu=1048577", "N/A", "1", "N/A"),
		"per job: no value":       pend("N/A", "gres/gpu", "N/A", "1", "N/A"),
		"per job: empty item":     pend("N/A", "gres:gpu:1,,cpu=2", "N/A", "1", "N/A"),
		"per task: bare word":     pend("N/A", "N/A", "gpus", "1", "N/A"),
		"per task × tasks > 2^20": pend("N/A", "N/A", "gres:gpu:1024", "2048", "N/A"),
		"bad task count":          pend("N/A", "N/A", "gres:gpu:1", "x", "N/A"),
		"negative task count":     pend("N/A", "N/A", "gres:gpu:1", "-2", "N/A"),
		"alloc: bad GPU count":    pend("N/A", "N/A", "N/A", "1", "cpu=2,gres/gpu=abc"),
		"alloc: typed over 2^20":  pend("N/A", "N/A", "N/A", "1", "gres/gpu:a100=1048576,gres/gpu:v100=1"),
		"alloc: no value":         pend("N/A", "N/A", "N/A", "1", "cpu=,mem=8G"),
		"alloc: space":            pend("N/A", "N/A", "N/A", "1", "cpu=2 mem=8G"),
	} {
		if _, err := ParsePlanQueue([]byte(in), time.UTC); err == nil {
			t.Errorf("%s: no error for %q", name, in)
		} else if !strings.Contains(err.Error(), "squeue line 1") {
			t.Errorf("%s: error %q does not name the line", name, err)
		}
	}
}

// TestPlanStartsCountsGPUsAskedPerJob: a job that asked with --gpus N (no GPUs in %b)
// holds them when running and takes them ahead of a new job when queued.
func TestPlanStartsCountsGPUsAskedPerJob(t *testing.T) {
	now := time.Date(2026, 12, 2, 2, 0, 0, 0, time.UTC)
	started := now.Add(-time.Minute).Format(stdFmtQ)
	one := []PlanRequest{{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 2, GPUsPerNode: 1, Walltime: 2 * time.Minute}}
	// A running job of --gpus 4 for 2 minutes, started a minute ago: the node's four
	// GPUs are taken for one more minute.
	running := gpuLine("1", "RUNNING", started, 1, "alpha-n1", "None", "N/A", "gres:gpu:4", "N/A", "1", "cpu=2,mem=8G,node=1,billing=2,gres/gpu=4,gres/gpu:a100=4")
	jobs, err := ParsePlanQueue([]byte(running), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if got := PlanStarts(rigNodes(), jobs, "me", now, one)[0]; !got.Equal(now.Add(time.Minute)) {
		t.Errorf("behind a running --gpus 4 job: %v, want 1m (its GPUs are held)", got.Sub(now))
	}
	// A queued job of --gpus 4 (2 minutes) waits for a running 1-GPU job's last minute:
	// it takes the node's GPUs from then, so a new 1-GPU job of 2 minutes (which would
	// fit now beside the running one) starts after it.
	queue := gpuLine("2", "RUNNING", started, 1, "alpha-n1", "None", "gres:gpu:a100:1", "N/A", "N/A", "1", "cpu=2,mem=8G,node=1,billing=2,gres/gpu=1,gres/gpu:a100=1") +
		gpuLine("3", "PENDING", "N/A", 1, "", "Resources", "N/A", "gres:gpu:4", "N/A", "1", "cpu=2,mem=8G,node=1,billing=2,gres/gpu=4")
	if jobs, err = ParsePlanQueue([]byte(queue), time.UTC); err != nil {
		t.Fatal(err)
	}
	if got := PlanStarts(rigNodes(), jobs, "me", now, one)[0]; !got.Equal(now.Add(3 * time.Minute)) {
		t.Errorf("behind a queued --gpus 4 job: %v, want 3m (after it)", got.Sub(now))
	}
}

const stdFmtQ = "2006-01-02T15:04:05"

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
	addFixtures(f, "squeue-plan-alpha.txt", "squeue-plan-beta.txt")
	f.Add([]byte("1|a|RUNNING|1|2026-12-01T10:00:00|1:00|2|1|gres/gpu=2|n[1-2]|u|None|N/A|N/A|2|cpu=2,node=2,gres/gpu=4,gres/gpu:a100=4|0|\n"))
	f.Add([]byte("2|a|PENDING|1|N/A|1:00|2|1|N/A||u|Resources|gres:gpu:3|N/A|N/A|N/A|0|\n3|a|PENDING|1|N/A|1:00|1|1|N/A||u|Resources|N/A|gres:gpu:1|4|cpu=4|0|\n"))
	f.Add([]byte("4|a|PENDING|1|N/A|1:00|1|1|gres:gpu:3g.20gb:2(IDX:0-1),gres:mps:100||u|None|gres/gpu:a100=1048576|gres/gpu=x|-1|cpu=,gres/gpu|0|\n"))
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
		// And its allowance for the queue is never negative nor beyond the plan's horizon.
		if a, ok := WillRunQueueAllowance(nodes, jobs, "u", "a", 0); a < 0 || a > planHorizon || (!ok && a != 0) {
			t.Fatalf("allowance %v, %v", a, ok)
		}
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
	out := []byte("5|gpuA100|PENDING|9|N/A|1:00:00|1|64|N/A||other|QOSMaxJobsPerUserLimit|N/A|N/A|1|cpu=64,node=1|0|\n6|gpuA100|PENDING|9|N/A|1:00:00|1|64|N/A||other|Resources|N/A|N/A|1|cpu=64,node=1|0|\n")
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
	if _, err := d.PlanStarts([]dialect.Output{{Stdout: sinfo}, {Stdout: huge}, {Stdout: []byte("me\n")}, {}}, spec, nil, now); err == nil {
		t.Error("a queue listing cut at the cap was planned")
	}
	if _, err := d.PlanStarts([]dialect.Output{{Stdout: sinfo}, {}, {Stdout: []byte("two users\n")}, {}}, spec, nil, now); err == nil {
		t.Error("a garbled user name was accepted")
	}
	if _, err := d.PlanStarts([]dialect.Output{{Stdout: sinfo}, {}, {Stdout: []byte("me\n")}}, spec, nil, now); err == nil {
		t.Error("three outputs for four commands were planned")
	}
	// The runtime history is optional: failing, garbled or cut, the limits plan stands.
	for _, hist := range []dialect.Output{{ExitCode: 1, Stdout: []byte("sacct: error: Problem talking to the database\n")},
		{Stdout: []byte("garbage\n")}, {Stdout: huge}, {}} {
		got, err := d.PlanStarts([]dialect.Output{{Stdout: sinfo}, {}, {Stdout: []byte("me\n")}, hist}, spec, nil, now)
		if err != nil || len(got) != 1 || !got[0].Limits.Equal(now) || !got[0].Predicted.IsZero() {
			t.Errorf("an empty queue, history %q: %v %v, want now and no prediction", truncate(string(hist.Stdout)), got, err)
		}
	}
}

// TestAJobBehindAnotherPartitionsReservationIsAhead: on the rig a gpuA100 job queued
// behind a cpu job on the same node waits with the reason "Nodes required for job are
// DOWN, DRAINED or reserved for jobs in higher priority partitions" (Slurm 22.05). It
// waits for resources: it is ahead of a new job and has its own place in the plan.
// Before, it was neither, and its own start fell back to squeue --start (53 s for a
// job that started 11 s later, which moved it for nothing).
func TestAJobBehindAnotherPartitionsReservationIsAhead(t *testing.T) {
	now := time.Date(2026, 12, 2, 3, 3, 14, 0, time.UTC)
	// Captured on alpha at 03:03:14 UTC (the TRES tails shortened as squeue printed them).
	out := []byte("29297|cpu|PENDING|4294872485|2026-12-02T03:03:57|1:00|1|4|gres:gpu:2||root|Resources|N/A|N/A|1|cpu=4,mem=1G,node=1,billing=4,gres/gpu=2|0|\n" +
		"29296|cpu|RUNNING|4294872486|2026-12-02T03:02:57|1:00|1|6|gres:gpu:3|alpha-n1|root|None|N/A|N/A|1|cpu=6,mem=1G,node=1,billing=6,gres/gpu=3,gres/gpu:a100=3|0|\n" +
		"29298|gpuA100|PENDING|4294872484|2026-12-02T03:04:00|1:00|1|4|gres:gpu:2||root|Nodes required for job are DOWN, DRAINED or reserved for jobs in higher priority partitions|N/A|N/A|1|cpu=4,mem=1G,node=1,billing=4,gres/gpu=2|0|\n")
	jobs, err := ParsePlanQueue(out, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if !jobs[2].Eligible {
		t.Fatal("the job behind another partition's reservation is not counted ahead")
	}
	for _, r := range []string{"Nodes_required_for_job_are_DOWN,_DRAINED_or_reserved_for_jobs_in_higher_priority_partitions", "Resources", "Priority"} {
		if !eligibleReason(r) {
			t.Errorf("%q: not a resource wait", r)
		}
	}
	for _, r := range []string{"ReqNodeNotAvail, Reserved for maintenance", "Dependency", "BeginTime", "JobHeldUser", "QOSMaxGRESPerUser"} {
		if eligibleReason(r) {
			t.Errorf("%q: counted as a resource wait", r)
		}
	}
	// Its own slot: when the running job's limit ends, beside the cpu job (2 + 2 GPUs).
	if got := PlanQueued(rigNodes(), jobs, "root", now, "29298", Runtimes{}); got.Sub(now) != 43*time.Second {
		t.Errorf("its own slot in %v, want 43s (the running job's limit)", got.Sub(now))
	}
	// A new 1-GPU job of a minute waits behind both.
	if got := PlanStarts(rigNodes(), jobs, "root", now, []PlanRequest{{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 2, GPUsPerNode: 1, Walltime: time.Minute}})[0]; got.Sub(now) != 103*time.Second {
		t.Errorf("a new job in %v, want 1m43s (after the two queued jobs' minute)", got.Sub(now))
	}
}

// TestPlanNicedJobs: on the rig (priority/basic), a 2-GPU job submitted with --nice=32
// and then a 1-GPU job without: slurmctld put the later one ahead (priority 4294901751
// against 4294901720, testdata/squeue-plan-nice-alpha.txt). A new job without nice
// stands where the niced one would have stood without its nice, so it is planned
// behind the 1-GPU job and ahead of the niced one; a new job with nice 32 behind both.
func TestPlanNicedJobs(t *testing.T) {
	jobs, err := ParsePlanQueue(fixture(t, "squeue-plan-nice-alpha.txt"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 3 || jobs[1].ID != "8" || jobs[1].Nice != 32 || jobs[0].Nice != 0 {
		t.Fatalf("jobs %+v, want job 8 with nice 32", jobs)
	}
	if got := newJobPriority(jobs, "root"); got != 4294901751 {
		t.Errorf("new job priority %d, want 4294901751 (job 8 as submitted: 4294901720 + 32 = 4294901752, job 9's lower)", got)
	}
	ids := func(js []*QueuedJob) []string {
		var out []string
		for _, j := range js {
			out = append(out, j.ID)
		}
		return out
	}
	if got := ids(queuedAhead(jobs, "root", 0)); !slices.Equal(got, []string{"9"}) {
		t.Errorf("ahead of a new job: %v, want [9]", got)
	}
	if got := ids(queuedAhead(jobs, "root", 32)); !slices.Equal(got, []string{"9", "8"}) {
		t.Errorf("ahead of a new job with nice 32: %v, want [9 8]", got)
	}
	// Planned: job 7 holds the node's 4 GPUs until 03:19:13; job 9 (1 GPU, 1 min) is
	// planned then, and the niced job 8 (2 GPUs, 2 min) is not ahead of a 2-GPU,
	// 1-minute job without nice: both fit beside job 9 at 03:19:13.
	nodes := []NodeLine{{Partition: "gpuA100", Node: "alpha-n1", State: "mixed", CPUs: 64, GPUs: 4, PartitionUp: true}}
	now := time.Date(2026, 12, 4, 3, 18, 0, 0, time.UTC)
	free := time.Date(2026, 12, 4, 3, 19, 13, 0, time.UTC)
	two := PlanRequest{Partition: "gpuA100", Nodes: 1, CPUsPerNode: 1, GPUsPerNode: 3, Walltime: time.Minute}
	lowered := two
	lowered.Nice = 33
	got := PlanStarts(nodes, jobs, "root", now, []PlanRequest{two, lowered})
	if !got[0].Equal(free) {
		t.Errorf("3 GPUs without nice: %v, want %v (beside job 9, ahead of the niced job 8)", got[0], free)
	}
	if want := free.Add(2 * time.Minute); !got[1].Equal(want) {
		t.Errorf("3 GPUs with nice 33: %v, want %v (after job 8's 2 minutes)", got[1], want)
	}
}
