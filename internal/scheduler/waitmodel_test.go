package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// twelveSites is a snapshot of 12 systems with one A100 partition each, the queue
// model's waits growing with the index (site-00 looks best, site-11 worst).
func twelveSites() *model.ResourceSnapshot {
	snap := &model.ResourceSnapshot{TakenAt: fixedNow, Seq: 7}
	for i := range 12 {
		sys := fmt.Sprintf("site-%02d", i)
		snap.Records = append(snap.Records, gpuRec(sys, "gpu", "acct", "x86_64", "A100", 4, 40, 64, 256, 20, 0, 10+10*i, 48, false, 1))
		snap.Systems = append(snap.Systems, model.SystemHealth{System: sys, Provider: "sim", Health: model.HealthOK, LastProbe: fixedNow, LastSuccess: fixedNow})
	}
	model.SortRecords(snap.Records)
	return snap
}

// siteAnswers answers every system 5h except those in now (0); it counts calls and,
// when batch is set, implements BatchEstimator.
type siteAnswers struct {
	mu      sync.Mutex
	now     map[string]bool
	single  int
	batches map[string][]int // system → sizes of its batches
}

func (s *siteAnswers) EstimateStart(_ context.Context, system string, _ model.JobSpec) (time.Time, error) {
	s.mu.Lock()
	s.single++
	s.mu.Unlock()
	if s.now[system] {
		return fixedNow, nil
	}
	return fixedNow.Add(5 * time.Hour), nil
}

type batchAnswers struct{ *siteAnswers }

func (b batchAnswers) EstimateStarts(_ context.Context, system string, specs []model.JobSpec) ([]EstimateResult, error) {
	b.mu.Lock()
	if b.batches == nil {
		b.batches = map[string][]int{}
	}
	b.batches[system] = append(b.batches[system], len(specs))
	b.mu.Unlock()
	out := make([]EstimateResult, len(specs))
	for i, sp := range specs {
		if sp.Tag == "" || sp.Partition == "" {
			return nil, errors.New("spec without tag or partition")
		}
		out[i].Start = fixedNow.Add(5 * time.Hour)
		if b.now[system] {
			out[i].Start = fixedNow
		}
	}
	return out, nil
}

// A candidate outside the 8 the queue model likes best, whose site says it starts now:
// a plain Estimator (8 calls) never asks it; a BatchEstimator asks every system once
// and chooses it.
func TestBatchEstimatesReachBeyondTheTop8(t *testing.T) {
	task := a100Task()
	plain := &siteAnswers{now: map[string]bool{"site-10": true}}
	d, err := newTestScheduler(Options{Estimator: plain, WalltimeProbes: -1}).Place(context.Background(), task, twelveSites(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if plain.single != 8 || strings.HasPrefix(d.Chosen, "site-10/") {
		t.Fatalf("plain estimator: %d calls, chose %s; want 8 calls and site-10 never asked", plain.single, d.Chosen)
	}
	for _, concurrent := range []bool{false, true} {
		b := batchAnswers{&siteAnswers{now: map[string]bool{"site-10": true}}}
		var est Estimator = b
		if concurrent {
			est = concurrentAnswers{b}
		}
		d, err = newTestScheduler(Options{Estimator: est, WalltimeProbes: -1}).Place(context.Background(), task, twelveSites(), PlaceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkBatched(t, d, b)
	}
}

// concurrentAnswers asks its systems at the same time.
type concurrentAnswers struct{ batchAnswers }

func (concurrentAnswers) ConcurrentBatches() bool { return true }

func checkBatched(t *testing.T, d *Decision, b batchAnswers) {
	t.Helper()
	if !strings.HasPrefix(d.Chosen, "site-10/") {
		t.Errorf("batched: chose %s, want site-10 (the site says it starts now)", d.Chosen)
	}
	if b.single != 0 || len(b.batches) != 12 {
		t.Errorf("batched: %d single calls, batches %v; want one batch per system", b.single, b.batches)
	}
	for sys, sizes := range b.batches {
		if len(sizes) != 1 || sizes[0] != 1 {
			t.Errorf("%s: batches %v, want one of 1", sys, sizes)
		}
	}
	for _, c := range d.Feasible() {
		if c.WaitSource != "site" {
			t.Errorf("%s: wait source %q, want site for every candidate", c.Key(), c.WaitSource)
		}
	}
}

// MaxEstimates is a per-system batch limit with a BatchEstimator.
func TestBatchEstimatesPerSiteLimit(t *testing.T) {
	snap := bigSnapshot(60) // 6 systems, many partitions each
	b := batchAnswers{&siteAnswers{}}
	if _, err := newTestScheduler(Options{Estimator: b, MaxEstimates: 2, WalltimeProbes: -1}).Place(context.Background(), a100Task(), snap, PlaceOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(b.batches) < 2 {
		t.Fatalf("batches %v: want several systems", b.batches)
	}
	for sys, sizes := range b.batches {
		if len(sizes) != 1 || sizes[0] > 2 {
			t.Errorf("%s: batches %v, want one of at most 2", sys, sizes)
		}
	}
}

// A failed batch leaves the queue model's waits.
type failingBatch struct{ siteAnswers }

func (f *failingBatch) EstimateStarts(context.Context, string, []model.JobSpec) ([]EstimateResult, error) {
	return nil, errors.New("ssh: connection refused")
}

func TestBatchEstimateFailureKeepsQueueModel(t *testing.T) {
	d, err := newTestScheduler(Options{Estimator: &failingBatch{}}).Place(context.Background(), a100Task(), twelveSites(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Feasible() {
		if c.WaitSource != "queue" {
			t.Errorf("%s: source %s after a failed batch, want queue", c.Key(), c.WaitSource)
		}
	}
}

// scaled is a WaitModel multiplying one system's estimates.
type scaled map[string]float64

func (s scaled) Correct(system, _ string, est time.Duration) time.Duration {
	if f, ok := s[system]; ok {
		return time.Duration(float64(est) * f)
	}
	return est
}

// The learned correction decides between two site estimates: site-00 says 1h and
// site-01 2h, but site-00's history says its estimates are 4× too optimistic.
func TestWaitModelReordersSiteEstimates(t *testing.T) {
	snap := twelveSites()
	snap.Records = snap.Records[:2]
	est := fixedEstimator{"site-00": time.Hour, "site-01": 2 * time.Hour}
	d, err := newTestScheduler(Options{Estimator: est}).Place(context.Background(), a100Task(), snap, PlaceOptions{})
	if err != nil || !strings.HasPrefix(d.Chosen, "site-00/") {
		t.Fatalf("without a wait model: chose %s (%v), want site-00", d.Chosen, err)
	}
	d, err = newTestScheduler(Options{Estimator: est, Waits: scaled{"site-00": 4, "site-01": 1.5}}).Place(context.Background(), a100Task(), snap, PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d.Chosen, "site-01/") {
		t.Fatalf("with site-00's estimates 4× too short: chose %s, want site-01", d.Chosen)
	}
	byKey := map[string]*Candidate{}
	for _, c := range d.Feasible() {
		byKey[c.System] = c
	}
	c0, c1 := byKey["site-00"], byKey["site-01"]
	if c0.EstWait != model.Duration(4*time.Hour) || c0.SiteWait == nil || *c0.SiteWait != model.Duration(time.Hour) || c0.WaitSource != "site" {
		t.Errorf("site-00: est %s site %v source %s; want 4h learned from the site's 1h", c0.EstWait, c0.SiteWait, c0.WaitSource)
	}
	if c1.EstWait != model.Duration(3*time.Hour) || c1.SiteWait == nil || *c1.SiteWait != model.Duration(2*time.Hour) {
		t.Errorf("site-01: est %s site %v; want 3h learned from 2h", c1.EstWait, c1.SiteWait)
	}
	if !strings.Contains(d.Rationale, "learned from the site's 2h") {
		t.Errorf("rationale does not say the wait is learned: %s", d.Rationale)
	}
	sameJSON(t, "learned waits", d)

	// A correction that changes nothing is not recorded as one.
	d, err = newTestScheduler(Options{Estimator: est, Waits: scaled{}}).Place(context.Background(), a100Task(), snap, PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Feasible() {
		if c.SiteWait != nil || strings.Contains(d.Rationale, "learned") {
			t.Errorf("%s: identity correction recorded: site wait %v, rationale %s", c.Key(), c.SiteWait, d.Rationale)
		}
	}
}

// History and queue-model waits are not site estimates: the wait model leaves them.
func TestWaitModelOnlyCorrectsSiteEstimates(t *testing.T) {
	d, err := newTestScheduler(Options{History: fixedHistory{"site-00/gpu": time.Hour}, Waits: scaled{"site-00": 10, "site-01": 10}}).
		Place(context.Background(), a100Task(), twelveSites(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Feasible() {
		if c.SiteWait != nil {
			t.Errorf("%s (%s): corrected without a site estimate", c.Key(), c.WaitSource)
		}
		if c.System == "site-00" && c.EstWait != model.Duration(time.Hour) {
			t.Errorf("history wait changed: %s", c.EstWait)
		}
	}
}
