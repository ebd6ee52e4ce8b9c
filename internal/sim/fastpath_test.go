package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// The scheduling hot paths (chooseCount's insertion selection, reservation's heap
// and incremental fit count) are optimisations of simpler definitions. These tests
// check them against those definitions on random partitions.

// randomPartition builds a partition with random free resources, some down nodes and
// running jobs holding shares of the nodes.
func randomPartition(rng *rand.Rand) *partition {
	cfg := PartitionConfig{Name: "p", Nodes: 1 + rng.IntN(24), CoresPerNode: 8, GPUsPerNode: rng.IntN(2) * 4, MemGBPerNode: 64}
	p := newPartition(cfg)
	for i := range p.nodes {
		if rng.IntN(8) == 0 {
			p.nodes[i] = node{down: true, upAt: time.Duration(rng.IntN(5)) * time.Hour}
		}
	}
	for k := range rng.IntN(30) {
		j := &job{id: int64(k), dc: 1 + rng.IntN(4), dg: min(rng.IntN(3), cfg.GPUsPerNode), dm: 8,
			req: JobRequest{Nodes: 1 + rng.IntN(3), Walltime: time.Duration(1+rng.IntN(6)) * time.Hour}}
		j.req.Nodes = min(j.req.Nodes, len(p.nodes))
		alloc := p.choose(p.nodes, j, nil)
		if alloc == nil {
			continue
		}
		take(p.nodes, j, alloc)
		j.alloc, j.state, j.start = alloc, Running, -time.Duration(rng.IntN(60))*time.Minute
		p.running = append(p.running, j)
	}
	return p
}

func randomDemand(rng *rand.Rand, p *partition) *job {
	return &job{dc: 1 + rng.IntN(8), dg: rng.IntN(p.cfg.GPUsPerNode + 1), dm: 8,
		req: JobRequest{Nodes: 1 + rng.IntN(len(p.nodes)+2)}}
}

// chooseBySort is choose's definition: every fitting node, fully sorted.
func chooseBySort(ns []node, j *job, avoid []bool) []int {
	var cand []int
	for i := range ns {
		if fits(&ns[i], j) {
			cand = append(cand, i)
		}
	}
	if len(cand) < j.req.Nodes {
		return nil
	}
	slices.SortFunc(cand, func(a, b int) int {
		if avoid != nil && avoid[a] != avoid[b] {
			if avoid[a] {
				return 1
			}
			return -1
		}
		if ns[a].cores != ns[b].cores {
			return ns[a].cores - ns[b].cores
		}
		if ns[a].gpus != ns[b].gpus {
			return ns[a].gpus - ns[b].gpus
		}
		return a - b
	})
	return cand[:j.req.Nodes]
}

func TestChooseMatchesFullSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := range 2000 {
		p := randomPartition(rng)
		j := randomDemand(rng, p)
		var avoid []bool
		if rng.IntN(2) == 0 {
			avoid = make([]bool, len(p.nodes))
			for i := range avoid {
				avoid[i] = rng.IntN(3) == 0
			}
		}
		got, want := p.choose(p.nodes, j, avoid), chooseBySort(p.nodes, j, avoid)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: choose(%d nodes of %d/%d/%d) = %v, full sort gives %v", trial, j.req.Nodes, j.dc, j.dg, j.dm, got, want)
		}
	}
}

// reservationBySort is reservation's definition: releases sorted by time, the fit
// count rescanned after each instant.
func reservationBySort(p *partition, head *job, now time.Duration) (time.Duration, []node, bool) {
	free := slices.Clone(p.nodes)
	if countFit(free, head) >= head.req.Nodes {
		return now, free, true
	}
	type rel struct {
		at   time.Duration
		j    *job
		node int
	}
	var rels []rel
	for _, j := range p.running {
		rels = append(rels, rel{j.expEnd(), j, -1})
	}
	for i := range free {
		if free[i].down && free[i].upAt > 0 {
			rels = append(rels, rel{free[i].upAt, nil, i})
		}
	}
	slices.SortStableFunc(rels, func(a, b rel) int { return int(a.at - b.at) })
	for k := 0; k < len(rels); {
		t := rels[k].at
		for ; k < len(rels) && rels[k].at == t; k++ {
			if r := rels[k]; r.j != nil {
				give(free, r.j, r.j.alloc)
			} else {
				free[r.node] = node{cores: p.cfg.CoresPerNode, gpus: p.cfg.GPUsPerNode, mem: p.cfg.MemGBPerNode}
			}
		}
		if countFit(free, head) >= head.req.Nodes {
			return max(t, now), free, true
		}
	}
	return 0, free, false
}

func TestReservationMatchesSortedScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for trial := range 2000 {
		p := randomPartition(rng)
		head := randomDemand(rng, p)
		now := time.Duration(rng.IntN(3)) * time.Hour
		wantAt, wantFree, wantOK := reservationBySort(p, head, now)
		gotAt, gotFree, gotOK := p.reservation(head, now)
		if gotAt != wantAt || gotOK != wantOK || !slices.Equal(gotFree, wantFree) {
			t.Fatalf("trial %d: reservation = %v %v, sorted scan = %v %v (free equal: %v)",
				trial, gotAt, gotOK, wantAt, wantOK, slices.Equal(gotFree, wantFree))
		}
	}
}

// TestEstimateStartRepeatable checks that the reused planning scratch leaks nothing
// from one estimate into the next and leaves the model untouched.
func TestEstimateStartRepeatable(t *testing.T) {
	pc := PartitionConfig{Name: "cpu", Nodes: 16, CoresPerNode: 32, MemGBPerNode: 128, MaxWalltime: 48 * time.Hour,
		Load: Load{Utilization: 1.05, MeanRuntime: 2 * time.Hour}}
	c, err := New(Config{Name: "rep", Start: t0, Partitions: []PartitionConfig{pc}}, 3)
	if err != nil {
		t.Fatal(err)
	}
	c.AdvanceTo(t0.Add(12 * time.Hour))
	before, _ := c.PartitionState("cpu")
	reqs := []JobRequest{
		{Partition: "cpu", Nodes: 1, CoresPerNode: 4, Walltime: time.Hour},
		{Partition: "cpu", Nodes: 8, CoresPerNode: 32, Walltime: 6 * time.Hour},
		{Partition: "cpu", Nodes: 2, CoresPerNode: 16, Walltime: 30 * time.Minute},
	}
	first := make([]time.Time, len(reqs))
	for i, r := range reqs {
		if first[i], err = c.EstimateStart(r); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 3 {
		for i := len(reqs) - 1; i >= 0; i-- {
			got, err := c.EstimateStart(reqs[i])
			if err != nil || !got.Equal(first[i]) {
				t.Fatalf("round %d request %d: estimate %v (%v), first answer %v", round, i, got, err, first[i])
			}
		}
	}
	if after, _ := c.PartitionState("cpu"); after != before {
		t.Fatalf("EstimateStart changed the model: %+v, was %+v", after, before)
	}
	if first[1].Equal(t0.Add(12 * time.Hour)) {
		t.Fatalf("an 8-node job on an overloaded partition should wait; got start now (test too weak)")
	}
}
