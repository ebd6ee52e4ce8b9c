package waits

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

func TestColdStartIsIdentity(t *testing.T) {
	l := New(Options{MinSamples: 10})
	for _, est := range []time.Duration{0, time.Second, 7 * time.Minute, 3 * time.Hour} {
		if got := l.Correct("a", "p", est); got != est {
			t.Errorf("no history: Correct(%s) = %s, want it unchanged", est, got)
		}
	}
	for i := range 9 { // one short of MinSamples
		l.Observe("a", "p", time.Hour, time.Duration(i+3)*time.Hour)
	}
	if got := l.Correct("a", "p", time.Hour); got != time.Hour {
		t.Errorf("9 of 10 samples: Correct = %s, want the prior (no correction)", got)
	}
	if f, ok := l.Factor("a", "p", time.Hour); ok || f != 1 {
		t.Errorf("Factor before MinSamples = %v %v, want 1 false", f, ok)
	}
	// Another class's history does not leak into "now".
	for range 20 {
		l.Observe("a", "q", time.Hour, 5*time.Hour)
	}
	if got := l.Correct("b", "r", 20*time.Second); got != 20*time.Second {
		t.Errorf("under a minute corrected by an hour's history: %s", got)
	}
}

// Two partitions that err alike (two identical clusters) get the same correction, the
// federation's, not two that differ by sampling noise; so their estimates keep the
// sites' order. A partition with no history starts from the federation's correction.
func TestAlikePartitionsShareTheFederationsCorrection(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	l := New(Options{})
	obs := func(sys string) { // 3x pessimistic, log-normal noise: both alike
		pred := time.Duration(60+rng.IntN(300)) * time.Second
		f := math.Exp(rng.NormFloat64()*0.5) / 3
		l.Observe(sys, "gpu", pred, time.Duration(float64(pred+time.Minute)*f)-time.Minute)
	}
	for range 15 {
		obs("alpha")
		obs("beta")
	}
	// With 15 draws each, the two partitions' own medians differ by noise...
	fa := math.Exp(quantile(l.parts[key{"alpha", "gpu"}].bins[1].sorted, 0.5))
	fb := math.Exp(quantile(l.parts[key{"beta", "gpu"}].bins[1].sorted, 0.5))
	if math.Abs(math.Log(fa/fb)) < 0.05 {
		t.Fatalf("own factors %.3f and %.3f: the seed should give noisy, different medians", fa, fb)
	}
	// ...but both use the federation's.
	ga, oka := l.Factor("alpha", "gpu", 2*time.Minute)
	gb, okb := l.Factor("beta", "gpu", 2*time.Minute)
	if !oka || !okb || ga != gb || math.Abs(math.Log(ga*3)) > 0.3 {
		t.Errorf("factors %.3f %v, %.3f %v: want one shared factor near 1/3 (own: %.3f, %.3f)", ga, oka, gb, okb, fa, fb)
	}
	// A later estimate on either stays the later corrected wait.
	if a, b := l.Correct("alpha", "gpu", 117*time.Second), l.Correct("beta", "gpu", 102*time.Second); a <= b {
		t.Errorf("alpha says 1m57s -> %s, beta says 1m42s -> %s: the order flipped", a, b)
	}
	if got, want := l.Correct("gamma", "gpu", 4*time.Minute), l.Correct("alpha", "gpu", 4*time.Minute); got != want || got >= 4*time.Minute {
		t.Errorf("a partition with no history: %s, want the federation's correction %s", got, want)
	}
	for _, st := range l.Stats() {
		if !st.Learned[1] || !st.Shared[1] {
			t.Errorf("%s/%s: learned %v shared %v, want a shared factor in [1m,10m)", st.System, st.Partition, st.Learned, st.Shared)
		}
	}
}

// A partition whose estimates err differently from the rest of the federation's keeps
// its own correction once its history shows it, and the others keep theirs.
func TestADifferentPartitionKeepsItsOwn(t *testing.T) {
	l := New(Options{})
	for i := range 60 {
		pred := time.Duration(2+i%5) * time.Hour
		for _, s := range []string{"a", "b", "c"} {
			l.Observe(s, "p", pred, (pred+time.Minute)/3-time.Minute) // 3x pessimistic
		}
		l.Observe("d", "p", pred, (pred+time.Minute)*2-time.Minute) // 2x optimistic
	}
	if f, _ := l.Factor("d", "p", 3*time.Hour); math.Abs(f-2) > 1e-9 {
		t.Errorf("the optimistic site's factor %.3f, want its own 2", f)
	}
	if f, _ := l.Factor("a", "p", 3*time.Hour); math.Abs(f-1.0/3) > 1e-9 {
		t.Errorf("a pessimistic site's factor %.3f, want its own 1/3", f)
	}
	for _, st := range l.Stats() {
		if st.System == "d" && st.Shared[3] {
			t.Errorf("%s: shared factor %.3f, want its own", st.System, st.Factors[3])
		}
	}
	// Ten observations, half like the federation's and half 4x later: not convincing
	// (2.5 below the federation's median where 5 ± 3.1 is expected), so the federation's
	// correction holds although the partition's own median is far from it.
	l = New(Options{})
	for range 30 {
		l.Observe("a", "p", 3*time.Hour, time.Hour)
	}
	for i := range 10 {
		l.Observe("d", "p", 3*time.Hour, time.Duration(1+3*(i%2))*time.Hour)
	}
	want := float64(61) / 181
	if f, _ := l.Factor("d", "p", 3*time.Hour); math.Abs(f-want) > 1e-9 {
		t.Errorf("a weak difference: factor %.3f, want the federation's %.3f", f, want)
	}
	// Ten all 4x later are convincing (0 below).
	for range 10 {
		l.Observe("d", "p", 3*time.Hour, 4*time.Hour)
	}
	if f, _ := l.Factor("d", "p", 3*time.Hour); math.Abs(f-float64(241)/181) > 1e-9 {
		t.Errorf("a strong difference: factor %.3f, want its own %.3f", f, float64(241)/181)
	}
}

// A synthetic site whose estimates are systematically 3× too optimistic (with
// log-normal noise): the learner converges on the bias and its corrected estimates
// have a far smaller error than the raw ones.
func TestConvergesOnBiasedEstimator(t *testing.T) {
	for _, tc := range []struct {
		name string
		bias float64
		at   time.Duration // a typical estimate
	}{{"optimistic 3x", 3, 40 * time.Minute}, {"pessimistic 4x", 0.25, 8 * time.Hour}, {"unbiased", 1, 2 * time.Hour}} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			l := New(Options{Slack: time.Minute})
			truth := func() (pred, obs time.Duration) {
				obs = time.Duration((10 + rng.Float64()*230) * float64(time.Minute))
				noise := math.Exp(rng.NormFloat64() * 0.2)
				return time.Duration(float64(obs+time.Minute)/tc.bias/noise) - time.Minute, obs
			}
			for range 500 {
				p, o := truth()
				l.Observe("s", "p", p, o)
			}
			f, ok := l.Factor("s", "p", tc.at)
			if !ok || math.Abs(math.Log(f/tc.bias)) > 0.1 {
				t.Fatalf("factor %.3f (ok %v), want about %.3f", f, ok, tc.bias)
			}
			var rawErr, corErr float64
			for range 500 {
				p, o := truth()
				rawErr += math.Abs(LogError(p, o, time.Minute))
				corErr += math.Abs(LogError(l.Correct("s", "p", p), o, time.Minute))
			}
			if tc.bias != 1 && corErr > rawErr/3 {
				t.Errorf("mean |log error| raw %.3f, corrected %.3f: the correction should remove most of it", rawErr/500, corErr/500)
			}
			if tc.bias == 1 && corErr > rawErr*1.1 {
				t.Errorf("unbiased site: corrected error %.3f > raw %.3f", corErr/500, rawErr/500)
			}
		})
	}
}

// The window forgets: after a site's behaviour changes, the old observations leave
// the ring and the factor follows the new bias.
func TestBoundedMemoryAndForgetting(t *testing.T) {
	l := New(Options{Window: 32, MinSamples: 8, Slack: time.Minute})
	for range 1000 {
		l.Observe("s", "p", 9*time.Minute, 59*time.Minute) // (59+1)/(9+1) = 6
	}
	st := l.Stats()
	p := l.parts[key{"s", "p"}]
	if len(st) != 1 || st[0].Kept != 32 || st[0].Total != 1000 || cap(p.bins[1].v) > 64 || cap(p.pooled.v) > 64 || cap(p.bins[1].sorted) > 64 {
		t.Fatalf("stats %+v, caps %d %d: want 32 kept of 1000", st, cap(p.bins[1].v), cap(p.pooled.v))
	}
	if f, _ := l.Factor("s", "p", 9*time.Minute); math.Abs(f-6) > 1e-9 {
		t.Fatalf("factor %v, want 6", f)
	}
	for range 32 {
		l.Observe("s", "p", 9*time.Minute, 9*time.Minute)
	}
	if f, _ := l.Factor("s", "p", 9*time.Minute); math.Abs(f-1) > 1e-9 {
		t.Errorf("after 32 exact estimates the factor is %v, want 1 (the old bias forgotten)", f)
	}
	// At most MaxPartitions partitions.
	l = New(Options{MaxPartitions: 3})
	for i := range 10 {
		kept := l.Observe("s", string(rune('a'+i)), time.Minute, time.Minute)
		if kept != (i < 3) {
			t.Errorf("partition %d: kept %v", i, kept)
		}
	}
	if len(l.Stats()) != 3 {
		t.Errorf("%d partitions remembered, want 3", len(l.Stats()))
	}
}

func TestMalformedInputs(t *testing.T) {
	for _, tc := range []struct {
		name           string
		sys, part      string
		pred, obs      time.Duration
		kept           bool
		wantFactorNear float64 // after 16 such observations
	}{
		{"empty system", "", "p", time.Minute, time.Minute, false, 1},
		{"empty partition", "s", "", time.Minute, time.Minute, false, 1},
		{"negative observed (clock skew) counts as 0", "s", "p", 55 * time.Minute, -time.Hour, true, 1.0 / 56},
		{"negative predicted counts as 0", "s", "p", -time.Hour, 55 * time.Minute, true, 56},
		{"huge observed is capped", "s", "p", 0, math.MaxInt64, true, float64(MaxWait+time.Minute) / float64(time.Minute)},
		{"min int64 both", "s", "p", math.MinInt64, math.MinInt64, true, 1},
		{"both huge", "s", "p", math.MaxInt64, math.MaxInt64, true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := New(Options{})
			for range DefaultMinSamples {
				if got := l.Observe(tc.sys, tc.part, tc.pred, tc.obs); got != tc.kept {
					t.Fatalf("Observe kept %v, want %v", got, tc.kept)
				}
			}
			f, _ := l.Factor(tc.sys, tc.part, tc.pred)
			if math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(math.Log(f/tc.wantFactorNear)) > 1e-9 {
				t.Errorf("factor %v, want %v", f, tc.wantFactorNear)
			}
			for _, est := range []time.Duration{math.MinInt64, -time.Second, 0, time.Hour, math.MaxInt64} {
				got := l.Correct(tc.sys, tc.part, est)
				if got < 0 || got > MaxWait {
					t.Errorf("Correct(%d) = %s outside [0, %s]", est, got, MaxWait)
				}
			}
		})
	}
}

// A site that is exact when it says "now" and 3× pessimistic when it says "hours":
// each class of estimate keeps its own correction.
func TestClassesOfEstimate(t *testing.T) {
	l := New(Options{})
	for i := range 40 {
		l.Observe("s", "p", 0, 0)
		pred := time.Duration(2+i%3) * time.Hour
		l.Observe("s", "p", pred, (pred+time.Minute)/3-time.Minute)
	}
	if got := l.Correct("s", "p", 0); got != 0 {
		t.Errorf("site says now: corrected to %s, want now", got)
	}
	if got := l.Correct("s", "p", 3*time.Hour); got < 59*time.Minute || got > 61*time.Minute {
		t.Errorf("site says 3h: corrected to %s, want about 1h", got)
	}
	// Classes with no history of their own borrow the pooled factor (≥ 1 min)...
	if got := l.Correct("s", "p", 30*time.Minute); got < 9*time.Minute || got > 11*time.Minute {
		t.Errorf("site says 30m (no history in that class): corrected to %s, want about 10m (pooled 1/3)", got)
	}
	// ...but "now" never does.
	l = New(Options{})
	for range 20 {
		l.Observe("s", "p", 3*time.Hour, time.Hour)
	}
	if got := l.Correct("s", "p", 20*time.Second); got != 20*time.Second {
		t.Errorf("under a minute with no history under a minute: corrected to %s", got)
	}
}

// Across a class edge the correction does not drop: a class below that corrects up
// bounds the class above from below.
func TestMonotoneAcrossClasses(t *testing.T) {
	l := New(Options{})
	for range 10 {
		l.Observe("s", "p", 5*time.Minute, 50*time.Minute) // [1m,10m): ×~8.5
		l.Observe("s", "p", 30*time.Minute, time.Minute)   // [10m,1h): ×~0.06
	}
	below, above := l.Correct("s", "p", 10*time.Minute-time.Second), l.Correct("s", "p", 10*time.Minute)
	if above < below {
		t.Errorf("Correct(9m59s) = %s > Correct(10m) = %s", below, above)
	}
	prev := time.Duration(0)
	for est := time.Duration(0); est < 8*time.Hour; est += 17 * time.Second {
		c := l.Correct("s", "p", est)
		if c < prev {
			t.Fatalf("Correct(%s) = %s < %s", est, c, prev)
		}
		prev = c
	}
}

// A class that corrects strongly down does not flatten its estimates onto the edge of
// the class below: a later site estimate stays a later corrected wait (before, every
// estimate from 1 to 6 minutes of a 3×-pessimistic class became the 1-minute edge, and
// candidates of different sites tied on it).
func TestCorrectionsKeepTheSitesOrder(t *testing.T) {
	l := New(Options{})
	for range 10 {
		l.Observe("s", "p", 10*time.Second, 12*time.Second) // under a minute: right
		l.Observe("s", "p", 4*time.Minute, 40*time.Second)  // [1m,10m): ×~0.34
	}
	prev := time.Duration(-1)
	for est := time.Minute; est < 10*time.Minute; est += 30 * time.Second {
		c := l.Correct("s", "p", est)
		if c <= prev {
			t.Fatalf("Correct(%s) = %s, not above Correct(%s) = %s", est, c, est-30*time.Second, prev)
		}
		prev = c
	}
	// Estimates 15 s apart (two clusters on the rig) stay seconds apart after a 3×
	// correction; at a tenth of the class's rate they were at most a second apart and
	// tied after rounding.
	if a, b := l.Correct("s", "p", 102*time.Second), l.Correct("s", "p", 117*time.Second); b-a < 2*time.Second {
		t.Errorf("Correct(1m42s) = %s, Correct(1m57s) = %s: want them at least 2s apart", a, b)
	}
	// Where the class's own correction is above the edge's, it is used as it is.
	if got, want := l.Correct("s", "p", 9*time.Minute), apply(9*time.Minute, math.Exp(math.Log(100.0/300)), time.Minute); got < want-time.Second {
		t.Errorf("Correct(9m) = %s, below the class's own correction %s", got, want)
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := New(Options{Quantile: math.NaN(), Window: -1, MinSamples: 1 << 20, Slack: -time.Second}).Options()
	if o.Quantile != DefaultQuantile || o.Window != DefaultWindow || o.MinSamples != DefaultWindow || o.Slack != DefaultSlack {
		t.Errorf("options %+v", o)
	}
	if o := New(Options{Quantile: 1}).Options(); o.Quantile != DefaultQuantile {
		t.Errorf("quantile 1 kept: %+v", o)
	}
}

func TestQuantileUpper(t *testing.T) {
	// A QBETS-style upper bound: with q = 0.9 the corrected estimate is exceeded by
	// about 10% of the observed waits.
	rng := rand.New(rand.NewPCG(3, 4))
	l := New(Options{Quantile: 0.9, Slack: time.Minute, Window: 1000})
	draw := func() (time.Duration, time.Duration) {
		obs := time.Duration(math.Exp(rng.NormFloat64()) * float64(time.Hour))
		return time.Hour, obs
	}
	for range 1000 {
		p, o := draw()
		l.Observe("s", "p", p, o)
	}
	over := 0
	for range 2000 {
		p, o := draw()
		if o > l.Correct("s", "p", p) {
			over++
		}
	}
	if share := float64(over) / 2000; share < 0.06 || share > 0.14 {
		t.Errorf("%.3f of waits exceed the 0.9-quantile correction, want about 0.1", share)
	}
}

func TestCalibrationRows(t *testing.T) {
	c := NewCalibration(time.Minute)
	for i := range 10 {
		w := time.Duration(i+1) * 10 * time.Minute
		c.Add("s", "p", (w+time.Minute)/3-time.Minute, w, w) // site 3× optimistic, corrected exact
	}
	c.Add("", "p", 0, 0, 0)
	c.Add("s", "p", 0, 0, 0)
	c.Add("s", "p", 30*time.Second, 0, 2*time.Minute)
	rows := c.Rows()
	if len(rows) != 2 || rows[0].Jobs != 12 || rows[0].Now != 2 || rows[0].NowLate != 1 || rows[0].Waiting != 10 ||
		rows[1].System != "*" || rows[1].Jobs != 12 || rows[1].Waiting != 10 {
		t.Fatalf("rows %+v", rows)
	}
	if r := rows[0]; math.Abs(r.Raw.P50-3) > 0.01 || r.Corrected.P50 != 1 || r.Corrected.MAE != 0 || r.Corrected.Within2x != 1 || r.Raw.Within2x != 0 {
		t.Errorf("row %+v", r)
	}
	var nilC *Calibration
	nilC.Add("s", "p", 0, 0, 0)
	if nilC.Rows() != nil {
		t.Error("nil calibration has rows")
	}
}

// FuzzObserve feeds arbitrary observations: the learner never panics, keeps at most
// Window observations per partition, and its corrections stay in [0, MaxWait] and
// never decrease as the estimate grows.
func FuzzObserve(f *testing.F) {
	f.Add("s", "p", int64(time.Minute), int64(time.Hour), int64(time.Minute), int64(time.Hour))
	f.Add("", "p", int64(-1), int64(math.MaxInt64), int64(0), int64(math.MinInt64))
	f.Add("s", "p\x00", int64(math.MinInt64), int64(-1), int64(math.MaxInt64), int64(1))
	f.Fuzz(func(t *testing.T, sys, part string, pred, obs, e1, e2 int64) {
		l := New(Options{Window: 8, MinSamples: 2})
		for i := range 20 {
			l.Observe(sys, part, time.Duration(pred)+time.Duration(i), time.Duration(obs))
		}
		for _, s := range l.Stats() {
			for _, f := range s.Factors {
				if s.Kept > 8*nBins || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
					t.Fatalf("stat %+v", s)
				}
			}
		}
		for _, p := range l.parts {
			for _, r := range append(p.bins[:], p.pooled) {
				if len(r.sorted) != len(r.v) || !slices.IsSorted(r.sorted) {
					t.Fatalf("ring %+v: sorted copy out of step", r)
				}
				want := slices.Sorted(slices.Values(r.v))
				if !slices.Equal(want, r.sorted) {
					t.Fatalf("sorted %v, want %v", r.sorted, want)
				}
			}
		}
		a, b := time.Duration(min(e1, e2)), time.Duration(max(e1, e2))
		ca, cb := l.Correct(sys, part, a), l.Correct(sys, part, b)
		if ca < 0 || cb > MaxWait || ca > cb {
			t.Fatalf("Correct(%d) = %d, Correct(%d) = %d", a, ca, b, cb)
		}
	})
}
