package sim

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// cloneTrace is a small SWF log for a trace-driven partition.
const cloneTrace = `; MaxProcs: 64
1 0 -1 3600 64 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
2 60 -1 600 1 -1 -1 -1 900 -1 1 1 1 -1 -1 -1 -1 -1
3 120 -1 7200 16 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
4 300 -1 60 4 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
5 900 -1 1800 8 -1 -1 -1 3600 -1 1 1 1 -1 -1 -1 -1 -1
6 1500 -1 5400 32 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
7 2400 -1 120 2 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
8 3000 -1 10800 64 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
`

// cloneModel is a loaded system with everything that carries state: a synthetic and a
// trace-driven partition, a node failure, an outage and injected user-job failures.
func cloneModel(t *testing.T) *Cluster {
	t.Helper()
	tr, err := ParseSWF(strings.NewReader(cloneTrace))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Name: "clone", Start: t0,
		Partitions: []PartitionConfig{
			{Name: "gpu", Nodes: 16, CoresPerNode: 64, GPUsPerNode: 4, MemGBPerNode: 256, MaxWalltime: 48 * time.Hour, Load: Load{Utilization: 0.9}},
			{Name: "cpu", Nodes: 32, CoresPerNode: 16, MemGBPerNode: 64, MaxWalltime: 24 * time.Hour, Exclusive: true, Load: Load{Utilization: 0.95, Trace: tr}},
		},
		NodeFailures:   []NodeFailure{{Partition: "gpu", Nodes: 3, At: 20 * time.Hour, Duration: 2 * time.Hour}},
		Outages:        []Window{{Start: 30 * time.Hour, Duration: time.Hour}},
		JobFailureProb: 0.3,
	}
	c, err := New(cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// drive makes the same calls on c from hour `from` to hour `to` and records everything
// observable: the user events, every partition's state and the counters.
func drive(t *testing.T, c *Cluster, from, to int) []string {
	t.Helper()
	var out []string
	var ids []int64
	for h := from; h < to; h++ {
		for _, e := range c.AdvanceTo(t0.Add(time.Duration(h) * time.Hour)) {
			out = append(out, fmt.Sprintf("%+v", e))
		}
		for _, p := range c.Partitions() {
			st, _ := c.PartitionState(p)
			out = append(out, fmt.Sprintf("%d %s %+v", h, p, st))
		}
		out = append(out, fmt.Sprintf("%+v", c.Stats()))
		if c.Down(c.Now()) {
			continue
		}
		if h%3 == 0 {
			id, err := c.Submit(user("gpu", 1+h%2, 8, 1, 120))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
			id, err = c.Submit(JobRequest{Partition: "cpu", Nodes: 1 + h%4, CoresPerNode: 16, Walltime: 3 * time.Hour, Runtime: 2 * time.Hour, User: true})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		if h%7 == 0 && len(ids) > 0 {
			_ = c.Cancel(ids[0]) // may have ended already: the same on both
			ids = ids[1:]
		}
	}
	return out
}

// TestCloneEvolvesLikeTheOriginal: a clone taken mid-history, given the same calls,
// reports exactly what the original reports (events, states, counters), and work done
// on another clone does not leak into either.
func TestCloneEvolvesLikeTheOriginal(t *testing.T) {
	a := cloneModel(t)
	drive(t, a, 0, 10)
	b := a.Clone()
	c := b.Clone()
	// Disturb c: its own submissions, a day of simulation, an estimate.
	for range 20 {
		if _, err := c.Submit(user("gpu", 2, 32, 2, 600)); err != nil {
			t.Fatal(err)
		}
	}
	c.AdvanceTo(t0.Add(40 * time.Hour))
	if _, err := c.EstimateStart(user("cpu", 4, 16, 0, 60)); err != nil {
		t.Fatal(err)
	}
	want := drive(t, a, 10, 48)
	got := drive(t, b, 10, 48)
	if len(want) < 150 {
		t.Fatalf("only %d observations", len(want))
	}
	if !reflect.DeepEqual(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("clone diverged at observation %d:\n got %s\nwant %s", i, got[i], want[i])
			}
		}
		t.Fatalf("clone gave %d observations, original %d", len(got), len(want))
	}
	if st, _ := a.PartitionState("gpu"); st.UserPending+st.UserRunning > 40 {
		t.Errorf("the disturbed clone's jobs leaked into the original: %+v", st)
	}
}
