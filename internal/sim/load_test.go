package sim

import (
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

func TestScaleSize(t *testing.T) {
	ex := PartitionConfig{Name: "x", Nodes: 64, CoresPerNode: 128, MemGBPerNode: 256, Exclusive: true, MaxNodesPerJob: 16}
	sh := PartitionConfig{Name: "s", Nodes: 64, CoresPerNode: 64, GPUsPerNode: 4, MemGBPerNode: 256}
	for _, tc := range []struct {
		pc                       PartitionConfig
		procs, machine           int
		nodes, cores, gpus, memG int
	}{
		{ex, 128, 128, 16, 128, 0, 256}, // whole machine, capped by max nodes per job
		{ex, 32, 128, 16, 128, 0, 256},  // a quarter = 16 nodes
		{ex, 8, 128, 4, 128, 0, 256},
		{ex, 1, 128, 1, 128, 0, 256},    // at least one node
		{ex, 300, 128, 16, 128, 0, 256}, // larger than the machine
		{sh, 1, 128, 1, 32, 2, 128},     // half a node's worth on a shared partition
		{sh, 1, 1024, 1, 4, 1, 16},      // 1/16 node: 4 cores, at least one GPU
		{sh, 64, 128, 32, 64, 4, 256},   // half the machine
		{sh, 128, 128, 64, 64, 4, 256},  // whole machine
		{sh, 3, 128, 2, 64, 4, 256},     // 1.5 nodes' worth rounds up
	} {
		n, c, g, m := ScaleSize(tc.pc, tc.procs, tc.machine)
		if n != tc.nodes || c != tc.cores || g != tc.gpus || m != tc.memG {
			t.Errorf("%s %d/%d procs: got %d nodes × (%d cores, %d gpus, %d GB), want %d × (%d, %d, %d)",
				tc.pc.Name, tc.procs, tc.machine, n, c, g, m, tc.nodes, tc.cores, tc.gpus, tc.memG)
		}
	}
}

// busy samples the share of busy nodes (node-equivalents of the gating resource)
// every 10 simulated minutes for a duration and returns the mean, with queue stats.
func busy(c *Cluster, part string, d time.Duration) (mean float64, maxPending, minFree, maxFree int) {
	n := 0
	minFree = 1 << 30
	for t := time.Duration(0); t < d; t += 10 * time.Minute {
		c.AdvanceTo(c.Start().Add(t))
		s, _ := c.PartitionState(part)
		var b float64
		free := s.FreeCores
		if s.GPUsPerNode > 0 {
			b, free = 1-float64(s.FreeGPUs)/float64(s.TotalGPUs), s.FreeGPUs
		} else {
			b = 1 - float64(s.FreeCores)/float64(s.TotalCores)
		}
		mean += b
		n++
		maxPending = max(maxPending, s.Pending)
		minFree, maxFree = min(minFree, free), max(maxFree, free)
	}
	return mean / float64(n), maxPending, minFree, maxFree
}

func TestSyntheticLoad(t *testing.T) {
	for _, pc := range []PartitionConfig{
		{Name: "gpu", Nodes: 32, CoresPerNode: 64, GPUsPerNode: 4, MemGBPerNode: 256, MaxWalltime: 48 * time.Hour, Load: Load{Utilization: 0.85}},
		{Name: "cpu", Nodes: 64, CoresPerNode: 128, MemGBPerNode: 256, MaxWalltime: 48 * time.Hour, Exclusive: true, Load: Load{Utilization: 0.85}},
	} {
		c, err := New(Config{Name: "load", Start: t0, Partitions: []PartitionConfig{pc}}, 3)
		if err != nil {
			t.Fatal(err)
		}
		s0, _ := c.PartitionState(pc.Name)
		if s0.Running == 0 {
			t.Fatalf("%s: nothing running at t0 after warm-up", pc.Name)
		}
		mean, maxPend, minFree, maxFree := busy(c, pc.Name, 14*24*time.Hour)
		t.Logf("%s: mean busy %.2f, max pending %d, free %d..%d, stats %+v", pc.Name, mean, maxPend, minFree, maxFree, c.Stats())
		if mean < 0.65 || mean > 1 {
			t.Errorf("%s: mean busy %.2f, want near 0.85", pc.Name, mean)
		}
		if maxPend == 0 || minFree == maxFree {
			t.Errorf("%s: the load does not move (max pending %d, free %d..%d)", pc.Name, maxPend, minFree, maxFree)
		}
	}
}

func TestTraceReplayLoad(t *testing.T) {
	tr, err := ReadSWF(tracePath(t, "lublin_256.swf.gz"))
	if err != nil {
		t.Fatal(err)
	}
	pc := PartitionConfig{Name: "cpu", Nodes: 64, CoresPerNode: 128, MemGBPerNode: 256, MaxWalltime: 48 * time.Hour,
		Load: Load{Utilization: 0.85, Trace: tr}}
	c, err := New(Config{Name: "lublin", Start: t0, Partitions: []PartitionConfig{pc}}, 5)
	if err != nil {
		t.Fatal(err)
	}
	mean, maxPend, minFree, maxFree := busy(c, "cpu", 7*24*time.Hour)
	t.Logf("lublin on 64 nodes: mean busy %.2f, max pending %d, free cores %d..%d, stats %+v", mean, maxPend, minFree, maxFree, c.Stats())
	if mean < 0.5 || mean > 1 {
		t.Errorf("mean busy %.2f, want near 0.85", mean)
	}
	if minFree == maxFree {
		t.Error("free cores never change")
	}
}

func TestTraceErrors(t *testing.T) {
	pc := excl("p", 4)
	pc.Load = Load{Utilization: 0.5, Trace: &Trace{Jobs: []SWFJob{{Submit: 0, Run: 10, Procs: 1}}}}
	if _, err := New(Config{Partitions: []PartitionConfig{pc}}, 1); err == nil {
		t.Fatal("one-job trace accepted")
	}
	pc.Load.Trace = &Trace{Jobs: []SWFJob{{Submit: 5, Run: 10, Procs: 1}, {Submit: 5, Run: 10, Procs: 1}}}
	if _, err := New(Config{Partitions: []PartitionConfig{pc}}, 1); err == nil {
		t.Fatal("zero-span trace accepted")
	}
}

func TestFromSite(t *testing.T) {
	sys := site.System{
		Name: "Delta@NCSA", Kind: site.KindSim, Accounts: []string{"bbka"},
		Partitions: []site.Partition{
			{Name: "gpuA100x4", Nodes: 100, CPUCores: 64, MemoryGB: 256, GPUs: 4, MaxWalltime: model.Duration(48 * time.Hour), MaxNodesPerJob: 200},
			{Name: "cpu", Nodes: 10, CPUCores: 128, MemoryGB: 256, MaxWalltime: model.Duration(48 * time.Hour), Exclusive: true},
		},
		SimConfig: &site.SimSystem{MaxNodes: 32, Faults: site.Faults{
			Outages:      []site.Window{{Start: model.Duration(time.Hour), Duration: model.Duration(time.Hour)}},
			NodeFailures: []site.NodeFailure{{Partition: "cpu", Nodes: 2, At: model.Duration(time.Hour), Duration: model.Duration(time.Hour)}},
		}},
	}
	c, err := FromSite(sys, site.SimGlobal{}, t0)
	if err != nil {
		t.Fatal(err)
	}
	g, _ := c.PartitionState("gpuA100x4")
	if g.Total != 32 || g.MaxNodesPerJob != 32 || g.GPUsPerNode != 4 || g.Running == 0 {
		t.Fatalf("gpu partition %+v", g)
	}
	cp, _ := c.PartitionState("cpu")
	if cp.Total != 10 || !cp.Exclusive {
		t.Fatalf("cpu partition %+v", cp)
	}
	if !c.Down(t0.Add(90*time.Minute)) || c.Down(t0.Add(3*time.Hour)) {
		t.Fatal("outage window not applied")
	}
	sys.SimConfig.Load.Trace = "/nonexistent/trace.swf"
	if _, err := FromSite(sys, site.SimGlobal{}, t0); err == nil {
		t.Fatal("missing trace accepted")
	}
	sys.Partitions = nil
	if _, err := FromSite(sys, site.SimGlobal{}, t0); err == nil {
		t.Fatal("system without partitions accepted")
	}
}
