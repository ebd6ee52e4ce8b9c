package slurm

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// earliestExhaustive is the plan's search written the plain way: every node of the set at
// every time of the set (now, each hold's end, each reserved start), in order. earliest
// must give the same time and nodes with less work.
func (p *plan) earliestExhaustive(set []*planNode, r PlanRequest) (time.Time, []*planNode) {
	if r.Nodes < 1 || r.Nodes > len(set) {
		return time.Time{}, nil
	}
	d := r.Walltime
	if d <= 0 {
		d = planHorizon
	}
	times := []time.Time{p.now}
	for _, n := range set {
		for _, s := range n.held {
			if s.to.After(p.now) {
				times = append(times, s.to)
			}
		}
		for _, t := range n.reserved {
			if t.After(p.now) {
				times = append(times, t)
			}
		}
	}
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	times = slices.CompactFunc(times, func(a, b time.Time) bool { return a.Equal(b) })
	var work int
	for _, t := range times {
		var chosen []*planNode
		for _, n := range set {
			if n.fits(t, t.Add(d), r.CPUsPerNode, r.GPUsPerNode, &work) {
				if chosen = append(chosen, n); len(chosen) == r.Nodes {
					return t, chosen
				}
			}
		}
	}
	return time.Time{}, nil
}

func names(ns []*planNode) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.name)
	}
	return out
}

// TestEarliestIsTheExhaustiveSearch: over random clusters, running jobs and queues of
// one- and many-node jobs, each queued job's planned start and nodes are those of the
// exhaustive search, and so is every new request's behind them.
func TestEarliestIsTheExhaustiveSearch(t *testing.T) {
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 19))
		var nodes []NodeLine
		for i := range 1 + rng.IntN(10) {
			nodes = append(nodes, NodeLine{Partition: "p", Node: fmt.Sprintf("n%02d", i), State: "mixed",
				CPUs: []int{4, 8, 16}[rng.IntN(3)], GPUs: []int{0, 2, 4}[rng.IntN(3)], PartitionUp: true})
		}
		p := newPlan(nodes, now)
		set := p.nodesOf("p")
		for _, n := range set {
			for range rng.IntN(4) {
				n.held = append(n.held, span{now, now.Add(time.Duration(1+rng.IntN(40)) * time.Minute),
					1 + rng.IntN(n.cpus), rng.IntN(n.gpus + 1)})
			}
		}
		random := func() PlanRequest {
			wall := time.Duration(1+rng.IntN(30)) * time.Minute
			return PlanRequest{Nodes: 1 + rng.IntN(min(3, len(set))), CPUsPerNode: 1 + rng.IntN(16),
				GPUsPerNode: rng.IntN(5), Walltime: wall, Runtime: time.Duration(1+rng.Int64N(int64(wall))) * 1}
		}
		for k := range 40 {
			r := random()
			if k%10 == 9 {
				r.Walltime = 0 // unlimited
			}
			want, wantNodes := p.earliestExhaustive(set, r)
			got, gotNodes := p.earliest(set, r)
			if !got.Equal(want) || !slices.Equal(names(gotNodes), names(wantNodes)) {
				t.Fatalf("seed %d job %d %+v: earliest = %v on %v; the exhaustive search: %v on %v",
					seed, k, r, got, names(gotNodes), want, names(wantNodes))
			}
			if gotNodes != nil && k%2 == 0 { // every other one queued ahead; the rest are new requests
				p.take(gotNodes, got, r)
			}
		}
	}
}
