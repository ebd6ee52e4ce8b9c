package scheduler

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// variedRecords returns the six-machine records plus mutations that exercise every
// rule's failure paths (unknown GPU memory, down nodes, missing account, submit
// limits, no runtimes, missing arch, features, ...).
func variedRecords(rng *rand.Rand) []model.ResourceRecord {
	base := sixMachines().Records
	out := append([]model.ResourceRecord(nil), base...)
	for i := 0; i < 400; i++ {
		r := base[rng.IntN(len(base))]
		switch rng.IntN(12) {
		case 0:
			r.GPUMemoryGB = 0
		case 1:
			r.Nodes.Down = r.Nodes.Total
		case 2:
			r.Account = ""
		case 3:
			r.MaxSubmitPerUser, r.MyRunningJobs, r.MyPendingJobs = 2, 1, rng.IntN(3)
		case 4:
			r.ContainerRuntimes = nil
		case 5:
			r.Arch = ""
		case 6:
			r.Features = []string{"nvlink", "ib"}
		case 7:
			r.Health = []model.Health{model.HealthDown, model.HealthDegraded, model.HealthUnknown, ""}[rng.IntN(4)]
		case 8:
			r.MaxNodesPerJob = rng.IntN(3)
		case 9:
			r.GPUsPerNode, r.GPUModel = 0, ""
		case 10:
			r.WalltimeCap = model.Duration(time.Duration(rng.IntN(10)) * time.Hour)
		case 11:
			r.GPUModel = []string{"a100", "H100", "", "MI250X"}[rng.IntN(4)]
		}
		out = append(out, r)
	}
	return out
}

// variedRequests returns envelopes that make every built-in rule non-constant.
func variedRequests(rng *rand.Rand) []*Request {
	var out []*Request
	for i := 0; i < 60; i++ {
		env := a100Task().Envelope
		env.GPUs = model.IntRange{Min: rng.IntN(3), Max: rng.IntN(9)}
		env.Nodes = model.IntRange{Min: rng.IntN(3), Max: 1 + rng.IntN(8)}
		env.Constraints.Arch = [][]string{nil, {"x86_64"}, {"AARCH64"}}[rng.IntN(3)]
		env.Constraints.GPUModels = [][]string{nil, {"A100"}, {"h100", "A40"}}[rng.IntN(3)]
		env.Constraints.AvoidGPUModels = [][]string{nil, {"a100"}}[rng.IntN(2)]
		env.Constraints.MinGPUMemoryGB = []int{0, 40, 80}[rng.IntN(3)]
		env.Constraints.Features = [][]string{nil, {"NVLINK"}}[rng.IntN(2)]
		env.Constraints.AvoidSystems = [][]string{nil, {"delta"}}[rng.IntN(2)]
		env.Constraints.Container = []*model.Container{nil, {Image: "x.sif"}, {Image: "x.sif", Runtime: "singularity"}, {Image: "x", Runtime: "docker"}}[rng.IntN(4)]
		env.Walltime.Min = model.Duration(time.Duration(1+rng.IntN(5)) * time.Hour)
		r := &Request{Task: a100Task(), Envelope: env, Now: fixedNow}
		r.Target = []*model.Target{nil, {System: "lonestar6"}, {System: "Delta@NCSA", Partition: "gpuA100x4"}}[rng.IntN(3)]
		r.Exclude = [][]string{nil, {"Anvil@RCAC"}}[rng.IntN(2)]
		out = append(out, r)
	}
	return out
}

// TestQuickRulesAgree: every built-in rule's fast pass/fail (used by Place's decision
// pass) is its Check's Pass, on records and envelopes that reach every branch.
func TestQuickRulesAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	recs := variedRecords(rng)
	sysHealth := []model.Health{"", model.HealthOK, model.HealthDegraded, model.HealthDown, model.HealthNeedsLogin, model.HealthUnknown}
	fails, passes := map[string]int{}, map[string]int{}
	for _, r := range variedRequests(rng) {
		for i := range recs {
			rec := &recs[i]
			sys := sysHealth[rng.IntN(len(sysHealth))]
			c := &Candidate{System: rec.System, Partition: rec.Partition, Account: rec.Account, Record: rec, SystemHealth: sys}
			for _, rule := range DefaultRules() {
				q, ok := rule.(quickRule)
				if !ok {
					t.Fatalf("%s has no fast pass/fail", rule.Name())
				}
				want := !rule.Check(r, c).Pass
				if got := q.fails(r, rec, sys); got != want {
					t.Fatalf("%s on %s (system %q), envelope %+v: fails=%v, Check says fail=%v", rule.Name(), rec.Key(), sys, r.Envelope, got, want)
				}
				if want {
					fails[rule.Name()]++
				} else {
					passes[rule.Name()]++
				}
			}
		}
	}
	for _, rule := range DefaultRules() { // the inputs must reach both outcomes of every rule
		if fails[rule.Name()] == 0 || passes[rule.Name()] == 0 {
			t.Errorf("%s: %d fails, %d passes; widen the test inputs", rule.Name(), fails[rule.Name()], passes[rule.Name()])
		}
	}
}

// TestSortRankedMatchesComparator: the packed-key sort gives the comparator's order,
// with and without key ordinals, and with wrong (stale) ordinals.
func TestSortRankedMatchesComparator(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(300)
		in := make([]*Candidate, n)
		for i := range in {
			c := &Candidate{System: []string{"A", "B", "C"}[rng.IntN(3)], Partition: string(rune('a' + rng.IntN(20))), Account: string(rune('k' + i%7))}
			c.Scores.Total = round4(float64(rng.IntN(6)) / 7)
			c.OverWait = rng.IntN(5) == 0
			c.keyOrd = uint32(rng.IntN(n)) // stale or wrong ordinals must not change the result
			in[i] = c
		}
		if trial%10 == 0 {
			in[0].Scores.Total = 1.00005 // not a round4 value in [0,1]: fallback path
		}
		want := slices.Clone(in)
		slices.SortStableFunc(want, compareCandidates)
		for _, ordered := range []bool{false, true} {
			got := sortRanked(&Request{keyOrdered: ordered}, in)
			for i := range got {
				if compareCandidates(got[i], want[i]) != 0 {
					t.Fatalf("trial %d ordered=%v: position %d is %s (%v), want %s (%v)", trial, ordered, i,
						got[i].Key(), got[i].Scores.Total, want[i].Key(), want[i].Scores.Total)
				}
			}
		}
	}
}

// TestPlaceKeyOrdinalsCached: placing twice on an unsorted snapshot (the second
// placement uses cached key ordinals) and on a snapshot changed in place gives the
// same decisions as a fresh scheduler.
func TestPlaceKeyOrdinalsCached(t *testing.T) {
	snap := bigSnapshot(300)
	s := newTestScheduler(Options{})
	var first []string
	for round := 0; round < 3; round++ {
		d, err := s.Place(context.Background(), a100Task(), snap, PlaceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var keys []string
		for _, c := range d.Candidates {
			keys = append(keys, c.Key())
		}
		if round == 0 {
			first = keys
		} else if !slices.Equal(keys, first) {
			t.Fatalf("round %d: order differs from the first placement", round)
		}
	}
	// Rename partitions in place: the cached ordinals are now wrong.
	for i := range snap.Records {
		snap.Records[i].Partition = string(rune('z'-i%26)) + snap.Records[i].Partition
	}
	got, err := s.Place(context.Background(), a100Task(), snap, PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := newTestScheduler(Options{}).Place(context.Background(), a100Task(), snap, PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Candidates) != len(want.Candidates) {
		t.Fatalf("%d candidates, want %d", len(got.Candidates), len(want.Candidates))
	}
	for i := range got.Candidates {
		if got.Candidates[i].Key() != want.Candidates[i].Key() {
			t.Fatalf("position %d: %s, want %s", i, got.Candidates[i].Key(), want.Candidates[i].Key())
		}
	}
}
