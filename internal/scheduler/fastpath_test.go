package scheduler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
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

// randomRecords returns n records of random shapes, loads, limits and health over a
// few systems: federations no fixture describes.
func randomRecords(rng *rand.Rand, n int) []model.ResourceRecord {
	systems := []string{"Delta@NCSA", "DeltaAI@NCSA", "Anvil@RCAC", "Vista@TACC", "Lonestar6@TACC"}
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	out := make([]model.ResourceRecord, n)
	for i := range out {
		r := &out[i]
		r.System, r.Partition, r.Account = systems[rng.IntN(len(systems))], fmt.Sprintf("p%03d", i), pick("acct", "acct-gpu", "")
		r.Arch = pick("x86_64", "aarch64", "")
		r.CPUCoresPerNode, r.MemoryPerNodeGB = []int{0, 16, 64, 128}[rng.IntN(4)], []int{0, 128, 256, 512}[rng.IntN(4)]
		if rng.IntN(3) > 0 {
			r.GPUsPerNode, r.GPUModel, r.GPUMemoryGB = 1+rng.IntN(8), pick("A100", "H100", "a40", "MI250X", ""), []int{0, 16, 40, 80, 96}[rng.IntN(5)]
		}
		r.Nodes.Total = rng.IntN(200)
		r.Nodes.Idle, r.Nodes.Down = rng.IntN(r.Nodes.Total+1), rng.IntN(r.Nodes.Total+1)
		r.TotalGPUs, r.TotalCores = r.GPUsPerNode*r.Nodes.Total, r.CPUCoresPerNode*r.Nodes.Total
		r.FreeGPUs, r.FreeCores = r.GPUsPerNode*r.Nodes.Idle, r.CPUCoresPerNode*r.Nodes.Idle
		r.RunningJobs, r.PendingJobs = rng.IntN(100), rng.IntN(100)
		r.WalltimeCap = model.Duration(time.Duration(rng.IntN(72)) * time.Hour)
		r.MaxNodesPerJob, r.Exclusive, r.ChargeFactor = rng.IntN(20), rng.IntN(2) == 0, float64(rng.IntN(4))
		r.MaxSubmitPerUser, r.MaxRunningPerUser, r.MyRunningJobs, r.MyPendingJobs = rng.IntN(4), rng.IntN(3), rng.IntN(3), rng.IntN(3)
		r.ContainerRuntimes = [][]string{nil, {"apptainer"}, {"singularity", "podman"}}[rng.IntN(3)]
		r.Features = [][]string{nil, {"nvlink"}, {"ib", "NVLINK"}}[rng.IntN(3)]
		r.Health = []model.Health{model.HealthOK, model.HealthOK, model.HealthDegraded, model.HealthDown, ""}[rng.IntN(5)]
	}
	return out
}

// randomSystems gives the systems of randomRecords random probe health.
func randomSystems(rng *rand.Rand) []model.SystemHealth {
	hs := []model.Health{model.HealthOK, model.HealthOK, model.HealthDegraded, model.HealthDown, model.HealthNeedsLogin, model.HealthUnknown}
	var out []model.SystemHealth
	for _, s := range []string{"Delta@NCSA", "DeltaAI@NCSA", "Anvil@RCAC", "Vista@TACC"} { // Lonestar6 has no entry
		out = append(out, model.SystemHealth{System: s, Health: hs[rng.IntN(len(hs))]})
	}
	return out
}

// TestRulesWrittenOnce: every built-in rule of the chain is a builtin (its decision and
// its words in one file), each outcome its test gives has words (the same whether
// written alone or in a trace's shared block, and unchanged by later ones), a rule that declares
// itself constant for a request (ConstantRule) tests the same on every record, and the
// inputs reach both outcomes of every rule.
func TestRulesWrittenOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 2))
	recs := append(variedRecords(rng), randomRecords(rng, 300)...)
	sysHealth := []model.Health{"", model.HealthOK, model.HealthDegraded, model.HealthDown, model.HealthNeedsLogin, model.HealthUnknown}
	fails, passes := map[string]int{}, map[string]int{}
	var w words
	var kept, want []string // reasons in shared blocks must not change as more are written
	for _, r := range variedRequests(rng) {
		for _, rule := range DefaultRules() {
			b, ok := rule.(builtin)
			if !ok {
				t.Fatalf("%s is not a builtin rule (test and reason)", rule.Name())
			}
			cpass, constant := false, false
			if cr, ok := rule.(ConstantRule); ok {
				cpass, constant = cr.Constant(r)
			}
			var constReason string // what Explain words a constant rule once with
			if constant {
				var zero model.ResourceRecord
				constReason = b.reason(nil, r, &zero, "", b.test(r, &zero, ""))
			}
			for i := range recs {
				rec := &recs[i]
				sys := sysHealth[rng.IntN(len(sysHealth))]
				o := b.test(r, rec, sys)
				plain, shared := b.reason(nil, r, rec, sys, o), b.reason(&w, r, rec, sys, o)
				if constant && (o.failed() == cpass || plain != constReason) {
					t.Fatalf("%s is constant (pass %v, %q) for envelope %+v but fails=%v (%q) on %s",
						rule.Name(), cpass, constReason, r.Envelope, o.failed(), plain, rec.Key())
				}
				if plain == "" || shared != plain {
					t.Fatalf("%s on %s (system %q): outcome %d has reason %q, %q in a shared block", rule.Name(), rec.Key(), sys, o, plain, shared)
				}
				kept = append(kept, shared)
				want = append(want, plain)
				if o.failed() {
					fails[rule.Name()]++
				} else {
					passes[rule.Name()]++
				}
			}
		}
	}
	for i := range kept {
		if kept[i] != want[i] {
			t.Fatalf("reason %d changed to %q after later ones were written, want %q", i, kept[i], want[i])
		}
	}
	for _, rule := range DefaultRules() { // the inputs must reach both outcomes of every rule
		if fails[rule.Name()] == 0 || passes[rule.Name()] == 0 {
			t.Errorf("%s: %d fails, %d passes; widen the test inputs", rule.Name(), fails[rule.Name()], passes[rule.Name()])
		}
	}
}

// TestDecisionPassRunsTraceOrder: the decision pass runs the chain in its one order
// (DefaultRules), so the rule it recorded for an infeasible record is the first
// failing verdict of the explained trace, and a record it found feasible has none;
// and every verdict of the trace (worded once per trace for constant rules, in shared
// blocks for the others) is the rule's Check.
func TestDecisionPassRunsTraceOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 1))
	snaps := []*model.ResourceSnapshot{
		{Records: variedRecords(rng), Systems: sixMachines().Systems},
		{Records: randomRecords(rng, 500), Systems: randomSystems(rng)},
	}
	checked := map[failCode]int{}
	for _, snap := range snaps {
		for _, r := range variedRequests(rng) {
			task := a100Task()
			task.Envelope, task.Target = r.Envelope, r.Target
			d, err := newTestScheduler(Options{}).Place(context.Background(), task, snap, PlaceOptions{Exclude: r.Exclude})
			if err != nil && !errors.Is(err, ErrNoFeasible) {
				continue // an invalid envelope
			}
			codes := map[*model.ResourceRecord]failCode{}
			if d.lazy != nil {
				for i, m := range d.lazy.codes {
					codes[&snap.Records[i]] = m
				}
			} else { // Place explained already (no feasible candidate): re-run the pass
				nr := len(snap.Records)
				cs := make([]failCode, nr)
				h := newHealthIndex(snap.Systems)
				req := &Request{Task: task, Envelope: d.Envelope, Target: d.Target, Exclude: r.Exclude}
				runChain(DefaultRules(), req, snap.Records, &h, cs)
				for i, m := range cs {
					codes[&snap.Records[i]] = m
				}
			}
			d.Explain()
			req := &Request{Task: task, Envelope: d.Envelope, Target: d.Target, Exclude: r.Exclude, explain: true}
			for _, c := range d.Candidates {
				for i, rule := range DefaultRules() { // the trace's words are each rule's own
					if v, plain := c.Verdicts[i], rule.Check(req, c); v.Rule != rule.Name() || v.Pass != plain.Pass || v.Reason != plain.Reason {
						t.Fatalf("%s: trace verdict %+v, %s's Check gives %+v", c.Key(), v, rule.Name(), plain)
					}
				}
				want := failCode(0)
				for i, v := range c.Verdicts {
					if !v.Pass && v.Rule != "sizing" {
						want = failCode(i + 1)
						break
					}
				}
				got := codes[c.Record]
				if got == sizingFailed && want == 0 && !c.Feasible {
					got = 0
				}
				if got != want {
					t.Fatalf("%s: the decision pass recorded rule %d, the trace's first failure is rule %d (%+v)", c.Key(), got, want, c.Verdicts)
				}
				checked[want]++
			}
		}
	}
	if len(checked) < 6 {
		t.Fatalf("only %d distinct first failures (%v); widen the test inputs", len(checked), checked)
	}
}

// TestSortRowsMatchesComparator: the packed-key sort gives the comparator's order,
// with and without key ordinals, with wrong (stale) ordinals and on the fallback path.
func TestSortRowsMatchesComparator(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(300)
		recs := make([]model.ResourceRecord, n)
		rows := make([]row, n)
		in := make([]*Candidate, n)
		for i := range in {
			recs[i] = model.ResourceRecord{System: []string{"A", "B", "C"}[rng.IntN(3)], Partition: string(rune('a' + rng.IntN(20))), Account: string(rune('k' + i%7))}
			w := &rows[i]
			w.rec = uint32(i)
			w.setTotal(float64(rng.IntN(6)) / 7)
			w.over = rng.IntN(5) == 0
			w.keyOrd = uint32(rng.IntN(n)) // stale or wrong ordinals must not change the result
		}
		if trial%10 == 0 {
			rows[0].total, rows[0].q = 1.00005, noQ // not a round4 value in [0,1]: fallback path
		}
		for i := range in {
			in[i] = &Candidate{System: recs[i].System, Partition: recs[i].Partition, Account: recs[i].Account, Scores: Scores{Total: rows[i].total}, OverWait: rows[i].over}
		}
		want := slices.Clone(in)
		slices.SortStableFunc(want, compareCandidates)
		for _, ordered := range []bool{false, true} {
			got := sortRows(&Request{keyOrdered: ordered}, recs, rows)
			for i, k := range got {
				if compareCandidates(in[k], want[i]) != 0 {
					t.Fatalf("trial %d ordered=%v: position %d is %s (%v), want %s (%v)", trial, ordered, i,
						in[k].Key(), in[k].Scores.Total, want[i].Key(), want[i].Scores.Total)
				}
			}
		}
	}
}

// TestRoundHalfAway: the fast rounding is math.Round bit for bit, on the values the
// scores produce and on the edges (halves, the largest float below one half, signed
// zeros, huge values, NaN and infinities).
func TestRoundHalfAway(t *testing.T) {
	vals := []float64{0, math.Copysign(0, -1), 0.5, 1.5, 2.5, 0.49999999999999994, 4503599627370495.5,
		1 << 52, 1<<52 + 1, 1e300, -0.5, -1.5, -2.4, math.NaN(), math.Inf(1), math.Inf(-1), 9999.5, 10000}
	rng := rand.New(rand.NewPCG(1, 9))
	for i := 0; i < 100000; i++ {
		vals = append(vals, rng.Float64()*1e4, float64(rng.IntN(20000))/2, math.Nextafter(float64(rng.IntN(10000))+0.5, 0),
			-rng.Float64()*1e4, -float64(rng.IntN(20000))/2, (rng.Float64()-0.5)*1e17, (rng.Float64()-0.5)*2)
	}
	for _, v := range vals {
		got, want := roundHalfAway(v), math.Round(v)
		if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
			t.Fatalf("roundHalfAway(%v) = %v, math.Round gives %v", v, got, want)
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
		for _, c := range d.Feasible() {
			keys = append(keys, c.Key())
		}
		if len(keys) == 0 {
			t.Fatal("no feasible candidate")
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
	gf, wf := got.Feasible(), want.Feasible()
	if len(gf) != len(wf) || len(gf) == 0 {
		t.Fatalf("%d feasible candidates, want %d (> 0)", len(gf), len(wf))
	}
	for i := range gf {
		if gf[i].Key() != wf[i].Key() {
			t.Fatalf("position %d: %s, want %s", i, gf[i].Key(), wf[i].Key())
		}
	}
}

// TestPlaceMatchesPlainRules: over varied records (and random federations) and
// envelopes, the decision built
// from compact rows is what the plain definitions give: a candidate is feasible
// exactly when every rule's Check passes and Size succeeds, its sizing is Size's, the
// feasible candidates are in compareCandidates order with ranks 1..n, and the chosen
// one is the first, sharing Decision.Spec.
func TestPlaceMatchesPlainRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 3))
	snaps := []*model.ResourceSnapshot{
		{Records: variedRecords(rng), Systems: sixMachines().Systems},
		{Records: randomRecords(rng, 600), Systems: randomSystems(rng)},
	}
	checked := make([]int, len(snaps))
	reqs := variedRequests(rng)
	for k := range len(snaps) * len(reqs) {
		snap, recs, r := snaps[k%len(snaps)], snaps[k%len(snaps)].Records, reqs[k/len(snaps)]
		task := a100Task()
		task.Envelope, task.Target = r.Envelope, r.Target
		d, err := newTestScheduler(Options{}).Place(context.Background(), task, snap, PlaceOptions{Exclude: r.Exclude})
		if err != nil && !errors.Is(err, ErrNoFeasible) {
			var fe *model.EnvelopeFieldError
			if errors.As(err, &fe) {
				continue
			}
			t.Fatal(err)
		}
		feasible := d.Feasible()
		if err == nil && (len(feasible) == 0 || d.Chosen != feasible[0].Key() || d.Spec != feasible[0].Sizing || d.ChosenCandidate() != feasible[0]) {
			t.Fatalf("chosen %s / spec %p do not match the first feasible candidate", d.Chosen, d.Spec)
		}
		req := &Request{Task: task, Envelope: d.Envelope, Target: d.Target, Exclude: r.Exclude, explain: true}
		for i, c := range feasible {
			if c.Rank != i+1 || c.HeuristicRank != i+1 {
				t.Fatalf("%s at position %d has rank %d / heuristic rank %d", c.Key(), i, c.Rank, c.HeuristicRank)
			}
			if i > 0 && compareCandidates(feasible[i-1], c) > 0 { // variedRecords repeats keys: ties allowed
				t.Fatalf("%s ranked after %s against compareCandidates", c.Key(), feasible[i-1].Key())
			}
			spec, note, ok := Size(req, c.Record)
			if !ok || !reflect.DeepEqual(spec, *c.Sizing) || note != c.SizingNote {
				t.Fatalf("%s: sizing %+v (%q), Size gives %+v (%q, ok %v)", c.Key(), *c.Sizing, c.SizingNote, spec, note, ok)
			}
		}
		d.Explain()
		nf := 0
		for _, c := range d.Candidates {
			pass := true
			for _, rule := range DefaultRules() {
				pass = pass && rule.Check(req, c).Pass
			}
			if pass {
				_, _, pass = Size(req, c.Record)
			}
			if pass != c.Feasible {
				t.Fatalf("%s: feasible %v, the plain rules and sizing say %v", c.Key(), c.Feasible, pass)
			}
			if pass {
				nf++
			}
		}
		if nf != len(feasible) || len(d.Candidates) != len(recs) {
			t.Fatalf("%d of %d candidates feasible after Explain, %d before; %d records", nf, len(d.Candidates), len(feasible), len(recs))
		}
		checked[k%len(snaps)] += nf
	}
	for i, n := range checked {
		if n == 0 {
			t.Fatalf("snapshot %d: no request had a feasible candidate; widen the test inputs", i)
		}
	}
}

// TestModelExcludedCache: the per-request model answers are the plain ones whether the
// records share the model strings' bytes or not, and beyond the cache's size.
func TestModelExcludedCache(t *testing.T) {
	models := []string{"A100", "a100", "H100", "A40", "MI250X", "", "V100", "L40S", "GH200", "B200", "h100"}
	env := a100Task().Envelope
	env.Constraints.GPUModels = []string{"A100", "h100"}
	env.Constraints.AvoidGPUModels = []string{"H100"}
	r := &Request{Envelope: env}
	for round := 0; round < 3; round++ {
		for _, m := range models {
			for _, s := range []string{m, strings.Clone(m), string([]byte(m))} {
				want := !containsFold(env.Constraints.GPUModels, s) || containsFold(env.Constraints.AvoidGPUModels, s)
				if got := modelExcluded(r, s); got != want {
					t.Fatalf("round %d: modelExcluded(%q) = %v, want %v", round, s, got, want)
				}
			}
		}
	}
}

// TestHeuristicRankerRankMatchesPlace: the Ranker interface's Rank, given Place's
// feasible candidates in any order with their scores cleared, orders and scores them
// as Place did.
func TestHeuristicRankerRankMatchesPlace(t *testing.T) {
	task := a100Task()
	d, err := newTestScheduler(Options{}).Place(context.Background(), task, bigSnapshot(300), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := d.Feasible()
	in := make([]*Candidate, len(want))
	for i, c := range want {
		cc := *c
		cc.Scores, cc.EstWait, cc.WaitSource, cc.CostSU, cc.HeuristicRank, cc.Rank = Scores{}, 0, "", 0, 0, 0
		in[i] = &cc
	}
	rand.New(rand.NewPCG(3, 3)).Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	req := &Request{Task: task, Envelope: d.Envelope, Now: fixedNow}
	got, err := (&HeuristicRanker{}).Rank(context.Background(), req, in)
	if err != nil || len(got) != len(want) {
		t.Fatalf("Rank: %d candidates, %v", len(got), err)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Key() != w.Key() || g.Scores != w.Scores || g.EstWait != w.EstWait || g.WaitSource != w.WaitSource || g.CostSU != w.CostSU || g.HeuristicRank != i+1 {
			t.Fatalf("position %d: %s %+v wait %s (%s) %v SU rank %d; Place had %s %+v wait %s (%s) %v SU",
				i, g.Key(), g.Scores, g.EstWait, g.WaitSource, g.CostSU, g.HeuristicRank, w.Key(), w.Scores, w.EstWait, w.WaitSource, w.CostSU)
		}
	}
}
