package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// FuzzPlace throws arbitrary envelopes and partition shapes at Place. It must never
// panic; an accepted placement must size inside the envelope and the partition's
// limits; a refused one must say why for every candidate.
func FuzzPlace(f *testing.F) {
	f.Add(1, 4, 8, 64, 1, 1, 240, uint8(0), 4, 64, 256, 100, 0, 6, false)
	f.Add(8, 16, 64, 512, 2, 4, 60, uint8(1), 4, 64, 256, 100, 8, 100, true)
	f.Add(0, 0, 128, 1024, 1, 8, 30, uint8(2), 0, 128, 256, 1000, 16, 0, true)
	f.Add(3, 5, 1, 0, 1, 2, 90, uint8(3), 3, 128, 256, 84, 8, 12, true)
	f.Fuzz(func(t *testing.T, gMin, gMax, cMin, cMax, nMin, nMax, wallMin int, obj uint8,
		gpn, cores, mem, nodes, maxNodes, free int, excl bool) {
		small := func(v, lim int) int { // keep shapes plausible but allow 0 and negatives
			if v < -1 || v > lim {
				return v % (lim + 1)
			}
			return v
		}
		task := &model.Task{ID: "fz", Name: "fz", Command: "x", Envelope: model.Envelope{
			GPUs: model.IntRange{Min: small(gMin, 64), Max: small(gMax, 64)}, CPUCores: model.IntRange{Min: small(cMin, 4096), Max: small(cMax, 4096)},
			Nodes:     model.IntRange{Min: small(nMin, 64), Max: small(nMax, 64)},
			Walltime:  model.DurationRange{Min: model.Duration(time.Duration(small(wallMin, 10000)) * time.Minute)},
			Objective: model.Objectives[int(obj)%len(model.Objectives)],
		}}
		snap := sixMachines()
		r := gpuRec("Fuzz@X", "p", "acct", "x86_64", "A100", max(small(gpn, 16), 0), 40, max(small(cores, 512), 0), max(small(mem, 4096), 0),
			max(small(nodes, 10000), 0), 0, 3, 48, excl, 1)
		r.MaxNodesPerJob = max(small(maxNodes, 1000), 0)
		r.FreeGPUs = max(small(free, 100000), 0)
		if r.GPUsPerNode == 0 {
			r.GPUModel = ""
		}
		snap.Records = append(snap.Records, r)
		d, err := New(Options{Now: func() time.Time { return fixedNow }}).Place(context.Background(), task, snap, PlaceOptions{})
		if err != nil {
			var fe *model.EnvelopeFieldError
			if errors.As(err, &fe) {
				return
			}
			if !errors.Is(err, ErrNoFeasible) || d == nil {
				t.Fatalf("unexpected error: %v", err)
			}
			for _, c := range d.Candidates {
				if len(c.Failures()) == 0 {
					t.Fatalf("%s infeasible without a failing verdict", c.Key())
				}
			}
			return
		}
		env := d.Envelope
		for _, c := range d.Feasible() {
			s, rec := c.Sizing, c.Record
			if s.Nodes < env.Nodes.Min || s.Nodes > env.Nodes.Max || (rec.MaxNodesPerJob > 0 && s.Nodes > rec.MaxNodesPerJob) {
				t.Fatalf("%s: %d nodes outside envelope %v / partition max %d", c.Key(), s.Nodes, env.Nodes, rec.MaxNodesPerJob)
			}
			if s.GPUs < env.GPUs.Min || s.GPUs > env.GPUs.Max || s.GPUs != s.GPUsPerNode*s.Nodes || s.GPUsPerNode > max(rec.GPUsPerNode, 0) {
				t.Fatalf("%s: %d GPUs (%d/node) outside envelope %v / node %d", c.Key(), s.GPUs, s.GPUsPerNode, env.GPUs, rec.GPUsPerNode)
			}
			if s.CPUsPerTask < 1 || (rec.CPUCoresPerNode > 0 && s.CPUsPerTask > rec.CPUCoresPerNode) {
				t.Fatalf("%s: %d cpus per node (node has %d)", c.Key(), s.CPUsPerTask, rec.CPUCoresPerNode)
			}
			if s.Walltime < env.Walltime.Min || s.Walltime > env.Walltime.Max {
				t.Fatalf("%s: walltime %s outside %v", c.Key(), s.Walltime, env.Walltime)
			}
		}
		d.Explain()
		for _, c := range d.Candidates {
			if len(c.Verdicts) < len(d.Rules) {
				t.Fatalf("%s: %d verdicts", c.Key(), len(c.Verdicts))
			}
		}
	})
}
