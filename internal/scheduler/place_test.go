package scheduler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

func newTestScheduler(o Options) *Scheduler {
	o.Now = func() time.Time { return fixedNow }
	return New(o)
}

func TestPlacePinnedFeasible(t *testing.T) {
	task := a100Task()
	task.Target = &model.Target{System: "lonestar6"}
	d, err := newTestScheduler(Options{}).Place(context.Background(), task, sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Mode != ModePinned || !strings.HasPrefix(d.Chosen, "Lonestar6@TACC/gpu-a100/") {
		t.Errorf("mode %s chosen %s, want pinned Lonestar6 gpu-a100", d.Mode, d.Chosen)
	}
	if len(d.Feasible()) != 1 {
		t.Errorf("pin left %d feasible, want 1", len(d.Feasible()))
	}
}

func TestPlacePinnedInfeasibleCarriesRuleReason(t *testing.T) {
	task := a100Task()
	_, err := newTestScheduler(Options{}).Place(context.Background(), task, sixMachines(),
		PlaceOptions{Target: &model.Target{System: "Vista@TACC", Partition: "gh"}})
	var pe *PlacementError
	if !errors.As(err, &pe) || !errors.Is(err, ErrNoFeasible) {
		t.Fatalf("want a PlacementError, got %v", err)
	}
	if !pe.Pinned || !strings.Contains(err.Error(), "pinned to Vista@TACC/gh") ||
		!strings.Contains(err.Error(), "accelerator: H100 is not in constraints.gpu_models") {
		t.Errorf("error does not carry the failing rule's reason:\n%v", err)
	}
	if strings.Contains(err.Error(), "Delta@NCSA") {
		t.Errorf("pinned error lists systems outside the pin:\n%v", err)
	}
}

func TestPlacePinnedUnknownSystem(t *testing.T) {
	_, err := newTestScheduler(Options{}).Place(context.Background(), a100Task(), sixMachines(),
		PlaceOptions{Target: &model.Target{System: "Perlmutter"}})
	if err == nil || !strings.Contains(err.Error(), "no such system") {
		t.Fatalf("want an error naming the missing system, got %v", err)
	}
}

func TestPlaceExclude(t *testing.T) {
	d, err := newTestScheduler(Options{}).Place(context.Background(), a100Task(), sixMachines(),
		PlaceOptions{Exclude: []string{"Anvil@RCAC", "lonestar6"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Feasible() {
		if c.System != "Delta@NCSA" {
			t.Errorf("excluded system %s is feasible", c.System)
		}
	}
	if !strings.HasPrefix(d.Chosen, "Delta@NCSA/") {
		t.Errorf("chosen %s, want Delta", d.Chosen)
	}
}

func TestPlaceNoFeasibleListsReasonsPerSystem(t *testing.T) {
	task := a100Task()
	task.Envelope.Walltime = model.DurationRange{Min: hours(72), Max: hours(96)}
	d, err := newTestScheduler(Options{}).Place(context.Background(), task, sixMachines(), PlaceOptions{})
	if !errors.Is(err, ErrNoFeasible) {
		t.Fatalf("want ErrNoFeasible, got %v", err)
	}
	if d == nil || len(d.Candidates) != len(sixMachines().Records) {
		t.Fatalf("want the decision trace with every candidate, got %+v", d)
	}
	msg := err.Error()
	for _, s := range []string{"Delta@NCSA", "Anvil@RCAC", "Vista@TACC", "walltime: partition allows 48h; walltime.min is 72h"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error lacks %q:\n%s", s, msg)
		}
	}
}

func TestPlaceRefusesInvalidEnvelope(t *testing.T) {
	task := a100Task()
	task.Envelope.GPUs = model.IntRange{Min: 4, Max: 2}
	_, err := newTestScheduler(Options{}).Place(context.Background(), task, sixMachines(), PlaceOptions{})
	var fe *model.EnvelopeFieldError
	if !errors.As(err, &fe) || fe.Field != "gpus" {
		t.Fatalf("want an envelope error naming gpus, got %v", err)
	}
}

type fixedEstimator map[string]time.Duration

func (f fixedEstimator) EstimateStart(_ context.Context, system string, _ model.JobSpec) (time.Time, error) {
	w, ok := f[system]
	if !ok {
		return time.Time{}, errors.New("unsupported")
	}
	return fixedNow.Add(w), nil
}

type fixedHistory map[string]time.Duration

func (f fixedHistory) TypicalWait(system, partition string, _ int) (time.Duration, bool) {
	w, ok := f[system+"/"+partition]
	return w, ok
}

func TestPlaceEstimatorAndHistoryDriveWaits(t *testing.T) {
	s := newTestScheduler(Options{
		Estimator: fixedEstimator{"Delta@NCSA": 0},
		History:   fixedHistory{"Anvil@RCAC/gpu": 10 * time.Hour},
	})
	d, err := s.Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := map[string]string{}
	for _, c := range d.Feasible() {
		src[c.System] = c.WaitSource
	}
	if src["Delta@NCSA"] != "site" || src["Anvil@RCAC"] != "history" || src["Lonestar6@TACC"] != "queue" {
		t.Errorf("wait sources %v", src)
	}
	if !strings.HasPrefix(d.Chosen, "Delta@NCSA/") {
		t.Errorf("site says Delta starts now; chosen %s", d.Chosen)
	}
}

func TestPlaceMaxQueueWaitOrdersLast(t *testing.T) {
	task := a100Task()
	task.Envelope.MaxQueueWait = model.Duration(time.Hour)
	s := newTestScheduler(Options{History: fixedHistory{"Anvil@RCAC/gpu": 3 * time.Hour}})
	d, err := s.Place(context.Background(), task, sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := d.Feasible()
	if last := f[len(f)-1]; last.System != "Anvil@RCAC" || !last.OverWait {
		t.Errorf("candidate over max_queue_wait should rank last, got %s over=%v", last.Key(), last.OverWait)
	}
}

func TestPlaceObjectiveChangesChoice(t *testing.T) {
	task := a100Task()
	task.Envelope.Objective = model.ObjMinCost
	d, err := newTestScheduler(Options{}).Place(context.Background(), task, sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := d.ChosenCandidate()
	if c == nil || c.Sizing.GPUs != 1 || c.Record.Exclusive {
		t.Errorf("min_cost should pick one GPU on a shared partition, got %s %+v", d.Chosen, c.Sizing)
	}
}

func TestActiveRanker(t *testing.T) {
	if got := New(Options{}).ActiveRanker(); got != "heuristic" {
		t.Errorf("no LLM: %q", got)
	}
	if NewLLMRanker(nil) != nil {
		t.Error("NewLLMRanker(nil) must be nil so Options.LLM stays unset")
	}
	s := New(Options{LLM: &LLMRanker{Client: stubClient{name: "anthropic/m"}}})
	if got := s.ActiveRanker(); !strings.HasPrefix(got, "llm:anthropic/m") {
		t.Errorf("with LLM: %q", got)
	}
}

type countingEstimator struct{ calls int }

func (c *countingEstimator) EstimateStart(context.Context, string, model.JobSpec) (time.Time, error) {
	c.calls++
	return fixedNow.Add(time.Hour), nil
}

func TestEstimatorCallsAreBounded(t *testing.T) {
	// The site estimates (MaxEstimates) and the walltime probes (WalltimeProbes: the
	// estimator's 1h wait is long enough to ask whether walltime.min starts sooner)
	// are bounded separately.
	for _, tc := range []struct{ probes, want int }{{0, 2 + 2}, {1, 2 + 1}, {-1, 2}} {
		est := &countingEstimator{}
		s := newTestScheduler(Options{Estimator: est, MaxEstimates: 2, WalltimeProbes: tc.probes})
		if _, err := s.Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{}); err != nil {
			t.Fatal(err)
		}
		if est.calls != tc.want {
			t.Errorf("WalltimeProbes %d: estimator called %d times, want %d", tc.probes, est.calls, tc.want)
		}
	}
	est := &countingEstimator{}
	s := newTestScheduler(Options{Estimator: est, MaxEstimates: 2})
	d, err := s.Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	site := 0
	for _, c := range d.Feasible() {
		if c.WaitSource == "site" {
			site++
		}
	}
	if site != 2 {
		t.Errorf("%d candidates carry site estimates, want 2", site)
	}
}

// denyPartition is a rule outside the built-in set (called through the Rule interface).
type denyPartition struct{ name string }

func (denyPartition) Name() string { return "deny" }

func (d denyPartition) Check(_ *Request, c *Candidate) Verdict {
	if c.Partition == d.name {
		return Fail("partition " + d.name + " is denied here")
	}
	return Pass("not denied")
}

// TestPlaceCustomRule: a rule added to the chain (in the middle, and twice a built-in
// one) takes part in the decision and shows in the trace like the built-in ones.
func TestPlaceCustomRule(t *testing.T) {
	base, err := newTestScheduler(Options{}).Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	chosen := base.ChosenCandidate()
	rules := DefaultRules()
	rules = append(rules[:3], append([]Rule{denyPartition{chosen.Partition}, CapacityRule{}}, rules[3:]...)...)
	d, err := newTestScheduler(Options{Rules: rules}).Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.ChosenCandidate().Partition == chosen.Partition {
		t.Fatalf("chose the denied partition %s", chosen.Partition)
	}
	if len(d.Feasible()) >= len(base.Feasible()) {
		t.Fatalf("%d feasible with the deny rule, %d without", len(d.Feasible()), len(base.Feasible()))
	}
	d.Explain()
	denied := 0
	for _, c := range d.Candidates {
		if len(c.Verdicts) != len(rules) || c.Verdicts[3].Rule != "deny" {
			t.Fatalf("%s: verdicts %+v", c.Key(), c.Verdicts)
		}
		if c.Partition == chosen.Partition {
			denied++
			if c.Feasible || c.Verdicts[3].Pass || !strings.Contains(c.Verdicts[3].Reason, "denied here") {
				t.Fatalf("%s: feasible %v, deny verdict %+v", c.Key(), c.Feasible, c.Verdicts[3])
			}
		}
	}
	if denied == 0 {
		t.Fatal("no candidate has the denied partition")
	}
}

// TestCPUJobOnGPUNodesWaitsForCores: a CPU-only task on a partition whose nodes have
// GPUs (a PBS queue sharing its node, a Slurm CPU partition over GPU nodes) is measured
// in cores. Measured in GPUs it asked for none, "fit" a node whose cores were all
// taken, was estimated to start at once and cost nothing — found on the rig's PBS.
func TestCPUJobOnGPUNodesWaitsForCores(t *testing.T) {
	full := gpuRec("P@rig", "workq", "a", "x86_64", "A100", 4, 40, 64, 256, 1, 4, 1, 24, false, 1)
	full.FreeCores, full.Nodes = 0, model.NodeCounts{Allocated: 1, Total: 1} // GPUs idle, every core taken
	idle := cpuRec("S@rig", "cpu", "a", 64, 256, 1, 1, 0, 24, false, 1)
	idle.FreeCores = 32
	idle.Nodes = model.NodeCounts{Mixed: 1, Total: 1}
	idle.PendingJobs = 2 // a short line, but cores to spare
	snap := &model.ResourceSnapshot{TakenAt: fixedNow, Records: []model.ResourceRecord{full, idle}}
	task := &model.Task{ID: "t-cpu", Name: "cpu", Command: "true", Envelope: model.Envelope{
		CPUCores: model.IntRange{Min: 4, Max: 4}, Walltime: model.DurationRange{Min: hours(1), Max: hours(1)}}}
	task.Envelope.Normalize()
	d, err := newTestScheduler(Options{}).Place(context.Background(), task, snap, PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.Chosen, "S@rig/cpu/") {
		t.Errorf("chosen %s, want the partition with idle cores", d.Chosen)
	}
	d.Explain()
	if len(d.Candidates) != 2 {
		t.Fatalf("want both candidates in the trace, got %d", len(d.Candidates))
	}
	for _, c := range d.Candidates {
		if c.System == "P@rig" && (c.EstWait.D() < 10*time.Minute || c.CostSU <= 0) {
			t.Errorf("CPU job on the full GPU-node queue: wait %s cost %.1f SU, want a real wait and a cost in cores", c.EstWait, c.CostSU)
		}
	}
}
