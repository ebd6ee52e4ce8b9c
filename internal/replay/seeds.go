package replay

import (
	"context"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// MaxSeeds bounds a multi-seed comparison (each seed is a whole comparison).
const MaxSeeds = 1000

// ParseSeeds parses a seed list: "1..5" (inclusive range), "1,3,5", or a mix
// ("1..3,7"). Seeds are positive (0 means "the federation's seed" elsewhere);
// duplicates are dropped, order is kept; at most MaxSeeds.
func ParseSeeds(s string) ([]int64, error) {
	var out []int64
	seen := map[int64]bool{}
	add := func(v int64) error {
		if !seen[v] {
			if len(out) >= MaxSeeds {
				return fmt.Errorf("seeds %q: more than %d seeds", s, MaxSeeds)
			}
			seen[v] = true
			out = append(out, v)
		}
		return nil
	}
	num := func(f string) (int64, error) {
		v, err := strconv.ParseInt(strings.TrimSpace(f), 10, 64)
		if err != nil || v < 1 {
			return 0, fmt.Errorf("seeds %q: %q is not a positive whole number; write 1..5 or 1,3,5", s, strings.TrimSpace(f))
		}
		return v, nil
	}
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(f, "..")
		if !isRange {
			v, err := num(f)
			if err != nil {
				return nil, err
			}
			if err := add(v); err != nil {
				return nil, err
			}
			continue
		}
		a, err := num(lo)
		if err != nil {
			return nil, err
		}
		b, err := num(hi)
		if err != nil {
			return nil, err
		}
		if b < a {
			return nil, fmt.Errorf("seeds %q: range %s runs backwards; write %d..%d", s, f, b, a)
		}
		if b-a >= MaxSeeds {
			return nil, fmt.Errorf("seeds %q: range %s has more than %d seeds", s, f, MaxSeeds)
		}
		for v := a; v <= b; v++ {
			if err := add(v); err != nil {
				return nil, err
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no seeds in %q; write 1..5 or 1,3,5", s)
	}
	return out, nil
}

// Interval is a mean over seeds with its two-sided 95% confidence interval from
// Student's t distribution with N−1 degrees of freedom (seeds are few, so the normal
// 1.96 would be too narrow). With one seed there is no interval (HalfWidth 0, Low =
// High = Mean).
type Interval struct {
	Mean      float64 `json:"mean"`
	HalfWidth float64 `json:"half_width"`
	Low       float64 `json:"low"`
	High      float64 `json:"high"`
	StdDev    float64 `json:"stddev"`
	N         int     `json:"n"`
}

// tCrit975 is the 0.975 quantile of Student's t for 1..30 degrees of freedom.
var tCrit975 = [...]float64{12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
	2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
	2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042}

// tQuantile975 is Student's t 0.975 quantile for df degrees of freedom (table to 30,
// then the usual table points 40, 60, 120 and the normal limit, taking the next lower
// tabulated df, which is conservative).
func tQuantile975(df int) float64 {
	switch {
	case df < 1:
		return math.NaN()
	case df <= 30:
		return tCrit975[df-1]
	case df < 40:
		return 2.042
	case df < 60:
		return 2.021
	case df < 120:
		return 2.000
	case df < 1000:
		return 1.980
	}
	return 1.960
}

// MeanCI is the mean of xs with its 95% t interval.
func MeanCI(xs []float64) Interval {
	n := len(xs)
	iv := Interval{N: n}
	if n == 0 {
		return iv
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	iv.Mean = sum / float64(n)
	iv.Low, iv.High = iv.Mean, iv.Mean
	if n < 2 {
		return iv
	}
	var ss float64
	for _, x := range xs {
		ss += (x - iv.Mean) * (x - iv.Mean)
	}
	iv.StdDev = math.Sqrt(ss / float64(n-1))
	iv.HalfWidth = tQuantile975(n-1) * iv.StdDev / math.Sqrt(float64(n))
	iv.Low, iv.High = iv.Mean-iv.HalfWidth, iv.Mean+iv.HalfWidth
	return iv
}

// PolicyStats is one policy's (or the bound's) numbers over the seeds.
type PolicyStats struct {
	Policy string `json:"policy"`
	// MeanWait and P95Wait: the mean over seeds of each seed's mean and p95 wait (s).
	MeanWait Interval `json:"mean_wait_s"`
	P95Wait  Interval `json:"p95_wait_s"`
	// PerSeed* are each seed's values, in seed order.
	PerSeedMean []float64 `json:"per_seed_mean_wait_s"`
	PerSeedP95  []float64 `json:"per_seed_p95_wait_s"`
	// Unfinished jobs summed over the seeds (their waits are not in the means).
	Unfinished int `json:"unfinished"`
}

// SeedRatio is mosaic against earliest-start on one seed.
type SeedRatio struct {
	Seed      int64   `json:"seed"`
	MeanRatio float64 `json:"mosaic_over_earliest_start_mean"`
	P95Ratio  float64 `json:"mosaic_over_earliest_start_p95"`
}

// SeedGoal is issue 19's target over seeds: mosaic's seed-averaged mean wait ≤ 0.85 ×
// earliest-start's, its seed-averaged p95 ≤ earliest-start's, on no seed a mean above
// 1.05 × earliest-start's, and no policy below the bound on any seed.
type SeedGoal struct {
	MeanRatio float64 `json:"mosaic_over_earliest_start_mean"`
	P95Ratio  float64 `json:"mosaic_over_earliest_start_p95"`
	// MeanOfRatios is the mean of the per-seed mean ratios (reported, not the goal).
	MeanOfRatios float64 `json:"mean_of_seed_ratios"`
	MeanMet      *bool   `json:"mean_target_met,omitempty"`
	P95Met       *bool   `json:"p95_target_met,omitempty"`
	WorstSeed    int64   `json:"worst_seed,omitempty"`
	WorstRatio   float64 `json:"worst_seed_ratio,omitempty"`
	WorstMet     *bool   `json:"worst_seed_target_met,omitempty"`
	BoundHeld    *bool   `json:"bound_held,omitempty"`
}

// SeedReport is a comparison repeated over seeds (each seed draws its own background
// load, job slice and random choices).
type SeedReport struct {
	Federation string         `json:"federation"`
	Trace      string         `json:"trace"`
	Home       string         `json:"home"`
	Jobs       int            `json:"jobs"`
	TickS      float64        `json:"tick_s"`
	Seeds      []int64        `json:"seeds"`
	Policies   []*PolicyStats `json:"policies"`
	Bound      *PolicyStats   `json:"bound,omitempty"`
	Ratios     []SeedRatio    `json:"ratios,omitempty"`
	Goal       *SeedGoal      `json:"goal,omitempty"`
	// Reports are the per-seed comparisons, every number of each.
	Reports []*Report `json:"reports"`
}

// CompareSeeds runs Compare once per seed (o.Seed is ignored) and summarises.
func CompareSeeds(ctx context.Context, o Options, seeds []int64) (*SeedReport, error) {
	if len(seeds) == 0 {
		return nil, fmt.Errorf("replay: no seeds given")
	}
	sr := &SeedReport{Seeds: seeds}
	for _, s := range seeds {
		o.Seed = s
		rep, err := Compare(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", s, err)
		}
		sr.Reports = append(sr.Reports, rep)
	}
	sr.summarise()
	return sr, nil
}

func (sr *SeedReport) summarise() {
	first := sr.Reports[0]
	sr.Federation, sr.Trace, sr.Home, sr.Jobs, sr.TickS = first.Federation, first.Trace, first.Home, first.Jobs, first.TickS
	stats := func(name string, pick func(*Report) *Result) *PolicyStats {
		ps := &PolicyStats{Policy: name}
		for _, rep := range sr.Reports {
			res := pick(rep)
			if res == nil {
				return nil
			}
			ps.PerSeedMean = append(ps.PerSeedMean, res.MeanWait)
			ps.PerSeedP95 = append(ps.PerSeedP95, res.P95Wait)
			ps.Unfinished += res.Unfinished
		}
		ps.MeanWait, ps.P95Wait = MeanCI(ps.PerSeedMean), MeanCI(ps.PerSeedP95)
		return ps
	}
	for _, res := range first.Results {
		name := res.Policy
		if ps := stats(name, func(r *Report) *Result { return r.Result(name) }); ps != nil {
			sr.Policies = append(sr.Policies, ps)
		}
	}
	sr.Bound = stats(PolicyBound, func(r *Report) *Result { return r.Bound })
	var m, e *PolicyStats
	for _, ps := range sr.Policies {
		switch ps.Policy {
		case PolicyMosaic:
			m = ps
		case PolicyEarliestStart:
			e = ps
		}
	}
	g := &SeedGoal{}
	if m != nil && e != nil {
		var sum float64
		worst := -1.0
		for i, s := range sr.Seeds {
			r := SeedRatio{Seed: s, MeanRatio: ratio(m.PerSeedMean[i], e.PerSeedMean[i]), P95Ratio: ratio(m.PerSeedP95[i], e.PerSeedP95[i])}
			sr.Ratios = append(sr.Ratios, r)
			sum += r.MeanRatio
			if r.MeanRatio > worst {
				worst, g.WorstSeed = r.MeanRatio, s
			}
		}
		g.MeanOfRatios = round3(sum / float64(len(sr.Seeds)))
		g.WorstRatio = worst
		g.MeanRatio, g.P95Ratio = ratio(m.MeanWait.Mean, e.MeanWait.Mean), ratio(m.P95Wait.Mean, e.P95Wait.Mean)
		ok := m.MeanWait.Mean <= TargetMeanOverEarliest*e.MeanWait.Mean
		ok95 := m.P95Wait.Mean <= e.P95Wait.Mean
		okW := true
		for i := range sr.Seeds {
			okW = okW && m.PerSeedMean[i] <= TargetWorstSeed*e.PerSeedMean[i]
		}
		g.MeanMet, g.P95Met, g.WorstMet = &ok, &ok95, &okW
	}
	if sr.Bound != nil {
		held := true
		for _, rep := range sr.Reports {
			if rep.Goal != nil && rep.Goal.BoundHeld != nil {
				held = held && *rep.Goal.BoundHeld
			}
		}
		g.BoundHeld = &held
	}
	if g.MeanMet != nil || g.BoundHeld != nil {
		sr.Goal = g
	}
}

// SeedList prints seeds compactly: "1..5", "1,3,5", "1..3,7".
func SeedList(seeds []int64) string {
	var parts []string
	for i := 0; i < len(seeds); {
		j := i
		for j+1 < len(seeds) && seeds[j+1] == seeds[j]+1 {
			j++
		}
		if j-i >= 2 {
			parts = append(parts, fmt.Sprintf("%d..%d", seeds[i], seeds[j]))
		} else {
			for k := i; k <= j; k++ {
				parts = append(parts, strconv.FormatInt(seeds[k], 10))
			}
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

func fmtInterval(iv Interval) string {
	if iv.N < 2 {
		return FormatDuration(iv.Mean)
	}
	return fmt.Sprintf("%s ± %s", FormatDuration(iv.Mean), FormatDuration(iv.HalfWidth))
}

// WriteTable prints the per-policy statistics, the per-seed ratios and the goals.
func (sr *SeedReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "federation %s (home %s), trace %s: %d jobs, seeds %s (%d), tick %s\n\n",
		sr.Federation, sr.Home, sr.Trace, sr.Jobs, SeedList(sr.Seeds), len(sr.Seeds), time.Duration(sr.TickS*float64(time.Second)))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tMEAN WAIT ± 95%\tP95 WAIT ± 95%\tMEAN WAIT RANGE\tUNFINISHED")
	row := func(name string, ps *PolicyStats) {
		lo, hi := ps.PerSeedMean[0], ps.PerSeedMean[0]
		for _, x := range ps.PerSeedMean {
			lo, hi = min(lo, x), max(hi, x)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s–%s\t%d\n", name, fmtInterval(ps.MeanWait), fmtInterval(ps.P95Wait), FormatDuration(lo), FormatDuration(hi), ps.Unfinished)
	}
	for _, ps := range sr.Policies {
		row(ps.Policy, ps)
	}
	if sr.Bound != nil {
		row("("+PolicyBound+")", sr.Bound)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "(mean over %d seeds of each seed's mean and p95 wait; ± is the 95%% interval from Student's t with %d degrees of freedom;\n range: the lowest and highest seed's mean wait)\n",
		len(sr.Seeds), len(sr.Seeds)-1)
	if len(sr.Ratios) > 0 {
		fmt.Fprintln(w)
		fmt.Fprintln(tw, "SEED\tMOSAIC/EARLIEST-START MEAN\tP95")
		for _, r := range sr.Ratios {
			fmt.Fprintf(tw, "%d\t%.2f×\t%.2f×\n", r.Seed, r.MeanRatio, r.P95Ratio)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if g := sr.Goal; g != nil {
		fmt.Fprintln(w)
		if g.MeanMet != nil {
			fmt.Fprintf(w, "goal: mosaic mean wait ≤ %.2f× earliest-start's, averaged over seeds: %.2f× (mean of the seeds' ratios %.2f×) — %s\n",
				TargetMeanOverEarliest, g.MeanRatio, g.MeanOfRatios, met(*g.MeanMet))
			fmt.Fprintf(w, "goal: mosaic p95 wait ≤ earliest-start's, averaged over seeds: %.2f× — %s\n", g.P95Ratio, met(*g.P95Met))
			fmt.Fprintf(w, "goal: on no seed a mean wait above %.2f× earliest-start's: worst seed %d at %.2f× — %s\n",
				TargetWorstSeed, g.WorstSeed, g.WorstRatio, met(*g.WorstMet))
		}
		if g.BoundHeld != nil {
			fmt.Fprintf(w, "goal: no policy below the bound, on any seed: %s\n", met(*g.BoundHeld))
		}
	}
	return nil
}
