package sim

import (
	"testing"
)

// TestEASYBackfill checks start times computed by hand on a 4-node exclusive partition.
//
//	t=0  A 2 nodes wall 100 run 100  -> starts 0
//	t=0  B 1 node  wall 50  run 50   -> starts 0 (1 node left)
//	t=1  C 4 nodes wall 60 run 60    -> head; reservation at 100 (A's requested end)
//	t=2  D 1 node  wall 200 run 200  -> fits now but would end at 202 > 100 and leave
//	                                    3 nodes at the shadow time: may NOT backfill
//	t=3  E 1 node  wall 90 run 90    -> ends at 93 <= 100: backfills at 3
//	t=4  F 1 node  wall 40 run 40    -> no node free until B ends at 50; 50+40 <= 100:
//	                                    backfills at 50 (D, ahead of it, still may not)
//	C starts at 100 when A ends; D starts at 160 when C ends.
func TestEASYBackfill(t *testing.T) {
	c, rec := quiet(t, excl("p", 4))
	ids := map[string]int64{}
	sub := func(name string, r JobRequest) { ids[name] = mustSubmit(t, c, r) }
	sub("A", bg("p", 2, 100, 100, "A"))
	sub("B", bg("p", 1, 50, 50, "B"))
	at(c, 1)
	sub("C", bg("p", 4, 60, 60, "C"))
	at(c, 2)
	sub("D", bg("p", 1, 200, 200, "D"))
	at(c, 3)
	sub("E", bg("p", 1, 90, 90, "E"))
	at(c, 4)
	sub("F", bg("p", 1, 40, 40, "F"))
	at(c, 5)

	if j := mustJob(t, c, ids["D"]); j.State != Pending || j.Reason != ReasonPriority {
		t.Fatalf("D at t=5: %s %s, want PENDING Priority (it would delay C's reservation)", j.State, j.Reason)
	}
	if j := mustJob(t, c, ids["C"]); j.Reason != ReasonResources {
		t.Fatalf("C reason %q, want Resources", j.Reason)
	}

	// What-if at t=5: a 1-node 10-minute job would start at 90 (F frees a node at 90
	// and 90+10 <= the reservation at 100).
	est, err := c.EstimateStart(JobRequest{Partition: "p", Nodes: 1, Walltime: min_(10)})
	if err != nil {
		t.Fatal(err)
	}
	if got := offsetMin(est); got != 90 {
		t.Fatalf("estimate %v min, want 90", got)
	}
	// A 1-node 20-minute job cannot use the nodes F (at 90) or E (at 93) free: it would
	// end after C's reservation at 100, when C needs all four nodes. It starts when C
	// ends at 160, next to D.
	est, err = c.EstimateStart(JobRequest{Partition: "p", Nodes: 1, Walltime: min_(20)})
	if err != nil {
		t.Fatal(err)
	}
	if got := offsetMin(est); got != 160 {
		t.Fatalf("estimate %v min, want 160", got)
	}

	at(c, 1000)
	want := map[string][2]float64{
		"A": {0, 100}, "B": {0, 50}, "C": {100, 160}, "D": {160, 360}, "E": {3, 93}, "F": {50, 90},
	}
	for name, se := range want {
		id := ids[name]
		if rec.start[id] != se[0] || rec.end[id] != se[1] || rec.state[id] != Completed {
			t.Errorf("%s ran %v–%v (%s), want %v–%v COMPLETED", name, rec.start[id], rec.end[id], rec.state[id], se[0], se[1])
		}
	}
}

// TestBackfillUsesRequestedWalltime: the reservation is computed from requested
// walltimes, so a job that will in fact end early does not let a long job backfill.
func TestBackfillUsesRequestedWalltime(t *testing.T) {
	c, rec := quiet(t, excl("p", 2))
	a := mustSubmit(t, c, bg("p", 1, 100, 10, "A")) // asks 100, runs 10
	h := mustSubmit(t, c, bg("p", 2, 10, 10, "H"))  // head: needs both nodes
	l := mustSubmit(t, c, bg("p", 1, 50, 50, "L"))  // 0+50 <= 100: may backfill
	m := mustSubmit(t, c, bg("p", 1, 150, 5, "M"))  // asks past 100: may not
	at(c, 500)
	for _, tc := range []struct {
		id         int64
		start, end float64
	}{{a, 0, 10}, {l, 0, 50}, {h, 50, 60}, {m, 60, 65}} {
		if rec.start[tc.id] != tc.start || rec.end[tc.id] != tc.end {
			t.Errorf("job %d ran %v–%v, want %v–%v", tc.id, rec.start[tc.id], rec.end[tc.id], tc.start, tc.end)
		}
	}
}

// TestBackfillDepth: jobs beyond the depth are not considered by a pass.
func TestBackfillDepth(t *testing.T) {
	c, rec := quietCfg(t, Config{Partitions: []PartitionConfig{excl("p", 2)}, BackfillDepth: 1})
	mustSubmit(t, c, bg("p", 1, 100, 100, "A"))
	mustSubmit(t, c, bg("p", 2, 10, 10, "H"))
	mustSubmit(t, c, bg("p", 1, 500, 500, "X"))    // considered, refused
	y := mustSubmit(t, c, bg("p", 1, 10, 10, "Y")) // would fit, beyond the depth
	at(c, 1)
	if _, ok := rec.start[y]; ok {
		t.Fatalf("job beyond the backfill depth started")
	}
}

// TestBackfillSharedNodes: on a shared GPU partition the reservation is node-granular.
//
//	t=0 J1 node, 4 GPUs, wall 100    -> node 0 full
//	t=0 J2 node, 2 GPUs, wall 50     -> node 1 half used
//	t=0 H  node, 4 GPUs, wall 30     -> head: reserved at 50 on node 1
//	t=0 B  node, 2 GPUs, wall 200    -> fits on node 1 now but would leave it 2 GPUs
//	                                   short at 50: may not backfill
//	t=0 C  node, 2 GPUs, wall 40     -> ends at 40 <= 50: backfills on node 1
//	H runs 50–80 on node 1; B starts at 80 when H ends.
func TestBackfillSharedNodes(t *testing.T) {
	c, rec := quiet(t, PartitionConfig{Name: "g", Nodes: 2, CoresPerNode: 8, GPUsPerNode: 4, MemGBPerNode: 64})
	gpu := func(g, wall int, tag string) JobRequest {
		r := bg("g", 1, wall, wall, tag)
		r.GPUsPerNode = g
		return r
	}
	j1 := mustSubmit(t, c, gpu(4, 100, "J1"))
	j2 := mustSubmit(t, c, gpu(2, 50, "J2"))
	h := mustSubmit(t, c, gpu(4, 30, "H"))
	b := mustSubmit(t, c, gpu(2, 200, "B"))
	cc := mustSubmit(t, c, gpu(2, 40, "C"))
	at(c, 1000)
	for _, tc := range []struct {
		name       string
		id         int64
		start, end float64
	}{{"J1", j1, 0, 100}, {"J2", j2, 0, 50}, {"C", cc, 0, 40}, {"H", h, 50, 80}, {"B", b, 80, 280}} {
		if rec.start[tc.id] != tc.start || rec.end[tc.id] != tc.end {
			t.Errorf("%s ran %v–%v, want %v–%v", tc.name, rec.start[tc.id], rec.end[tc.id], tc.start, tc.end)
		}
	}
}

// TestBackfillOutsideReservation: a long job may backfill when it uses resources the
// head's reservation does not need, and the scheduler steers it away from the
// reserved node.
//
//	node 0: J1 4 GPUs wall 100
//	node 1: J2 7 cores + 2 GPUs wall 50   (1 core, 2 GPUs left)
//	node 2: J3 2 cores + 2 GPUs wall 300  (no room on node 1: 6 cores, 2 GPUs left)
//	H (1 node, 4 GPUs) is reserved on node 1 at 50. B (1 core, 2 GPUs, wall 200) ends
//	after 50; it fits now on node 1 (the tighter fit) and node 2. On node 1 it would
//	delay H, so it is placed on node 2 and starts at 0. H runs at 50.
func TestBackfillOutsideReservation(t *testing.T) {
	c, rec := quiet(t, PartitionConfig{Name: "g", Nodes: 3, CoresPerNode: 8, GPUsPerNode: 4, MemGBPerNode: 64})
	gpu := func(cores, g, wall int, tag string) JobRequest {
		r := bg("g", 1, wall, wall, tag)
		r.CoresPerNode, r.GPUsPerNode = cores, g
		return r
	}
	mustSubmit(t, c, gpu(1, 4, 100, "J1"))
	mustSubmit(t, c, gpu(7, 2, 50, "J2"))
	mustSubmit(t, c, gpu(2, 2, 300, "J3"))
	h := mustSubmit(t, c, gpu(1, 4, 30, "H"))
	b := mustSubmit(t, c, gpu(1, 2, 200, "B"))
	at(c, 0)
	if j := mustJob(t, c, b); j.State != Running || len(j.NodeList) != 1 || j.NodeList[0] != 2 {
		t.Fatalf("B %s on %v, want running on node 2", j.State, j.NodeList)
	}
	at(c, 1000)
	if rec.start[b] != 0 || rec.start[h] != 50 {
		t.Fatalf("B started at %v (want 0), H at %v (want 50)", rec.start[b], rec.start[h])
	}
}
