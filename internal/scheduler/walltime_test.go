package scheduler

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// backfillEstimator answers like a backfilling site: a job asking at most fit starts
// after short, a longer one after long (on every system).
type backfillEstimator struct {
	long, short time.Duration
	fit         model.Duration
	mu          sync.Mutex
	calls       int
}

func (b *backfillEstimator) EstimateStart(_ context.Context, _ string, spec model.JobSpec) (time.Time, error) {
	b.mu.Lock()
	b.calls++
	b.mu.Unlock()
	if spec.Walltime <= b.fit {
		return fixedNow.Add(b.short), nil
	}
	return fixedNow.Add(b.long), nil
}

// TestPlaceShorterWalltimeWhenItStartsSooner: walltime is the envelope's maximum unless
// the site says walltime.min starts materially sooner (ShorterWalltimeGain: at least
// 15m and a quarter of the longer wait); the chosen candidate's rationale says which
// and why, with the numbers.
func TestPlaceShorterWalltimeWhenItStartsSooner(t *testing.T) {
	for _, tc := range []struct {
		name        string
		long, short time.Duration
		wantWall    model.Duration
		wantNote    string // in the chosen candidate's walltime note and the rationale
	}{
		{"35m sooner: shorter", time.Hour, 25 * time.Minute, hours(4),
			"walltime 4h instead of 8h: starts 35m sooner by backfill (site estimates 25m vs 1h)"},
		{"10m sooner: under 15m", time.Hour, 50 * time.Minute, hours(8),
			"walltime 8h, the envelope's max: 4h would start only 10m sooner (needs 15m)"},
		{"20m sooner of 2h: under a quarter", 2 * time.Hour, 100 * time.Minute, hours(8),
			"walltime 8h, the envelope's max: 4h would start only 20m sooner (needs 30m)"},
		{"no sooner", time.Hour, time.Hour, hours(8),
			"walltime 8h, the envelope's max: 4h would start no sooner"},
		{"starts within 15m anyway: not asked", 10 * time.Minute, 0, hours(8), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			est := &backfillEstimator{long: tc.long, short: tc.short, fit: hours(4)}
			s := newTestScheduler(Options{Estimator: est})
			d, err := s.Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c := d.ChosenCandidate()
			if d.Spec.Walltime != tc.wantWall || c.Sizing.Walltime != tc.wantWall {
				t.Errorf("walltime %s (candidate %s), want %s", d.Spec.Walltime, c.Sizing.Walltime, tc.wantWall)
			}
			if c.WalltimeNote != tc.wantNote {
				t.Errorf("walltime note %q, want %q", c.WalltimeNote, tc.wantNote)
			}
			if tc.wantNote != "" && !strings.Contains(d.Rationale, tc.wantNote) {
				t.Errorf("rationale %q lacks %q", d.Rationale, tc.wantNote)
			}
			want := tc.long
			if tc.wantWall == hours(4) {
				want = tc.short
			}
			if c.EstWait.D() != want || c.WaitSource != "site" {
				t.Errorf("estimated wait %s (%s), want the site's %s for the walltime asked", c.EstWait, c.WaitSource, want)
			}
			var buf strings.Builder
			if err := d.Table(&buf); err != nil {
				t.Fatal(err)
			}
			if tc.wantNote != "" && !strings.Contains(buf.String(), tc.wantNote[:40]) {
				t.Errorf("the table's reason lacks the walltime note:\n%s", buf.String())
			}
		})
	}
}

// TestWalltimeProbeCost: a shorter walltime taken lowers the candidate's cost estimate
// with it, and the candidate's wait score reflects the shorter wait.
func TestWalltimeProbeCost(t *testing.T) {
	base, err := newTestScheduler(Options{Estimator: &backfillEstimator{long: time.Hour, short: time.Hour, fit: hours(4)}}).
		Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := newTestScheduler(Options{Estimator: &backfillEstimator{long: time.Hour, short: 0, fit: hours(4)}}).
		Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := d.ChosenCandidate()
	var b *Candidate
	for _, x := range base.Feasible() {
		if x.Key() == c.Key() {
			b = x
		}
	}
	if b == nil {
		t.Fatalf("%s is not feasible without the shorter walltime", c.Key())
	}
	if c.Sizing.Walltime != hours(4) || b.Sizing.Walltime != hours(8) || c.CostSU*2 != b.CostSU {
		t.Errorf("%s shortened: %s, %v SU; unshortened: %s, %v SU (want half the cost at half the walltime)", c.Key(), c.Sizing.Walltime, c.CostSU, b.Sizing.Walltime, b.CostSU)
	}
	// Wait scores are relative to the decision's least wait: the shortened candidate
	// starts now and scores 1; every candidate of the same decision that waits longer
	// scores less.
	if c.Scores.Wait != 1 {
		t.Errorf("shortened scores %+v: want a wait score of 1", c.Scores)
	}
	for _, x := range d.Feasible() {
		if x.EstWait.D() > c.EstWait.D() && x.Scores.Wait >= c.Scores.Wait {
			t.Errorf("%s waits %s against %s's %s but scores %.4f on the wait, not less than %.4f",
				x.Key(), x.EstWait.D(), c.Key(), c.EstWait.D(), x.Scores.Wait, c.Scores.Wait)
		}
	}
}

// TestHeuristicRankerRankMatchesPlaceWithProbes: with a backfilling site, the Ranker
// interface's Rank, given Size's candidates in any order, takes the same shorter
// walltimes with the same notes, waits, costs and order as Place.
func TestHeuristicRankerRankMatchesPlaceWithProbes(t *testing.T) {
	task := a100Task()
	snap := bigSnapshot(300)
	est := func() *backfillEstimator {
		return &backfillEstimator{long: time.Hour, short: 5 * time.Minute, fit: hours(4)}
	}
	d, err := newTestScheduler(Options{Estimator: est()}).Place(context.Background(), task, snap, PlaceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := d.Feasible()
	req := &Request{Task: task, Envelope: d.Envelope, Now: fixedNow}
	in := make([]*Candidate, len(want))
	shortened := 0
	for i, c := range want {
		spec, note, ok := Size(req, c.Record)
		if !ok {
			t.Fatalf("%s: Size refused", c.Key())
		}
		if c.Sizing.Walltime != spec.Walltime {
			shortened++
		}
		in[i] = &Candidate{System: c.System, Partition: c.Partition, Account: c.Account, Record: c.Record, Sizing: &spec, SizingNote: note, keyOrd: c.keyOrd}
	}
	if shortened == 0 {
		t.Fatal("no candidate took the shorter walltime; the test needs one")
	}
	rand.New(rand.NewPCG(8, 1)).Shuffle(len(in), func(i, j int) { in[i], in[j] = in[j], in[i] })
	got, err := (&HeuristicRanker{Estimator: est()}).Rank(context.Background(), req, in)
	if err != nil || len(got) != len(want) {
		t.Fatalf("Rank: %d candidates, %v", len(got), err)
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Key() != w.Key() || !reflect.DeepEqual(*g.Sizing, *w.Sizing) || g.WalltimeNote != w.WalltimeNote || g.Scores != w.Scores ||
			g.EstWait != w.EstWait || g.CostSU != w.CostSU {
			t.Fatalf("position %d: %s %s %q wait %s %v SU %+v; Place had %s %s %q wait %s %v SU %+v", i,
				g.Key(), g.Sizing.Walltime, g.WalltimeNote, g.EstWait, g.CostSU, g.Scores,
				w.Key(), w.Sizing.Walltime, w.WalltimeNote, w.EstWait, w.CostSU, w.Scores)
		}
	}
}

// tagEstimator records the tags start estimates are asked with.
type tagEstimator struct{ tags []string }

func (e *tagEstimator) EstimateStart(_ context.Context, _ string, spec model.JobSpec) (time.Time, error) {
	e.tags = append(e.tags, spec.Tag)
	if err := spec.Validate(); err != nil {
		return time.Time{}, err
	}
	return fixedNow.Add(time.Hour), nil
}

// TestEstimateSpecsAreValid: every spec a start estimate is asked with (site estimates
// and walltime probes) passes JobSpec.Validate, which providers apply, under the task's
// attempt-0 tag (never submitted). Without a tag every simulated estimate failed.
func TestEstimateSpecsAreValid(t *testing.T) {
	est := &tagEstimator{}
	if _, err := newTestScheduler(Options{Estimator: est}).Place(context.Background(), a100Task(), sixMachines(), PlaceOptions{}); err != nil {
		t.Fatal(err)
	}
	if len(est.tags) < 2 {
		t.Fatalf("%d estimates asked", len(est.tags))
	}
	for _, tag := range est.tags {
		if tag != model.JobTag("t-a100", 0) {
			t.Fatalf("estimate tag %q, want %q", tag, model.JobTag("t-a100", 0))
		}
	}
}
