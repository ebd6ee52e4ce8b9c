package sim

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC)

func min_(n int) time.Duration { return time.Duration(n) * time.Minute }

// recorder keeps every start and end the model reports, by job id.
type recorder struct {
	events []Event
	start  map[int64]float64 // minutes after t0
	end    map[int64]float64
	state  map[int64]State
}

func (r *recorder) observe(e Event) {
	r.events = append(r.events, e)
	if e.Kind == JobStarted {
		r.start[e.JobID] = offsetMin(e.Time)
	} else {
		r.end[e.JobID] = offsetMin(e.Time)
		r.state[e.JobID] = e.State
	}
}

func newRecorder() *recorder {
	return &recorder{start: map[int64]float64{}, end: map[int64]float64{}, state: map[int64]State{}}
}

// quiet builds a cluster with no background load and no warm-up.
func quiet(t testing.TB, parts ...PartitionConfig) (*Cluster, *recorder) {
	t.Helper()
	return quietCfg(t, Config{Partitions: parts})
}

func quietCfg(t testing.TB, cfg Config) (*Cluster, *recorder) {
	t.Helper()
	rec := newRecorder()
	cfg.Name, cfg.Start, cfg.WarmUp, cfg.Observer = "test", t0, -1, rec.observe
	c, err := New(cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	return c, rec
}

func excl(name string, nodes int) PartitionConfig {
	return PartitionConfig{Name: name, Nodes: nodes, CoresPerNode: 4, MemGBPerNode: 16, Exclusive: true, MaxWalltime: 48 * time.Hour}
}

// bg is a background job of n nodes with the given walltime and runtime (minutes).
func bg(part string, n, wall, run int, tag string) JobRequest {
	return JobRequest{Partition: part, Nodes: n, CoresPerNode: 1, Walltime: min_(wall), Runtime: min_(run), Tag: tag}
}

// at advances the cluster to t0+m minutes.
func at(c *Cluster, m int) []Event { return c.AdvanceTo(t0.Add(min_(m))) }

func mustSubmit(t testing.TB, c *Cluster, r JobRequest) int64 {
	t.Helper()
	id, err := c.Submit(r)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func mustJob(t testing.TB, c *Cluster, id int64) Job {
	t.Helper()
	j, ok := c.Job(id)
	if !ok {
		t.Fatalf("job %d unknown", id)
	}
	return j
}

// offsetMin is a time's offset from t0 in minutes.
func offsetMin(tm time.Time) float64 { return tm.Sub(t0).Minutes() }
