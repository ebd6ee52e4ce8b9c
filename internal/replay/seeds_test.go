package replay

import (
	"bytes"
	"context"
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParseSeeds(t *testing.T) {
	cases := []struct {
		in   string
		want []int64
		err  string
	}{
		{"1..5", []int64{1, 2, 3, 4, 5}, ""},
		{"1,3,5", []int64{1, 3, 5}, ""},
		{" 1..3 , 7,2", []int64{1, 2, 3, 7}, ""},
		{"4", []int64{4}, ""},
		{"3..3", []int64{3}, ""},
		{"", nil, "no seeds"},
		{" , ,", nil, "no seeds"},
		{"5..1", nil, "runs backwards"},
		{"1..", nil, "not a positive whole number"},
		{"..4", nil, "not a positive whole number"},
		{"0..3", nil, "not a positive whole number"},
		{"-2", nil, "not a positive whole number"},
		{"a,b", nil, `"a" is not`},
		{"1...3", nil, "not a positive"},
		{"1..2000", nil, "more than 1000"},
		{"1..9223372036854775807", nil, "more than 1000"},
		{"99999999999999999999", nil, "not a positive"},
	}
	for _, c := range cases {
		got, err := ParseSeeds(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v %v, want %v", c.in, got, err, c.want)
		}
		if back, err := ParseSeeds(SeedList(got)); err != nil || !reflect.DeepEqual(back, got) {
			t.Errorf("%q: SeedList %q parses back to %v %v", c.in, SeedList(got), back, err)
		}
	}
	if s := SeedList([]int64{1, 2, 3, 4, 5}); s != "1..5" {
		t.Errorf("SeedList 1..5 = %q", s)
	}
	if s := SeedList([]int64{1, 2, 4, 7, 8, 9}); s != "1,2,4,7..9" {
		t.Errorf("SeedList = %q", s)
	}
}

func FuzzParseSeeds(f *testing.F) {
	for _, s := range []string{"1..5", "1,3,5", "1..3,7", "", "5..1", "1..", "0", "1..1000000"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		seeds, err := ParseSeeds(s)
		if err != nil {
			if seeds != nil {
				t.Fatal("seeds returned with an error")
			}
			return
		}
		if len(seeds) == 0 || len(seeds) > MaxSeeds {
			t.Fatalf("%q: %d seeds", s, len(seeds))
		}
		seen := map[int64]bool{}
		for _, v := range seeds {
			if v < 1 || seen[v] {
				t.Fatalf("%q: seed %d (duplicate or not positive)", s, v)
			}
			seen[v] = true
		}
	})
}

// TestMeanCI checks the t interval against hand-computed values.
func TestMeanCI(t *testing.T) {
	iv := MeanCI([]float64{1, 2, 3, 4, 5})
	// sd = sqrt(2.5); t(0.975, 4) = 2.776; half = 2.776 × sqrt(2.5) / sqrt(5).
	if iv.N != 5 || iv.Mean != 3 || math.Abs(iv.StdDev-math.Sqrt(2.5)) > 1e-12 ||
		math.Abs(iv.HalfWidth-2.776*math.Sqrt(2.5)/math.Sqrt(5)) > 1e-12 || iv.Low != iv.Mean-iv.HalfWidth {
		t.Errorf("MeanCI(1..5) = %+v", iv)
	}
	if iv := MeanCI([]float64{7}); iv.Mean != 7 || iv.HalfWidth != 0 || iv.Low != 7 || iv.High != 7 {
		t.Errorf("one seed: %+v", iv)
	}
	if iv := MeanCI(nil); iv.N != 0 || iv.Mean != 0 {
		t.Errorf("no seeds: %+v", iv)
	}
	if q := tQuantile975(1); q != 12.706 {
		t.Errorf("t(1) = %v", q)
	}
	if q := tQuantile975(5000); q != 1.96 {
		t.Errorf("t(5000) = %v", q)
	}
	if !math.IsNaN(tQuantile975(0)) {
		t.Error("t(0) is a number")
	}
}

// TestCompareSeeds: each seed's numbers are that seed's Compare exactly; the
// summary, ratios and goals follow from them; the table prints every part.
func TestCompareSeeds(t *testing.T) {
	pols, _ := ParsePolicies("earliest-start,mosaic")
	o := Options{Federation: loadedFederation(), Trace: smallTrace(t), Policies: pols, Jobs: 40, Home: "Alpha"}
	seeds := []int64{2, 3, 5}
	sr, err := CompareSeeds(context.Background(), o, seeds)
	if err != nil {
		t.Fatal(err)
	}
	if len(sr.Reports) != 3 || len(sr.Policies) != 2 || sr.Bound == nil || len(sr.Ratios) != 3 || sr.Goal == nil {
		t.Fatalf("summary %+v", sr)
	}
	var means []float64
	for i, s := range seeds {
		o.Seed = s
		one, err := Compare(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		m, e := one.Result(PolicyMosaic), one.Result(PolicyEarliestStart)
		if sr.Policies[1].PerSeedMean[i] != m.MeanWait || sr.Policies[0].PerSeedP95[i] != e.P95Wait {
			t.Errorf("seed %d: summary %v/%v, Compare %v/%v", s, sr.Policies[1].PerSeedMean[i], sr.Policies[0].PerSeedP95[i], m.MeanWait, e.P95Wait)
		}
		if sr.Ratios[i].Seed != s || sr.Ratios[i].MeanRatio != ratio(m.MeanWait, e.MeanWait) {
			t.Errorf("seed %d ratio %+v", s, sr.Ratios[i])
		}
		if sr.Bound.PerSeedMean[i] != one.Bound.MeanWait {
			t.Errorf("seed %d bound %v, Compare %v", s, sr.Bound.PerSeedMean[i], one.Bound.MeanWait)
		}
		means = append(means, m.MeanWait)
	}
	if want := MeanCI(means); sr.Policies[1].MeanWait != want {
		t.Errorf("mosaic mean wait %+v, want %+v", sr.Policies[1].MeanWait, want)
	}
	g := sr.Goal
	wantMet := sr.Policies[1].MeanWait.Mean <= TargetMeanOverEarliest*sr.Policies[0].MeanWait.Mean
	if g.MeanMet == nil || *g.MeanMet != wantMet || g.WorstMet == nil || g.BoundHeld == nil || !*g.BoundHeld {
		t.Errorf("goal %+v", g)
	}
	worst := 0.0
	for _, r := range sr.Ratios {
		worst = max(worst, r.MeanRatio)
	}
	if g.WorstRatio != worst || *g.WorstMet != (worst <= TargetWorstSeed) {
		t.Errorf("worst seed %d at %v, want %v", g.WorstSeed, g.WorstRatio, worst)
	}
	var b bytes.Buffer
	if err := sr.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"seeds 2,3,5 (3)", "MEAN WAIT ± 95%", "earliest-start", "(bound)", "Student's t with 2 degrees",
		"SEED  MOSAIC/EARLIEST-START MEAN", "goal: mosaic mean wait ≤ 0.85× earliest-start's, averaged over seeds",
		"goal: on no seed a mean wait above 1.05×", "goal: no policy below the bound, on any seed: met"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if _, err := CompareSeeds(context.Background(), o, nil); err == nil {
		t.Error("no seeds accepted")
	}
}
