package sim

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

func user(part string, nodes, cores, gpus, wall int) JobRequest {
	return JobRequest{Partition: part, Nodes: nodes, CoresPerNode: cores, GPUsPerNode: gpus,
		Walltime: min_(wall), External: true, User: true, Tag: "mosaic-t-1"}
}

func TestExternalJobLifecycle(t *testing.T) {
	c, _ := quiet(t, excl("p", 2))
	id := mustSubmit(t, c, user("p", 1, 1, 0, 60))
	if j := mustJob(t, c, id); j.State != Pending {
		t.Fatalf("before advancing: %s", j.State)
	}
	evs := at(c, 0)
	if len(evs) != 1 || evs[0].Kind != JobStarted || evs[0].JobID != id || !evs[0].User || evs[0].Tag != "mosaic-t-1" {
		t.Fatalf("start events %+v", evs)
	}
	at(c, 10)
	if err := c.Finish(id, 3); err != nil {
		t.Fatal(err)
	}
	evs = at(c, 10)
	if len(evs) != 1 || evs[0].Kind != JobEnded || evs[0].State != Failed || evs[0].ExitCode != 3 {
		t.Fatalf("end events %+v", evs)
	}
	j := mustJob(t, c, id)
	if j.State != Failed || j.ExitCode != 3 || offsetMin(j.Start) != 0 || offsetMin(j.End) != 10 || len(j.NodeList) != 1 {
		t.Fatalf("job %+v", j)
	}
	if err := c.Finish(id, 0); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("second finish: %v", err)
	}
	if err := c.Finish(999999, 0); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("unknown finish: %v", err)
	}
	if got := c.Jobs(); len(got) != 1 || got[0].ID != id {
		t.Fatalf("Jobs() = %+v", got)
	}
}

func TestWalltimeTimeout(t *testing.T) {
	c, rec := quiet(t, excl("p", 2))
	u := mustSubmit(t, c, user("p", 1, 1, 0, 30))
	b := mustSubmit(t, c, bg("p", 1, 20, 45, "over")) // runs longer than it asked
	at(c, 29)
	if mustJob(t, c, u).State != Running {
		t.Fatal("user job should still run at 29 min")
	}
	evs := at(c, 31)
	if len(evs) != 1 || evs[0].State != Timeout || offsetMin(evs[0].Time) != 30 {
		t.Fatalf("events %+v", evs)
	}
	if j := mustJob(t, c, u); j.State != Timeout || j.Reason != "TimeLimit" {
		t.Fatalf("user job %+v", j)
	}
	if rec.state[b] != Timeout || rec.end[b] != 20 {
		t.Fatalf("background job ended %s at %v, want TIMEOUT at 20", rec.state[b], rec.end[b])
	}
	if c.Stats().Timeouts != 2 {
		t.Fatalf("stats %+v", c.Stats())
	}
}

func TestNodeSharing(t *testing.T) {
	shared := PartitionConfig{Name: "gpu", Nodes: 2, CoresPerNode: 8, GPUsPerNode: 4, MemGBPerNode: 64}
	c, _ := quiet(t, shared, excl("cpu", 2))
	j1 := mustSubmit(t, c, user("gpu", 1, 4, 2, 60))
	j2 := mustSubmit(t, c, user("gpu", 1, 4, 2, 60))
	j3 := mustSubmit(t, c, user("gpu", 1, 2, 1, 60))
	j4 := mustSubmit(t, c, user("gpu", 2, 1, 1, 60)) // one node is full: must wait
	x := mustSubmit(t, c, user("cpu", 1, 1, 0, 60))  // exclusive: takes a whole node
	at(c, 0)
	n1, n2, n3 := mustJob(t, c, j1).NodeList, mustJob(t, c, j2).NodeList, mustJob(t, c, j3).NodeList
	if n1[0] != n2[0] || n3[0] == n1[0] {
		t.Fatalf("packing: j1 on %v, j2 on %v, j3 on %v; want j1 and j2 sharing a node", n1, n2, n3)
	}
	if mustJob(t, c, j4).State != Pending {
		t.Fatal("2-node job started although one node has no free cores")
	}
	s, _ := c.PartitionState("gpu")
	want := PartitionState{Name: "gpu", Idle: 0, Mixed: 1, Allocated: 1, Total: 2, TotalCores: 16, FreeCores: 6,
		TotalGPUs: 8, FreeGPUs: 3, Running: 3, Pending: 1, UserRunning: 3, UserPending: 1,
		CoresPerNode: 8, GPUsPerNode: 4, MemGB: 64, MaxNodesPerJob: 2}
	if s != want {
		t.Fatalf("state\n got %+v\nwant %+v", s, want)
	}
	s, _ = c.PartitionState("cpu")
	if s.Allocated != 1 || s.Idle != 1 || s.FreeCores != 4 || mustJob(t, c, x).State != Running {
		t.Fatalf("exclusive state %+v", s)
	}
	// Memory is accounted too: 60 GB does not fit next to j3's 16 GB.
	m := mustSubmit(t, c, JobRequest{Partition: "gpu", Nodes: 1, CoresPerNode: 1, MemGBPerNode: 60, Walltime: min_(5), External: true, User: true})
	at(c, 1)
	if mustJob(t, c, m).State != Pending {
		t.Fatal("job started although memory does not fit")
	}
	if _, ok := c.PartitionState("nope"); ok {
		t.Fatal("unknown partition has a state")
	}
}

func TestRejectOverLimit(t *testing.T) {
	p := PartitionConfig{Name: "gpu", Nodes: 8, CoresPerNode: 8, GPUsPerNode: 4, MemGBPerNode: 64,
		MaxWalltime: 48 * time.Hour, MaxNodesPerJob: 4, MaxSubmitPerUser: 2}
	c, _ := quiet(t, p)
	cases := []struct {
		name string
		req  JobRequest
		want string
	}{
		{"nodes", user("gpu", 5, 1, 1, 60), "Node count specification invalid"},
		{"walltime", user("gpu", 1, 1, 1, 72*60), "Requested time limit is invalid (missing or exceeds some limit)\" (partition gpu allows 48h0m0s walltime; asked 72h0m0s)"},
		{"gpus", user("gpu", 1, 1, 5, 60), "allows 4 gpus per node"},
		{"cores", user("gpu", 1, 9, 0, 60), "allows 8 cores per node"},
		{"memory", JobRequest{Partition: "gpu", Nodes: 1, MemGBPerNode: 65, Walltime: time.Hour, External: true}, "memory per node"},
		{"zero walltime", user("gpu", 1, 1, 1, 0), "time limit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.Submit(tc.req)
			var le *LimitError
			if !errors.Is(err, ErrLimit) || !errors.As(err, &le) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want a limit error containing %q", err, tc.want)
			}
		})
	}
	if _, err := c.Submit(user("nope", 1, 1, 1, 60)); err == nil || !strings.Contains(err.Error(), "partitions: gpu") {
		t.Fatalf("unknown partition: %v", err)
	}
	mustSubmit(t, c, user("gpu", 1, 1, 1, 60))
	mustSubmit(t, c, user("gpu", 1, 1, 1, 60))
	if _, err := c.Submit(user("gpu", 1, 1, 1, 60)); !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), "jobs per user") {
		t.Fatalf("submit limit: %v", err)
	}
}

func TestMaxRunningPerUser(t *testing.T) {
	p := excl("p", 4)
	p.MaxRunningPerUser = 1
	c, _ := quiet(t, p)
	a := mustSubmit(t, c, user("p", 1, 1, 0, 60))
	b := mustSubmit(t, c, user("p", 1, 1, 0, 60))
	at(c, 0)
	if mustJob(t, c, a).State != Running || mustJob(t, c, b).Reason != ReasonUserLimit {
		t.Fatalf("a %+v b %+v", mustJob(t, c, a), mustJob(t, c, b))
	}
	c.Finish(a, 0)
	at(c, 1)
	if mustJob(t, c, b).State != Running {
		t.Fatal("second job did not start after the first ended")
	}
}

func TestNodeFailure(t *testing.T) {
	c, _ := quietCfg(t, Config{
		Partitions:   []PartitionConfig{excl("p", 4)},
		NodeFailures: []NodeFailure{{Partition: "p", Nodes: 2, At: min_(10), Duration: min_(30)}},
	})
	var ids []int64
	for range 4 {
		ids = append(ids, mustSubmit(t, c, user("p", 1, 1, 0, 120)))
	}
	at(c, 5)
	evs := at(c, 15)
	failed := 0
	for _, e := range evs {
		if e.Kind == JobEnded && e.State == NodeFail && offsetMin(e.Time) == 10 {
			failed++
		}
	}
	if failed != 2 {
		t.Fatalf("%d jobs ended NODE_FAIL at 10 min, want 2: %+v", failed, evs)
	}
	s, _ := c.PartitionState("p")
	if s.Down != 2 || s.Allocated != 2 || s.Total != 4 || s.FreeCores != 0 {
		t.Fatalf("state %+v", s)
	}
	for _, id := range ids {
		c.Finish(id, 0) // the two survivors end; the failed ones return ErrNotRunning
	}
	at(c, 20)
	big := mustSubmit(t, c, user("p", 4, 1, 0, 60))
	est, err := c.EstimateStart(user("p", 4, 1, 0, 60))
	if err != nil || offsetMin(est) != 100 { // after big, which starts at 40 when the nodes return
		t.Fatalf("estimate %v %v, want 100 min", offsetMin(est), err)
	}
	at(c, 39)
	if mustJob(t, c, big).State != Pending {
		t.Fatal("4-node job started while 2 nodes are down")
	}
	at(c, 40)
	if j := mustJob(t, c, big); j.State != Running || offsetMin(j.Start) != 40 {
		t.Fatalf("4-node job %+v, want running from 40", j)
	}
}

func TestOutage(t *testing.T) {
	c, _ := quietCfg(t, Config{
		Partitions: []PartitionConfig{excl("p", 1)},
		Outages:    []Window{{Start: min_(60), Duration: min_(30)}},
	})
	a := mustSubmit(t, c, user("p", 1, 1, 0, 70))
	b := mustSubmit(t, c, user("p", 1, 1, 0, 10))
	at(c, 59)
	if c.Down(c.Now()) {
		t.Fatal("down before the outage")
	}
	est, err := c.EstimateStart(user("p", 1, 1, 0, 10))
	if err != nil || offsetMin(est) != 100 { // a ends 70 (outage), b starts at 90, then us at 100
		t.Fatalf("estimate %v %v", offsetMin(est), err)
	}
	at(c, 75)
	if !c.Down(c.Now()) {
		t.Fatal("not down during the outage")
	}
	if _, err := c.Submit(user("p", 1, 1, 0, 10)); !errors.Is(err, ErrDown) {
		t.Fatalf("submit during outage: %v", err)
	}
	if mustJob(t, c, a).State != Timeout {
		t.Fatal("running job should keep running (and time out) during an outage")
	}
	if mustJob(t, c, b).State != Pending {
		t.Fatal("a job started during an outage")
	}
	at(c, 90)
	if j := mustJob(t, c, b); j.State != Running || offsetMin(j.Start) != 90 {
		t.Fatalf("b after outage %+v", j)
	}
}

func TestJobFailureProb(t *testing.T) {
	c, _ := quietCfg(t, Config{Partitions: []PartitionConfig{excl("p", 4)}, JobFailureProb: 1})
	id := mustSubmit(t, c, user("p", 1, 1, 0, 60))
	at(c, 61)
	j := mustJob(t, c, id)
	if j.State != NodeFail || !j.End.Before(t0.Add(min_(60))) {
		t.Fatalf("job %+v, want NODE_FAIL before its walltime", j)
	}
}

func TestCancel(t *testing.T) {
	c, _ := quiet(t, excl("p", 1))
	a := mustSubmit(t, c, user("p", 1, 1, 0, 60))
	b := mustSubmit(t, c, user("p", 1, 1, 0, 60))
	at(c, 1)
	if err := c.Cancel(b); err != nil {
		t.Fatal(err)
	}
	if err := c.Cancel(a); err != nil {
		t.Fatal(err)
	}
	evs := at(c, 2)
	if len(evs) != 2 || evs[0].State != Cancelled || evs[1].State != Cancelled {
		t.Fatalf("events %+v", evs)
	}
	if j := mustJob(t, c, b); !j.Start.IsZero() || j.State != Cancelled {
		t.Fatalf("cancelled pending job %+v", j)
	}
	if err := c.Cancel(a); err != nil {
		t.Fatalf("cancel of a finished job: %v", err)
	}
	if err := c.Cancel(12345678); !errors.Is(err, ErrUnknownJob) {
		t.Fatalf("cancel unknown: %v", err)
	}
	if s, _ := c.PartitionState("p"); s.Idle != 1 || s.Running != 0 || s.Pending != 0 {
		t.Fatalf("state %+v", s)
	}
}

func TestConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "no partitions"},
		{Config{Partitions: []PartitionConfig{{Name: "p", Nodes: 0, CoresPerNode: 1}}}, "at least 1 node"},
		{Config{Partitions: []PartitionConfig{excl("p", 1), excl("p", 1)}}, "listed twice"},
		{Config{Partitions: []PartitionConfig{excl("p", 1)}, NodeFailures: []NodeFailure{{Partition: "q", Nodes: 1}}}, "unknown partition"},
		{Config{Partitions: []PartitionConfig{excl("p", 1)}, JobFailureProb: 2}, "probability"},
	} {
		if _, err := New(tc.cfg, 1); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}

// history runs a loaded two-partition system for two simulated days.
func history(t *testing.T, seed int64) []Event {
	t.Helper()
	var evs []Event
	cfg := Config{Name: "det", Start: t0, Observer: func(e Event) { evs = append(evs, e) },
		Partitions: []PartitionConfig{
			{Name: "gpu", Nodes: 16, CoresPerNode: 64, GPUsPerNode: 4, MemGBPerNode: 256, MaxWalltime: 48 * time.Hour, Load: Load{Utilization: 0.9}},
			{Name: "cpu", Nodes: 32, CoresPerNode: 128, MemGBPerNode: 256, MaxWalltime: 48 * time.Hour, Exclusive: true, Load: Load{Utilization: 0.8, MeanRuntime: time.Hour}},
		},
		NodeFailures:   []NodeFailure{{Partition: "gpu", Nodes: 3, At: 5 * time.Hour, Duration: 2 * time.Hour}},
		JobFailureProb: 0.3,
	}
	c, err := New(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	for h := range 48 {
		c.AdvanceTo(t0.Add(time.Duration(h) * time.Hour))
		if h%6 == 0 {
			if _, err := c.Submit(user("gpu", 1, 8, 1, 90)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return evs
}

func TestDeterminism(t *testing.T) {
	a, b := history(t, 7), history(t, 7)
	if len(a) < 100 {
		t.Fatalf("only %d events in two loaded days", len(a))
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different histories")
	}
	if reflect.DeepEqual(a, history(t, 8)) {
		t.Fatal("different seeds gave the same history")
	}
}
