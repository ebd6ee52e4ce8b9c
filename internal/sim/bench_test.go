package sim

import (
	"testing"
	"time"
)

// BenchmarkReplayNASA replays the whole NASA iPSC/860 log (18,239 jobs) on a 128-node
// partition, time-scaled to 85% offered load, and reports jobs simulated per second.
func BenchmarkReplayNASA(b *testing.B) {
	tr, err := ReadSWF(tracePath(b, "NASA-iPSC-1993-3.1-cln.swf.gz"))
	if err != nil {
		b.Fatal(err)
	}
	pc := PartitionConfig{Name: "ipsc", Nodes: 128, CoresPerNode: 1, MemGBPerNode: 8, Exclusive: true,
		Load: Load{Utilization: 0.85, Trace: tr}}
	want := int64(len(tr.Jobs))
	var jobs int64
	b.ResetTimer()
	for b.Loop() {
		c, err := New(Config{Name: "nasa", Start: t0, WarmUp: -1, Partitions: []PartitionConfig{pc}}, 1)
		if err != nil {
			b.Fatal(err)
		}
		for day := 1; c.Stats().Submitted+c.Stats().Dropped < want && day < 10000; day++ {
			c.AdvanceTo(t0.Add(time.Duration(day) * 24 * time.Hour))
		}
		jobs += c.Stats().Submitted + c.Stats().Dropped
	}
	b.ReportMetric(float64(jobs)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkEstimateStart plans a what-if start on a loaded 64-node GPU partition.
func BenchmarkEstimateStart(b *testing.B) {
	pc := PartitionConfig{Name: "gpu", Nodes: 64, CoresPerNode: 64, GPUsPerNode: 4, MemGBPerNode: 256,
		MaxWalltime: 48 * time.Hour, Load: Load{Utilization: 1.1}}
	c, err := New(Config{Name: "est", Start: t0, Partitions: []PartitionConfig{pc}}, 1)
	if err != nil {
		b.Fatal(err)
	}
	c.AdvanceTo(t0.Add(48 * time.Hour))
	s, _ := c.PartitionState("gpu")
	b.Logf("queue depth %d, running %d", s.Pending, s.Running)
	req := JobRequest{Partition: "gpu", Nodes: 2, CoresPerNode: 16, GPUsPerNode: 4, Walltime: 4 * time.Hour}
	for b.Loop() {
		if _, err := c.EstimateStart(req); err != nil {
			b.Fatal(err)
		}
	}
}
