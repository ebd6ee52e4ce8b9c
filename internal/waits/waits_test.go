package waits

import (
	"math"
	"math/rand/v2"
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
	if f, ok := l.Factor("a", "p"); ok || f != 1 {
		t.Errorf("Factor before MinSamples = %v %v, want 1 false", f, ok)
	}
	// Another partition's history does not leak.
	for range 20 {
		l.Observe("a", "q", time.Hour, 5*time.Hour)
	}
	if got := l.Correct("a", "p", time.Hour); got != time.Hour {
		t.Errorf("partition p corrected by q's history: %s", got)
	}
	if got := l.Correct("b", "q", time.Hour); got != time.Hour {
		t.Errorf("system b corrected by a's history: %s", got)
	}
}

// A synthetic site whose estimates are systematically 3× too optimistic (with
// log-normal noise): the learner converges on the bias and its corrected estimates
// have a far smaller error than the raw ones.
func TestConvergesOnBiasedEstimator(t *testing.T) {
	for _, tc := range []struct {
		name string
		bias float64
	}{{"optimistic 3x", 3}, {"pessimistic 4x", 0.25}, {"unbiased", 1}} {
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
			f, ok := l.Factor("s", "p")
			if !ok || math.Abs(math.Log(f/tc.bias)) > 0.05 {
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
	if len(st) != 1 || st[0].Kept != 32 || st[0].Total != 1000 || cap(l.parts[key{"s", "p"}].v) > 64 {
		t.Fatalf("stats %+v, cap %d: want 32 kept of 1000", st, cap(l.parts[key{"s", "p"}].v))
	}
	if f, _ := l.Factor("s", "p"); math.Abs(f-6) > 1e-9 {
		t.Fatalf("factor %v, want 6", f)
	}
	for range 32 {
		l.Observe("s", "p", 9*time.Minute, 9*time.Minute)
	}
	if f, _ := l.Factor("s", "p"); math.Abs(f-1) > 1e-9 {
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
		{"negative observed (clock skew) counts as 0", "s", "p", 55 * time.Minute, -time.Hour, true, 5.0 / 60},
		{"negative predicted counts as 0", "s", "p", -time.Hour, 55 * time.Minute, true, 12},
		{"huge observed is capped", "s", "p", 0, math.MaxInt64, true, float64(MaxWait+5*time.Minute) / float64(5*time.Minute)},
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
			f, _ := l.Factor(tc.sys, tc.part)
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
	rows := c.Rows()
	if len(rows) != 2 || rows[0].Jobs != 10 || rows[1].System != "*" || rows[1].Jobs != 10 {
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
			if s.Kept > 8 || math.IsNaN(s.Factor) || math.IsInf(s.Factor, 0) || s.Factor <= 0 {
				t.Fatalf("stat %+v", s)
			}
		}
		a, b := time.Duration(min(e1, e2)), time.Duration(max(e1, e2))
		ca, cb := l.Correct(sys, part, a), l.Correct(sys, part, b)
		if ca < 0 || cb > MaxWait || ca > cb {
			t.Fatalf("Correct(%d) = %d, Correct(%d) = %d", a, ca, b, cb)
		}
	})
}
