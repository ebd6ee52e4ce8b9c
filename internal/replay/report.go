package replay

import (
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is a whole comparison: the setup, one Result per policy and the lower bound.
type Report struct {
	Federation string    `json:"federation"`
	Trace      string    `json:"trace"`
	Home       string    `json:"home"`
	Seed       int64     `json:"seed"`
	Jobs       int       `json:"jobs"`
	Moldable   int       `json:"moldable_jobs"`
	TickS      float64   `json:"tick_s"`
	Systems    []string  `json:"systems"`
	Results    []*Result `json:"results"`
	// Bound is the lower bound's row (see Bound): not a policy; every policy's waits
	// are at least its per-job bounds.
	Bound *Result `json:"bound,omitempty"`
	// BoundViolations counts, per policy, jobs that started sooner than their bound
	// (always 0 unless the bound or the replay is wrong).
	BoundViolations map[string]int `json:"bound_violations,omitempty"`
	Goal            *Goal          `json:"goal,omitempty"`
}

// Goal is issue 19's target on one seed: Mosaic's mean wait at most
// TargetMeanOverEarliest × earliest-start's (each site's own backfill estimate, what
// sbatch -M does), its p95 no higher than earliest-start's, and no policy below the
// bound. Over several seeds see SeedGoal.
type Goal struct {
	MosaicOverEarliest    float64 `json:"mosaic_over_earliest_start,omitempty"`
	MosaicP95OverEarliest float64 `json:"mosaic_p95_over_earliest_start,omitempty"`
	MeanMet               *bool   `json:"mean_target_met,omitempty"`
	P95Met                *bool   `json:"p95_target_met,omitempty"`
	// BoundHeld: no policy started any job sooner than its bound.
	BoundHeld *bool `json:"bound_held,omitempty"`
}

// Goal targets (issue 19).
const (
	// TargetMeanOverEarliest: Mosaic's mean wait ≤ 0.85 × earliest-start's.
	TargetMeanOverEarliest = 0.85
	// TargetWorstSeed: on no seed is Mosaic's mean wait above 1.05 × earliest-start's.
	TargetWorstSeed = 1.05
)

// Result returns the named policy's result.
func (r *Report) Result(policy string) *Result {
	for _, x := range r.Results {
		if x.Policy == policy {
			return x
		}
	}
	return nil
}

// ComputeGoal fills Goal from the mosaic and earliest-start results and the bound
// present.
func (r *Report) ComputeGoal() {
	g := &Goal{}
	m, e := r.Result(PolicyMosaic), r.Result(PolicyEarliestStart)
	if m != nil && e != nil {
		g.MosaicOverEarliest, g.MosaicP95OverEarliest = ratio(m.MeanWait, e.MeanWait), ratio(m.P95Wait, e.P95Wait)
		ok := m.MeanWait <= TargetMeanOverEarliest*e.MeanWait
		g.MeanMet = &ok
		ok95 := m.P95Wait <= e.P95Wait
		g.P95Met = &ok95
	}
	if r.Bound != nil {
		held := true
		for _, v := range r.BoundViolations {
			held = held && v == 0
		}
		g.BoundHeld = &held
	}
	if g.MeanMet == nil && g.BoundHeld == nil {
		return
	}
	r.Goal = g
}

// ratio is a/b rounded to 3 places, 0 when b is 0 (JSON has no infinity; the met
// flags say whether the target holds).
func ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return round3(a / b)
}

// FormatDuration prints seconds compactly: 42s, 7m05s, 3h12m, 2.4d.
func FormatDuration(s float64) string {
	d := time.Duration(s * float64(time.Second)).Round(time.Second)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%.1fd", d.Hours()/24)
}

// WriteTable prints the metrics table, the utilisation table and the goal lines.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tMEAN WAIT\tP95 WAIT\tMEAN BSLD\tMAKESPAN\tMIGRATIONS\tSHRUNK\tFINISHED\tFAILED\tREJECTED")
	for _, x := range r.Results {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t%s\t%d\t%d\t%d/%d\t%d\t%d\n", x.Policy, FormatDuration(x.MeanWait), FormatDuration(x.P95Wait),
			x.MeanBSLD, FormatDuration(x.Makespan), x.Migrations, x.Shrunk, x.Finished, x.Jobs, x.Failed, x.Rejected)
	}
	if b := r.Bound; b != nil {
		fmt.Fprintf(tw, "(%s)\t%s\t%s\t-\t-\t-\t-\t-\t-\t%d\n", PolicyBound, FormatDuration(b.MeanWait), FormatDuration(b.P95Wait), b.Rejected)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	short := make([]string, len(r.Systems))
	for i, s := range r.Systems {
		short[i], _, _ = strings.Cut(s, "@")
	}
	fmt.Fprintf(tw, "UTILISATION\t%s\n", strings.Join(short, "\t"))
	for _, x := range r.Results {
		cells := make([]string, len(r.Systems))
		for i, s := range r.Systems {
			u, ok := x.Utilisation[s]
			if !ok {
				cells[i] = "-"
				continue
			}
			cells[i] = fmt.Sprintf("%.0f%% (%d)", 100*u, x.Placed[s])
		}
		fmt.Fprintf(tw, "%s\t%s\n", x.Policy, strings.Join(cells, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "(busy share of each system's modelled cores; in brackets the federated jobs it ran)")
	if r.Bound != nil {
		fmt.Fprintln(w, "(bound: a lower bound on every job's wait that no policy can beat; not a policy, see docs/PLACEMENT.md)")
	}
	if g := r.Goal; g != nil {
		fmt.Fprintln(w)
		if g.MeanMet != nil {
			fmt.Fprintf(w, "goal: mosaic mean wait ≤ %.2f× earliest-start's: %.2f× — %s\n", TargetMeanOverEarliest, g.MosaicOverEarliest, met(*g.MeanMet))
			fmt.Fprintf(w, "goal: mosaic p95 wait ≤ earliest-start's: %.2f× — %s\n", g.MosaicP95OverEarliest, met(*g.P95Met))
		}
		if g.BoundHeld != nil {
			fmt.Fprintf(w, "goal: no policy below the bound: %s%s\n", met(*g.BoundHeld), violations(r.BoundViolations))
		}
	}
	return nil
}

// violations lists the policies with jobs that beat their bound (", a: 3 jobs").
func violations(v map[string]int) string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(v)) {
		if v[p] > 0 {
			parts = append(parts, fmt.Sprintf("%s: %d jobs", p, v[p]))
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + " started sooner than their bound)"
}

func met(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

// palette is one colour per policy (colour-blind-safe Okabe-Ito, then greys).
var palette = []string{"#E69F00", "#56B4E9", "#009E73", "#F0E442", "#0072B2", "#D55E00", "#CC79A7", "#000000", "#999999"}

// WriteSVG draws the wait-time CDF of every policy: x is the wait on a log scale
// (waits under 1 s drawn at 1 s), y the share of jobs that waited at most that long.
func (r *Report) WriteSVG(w io.Writer) error {
	const (
		width, height = 790.0, 440.0
		left, right   = 70.0, 240.0 // the legend: "clairvoyant-greedy (17m23s)" fits
		top, bottom   = 40.0, 60.0
	)
	pw, ph := width-left-right, height-top-bottom
	maxW := 60.0
	for _, x := range r.Results {
		if n := len(x.Waits); n > 0 {
			maxW = max(maxW, x.Waits[n-1])
		}
	}
	lo, hi := 0.0, math.Ceil(math.Log10(maxW))
	xpos := func(s float64) float64 { return left + (math.Log10(max(s, 1))-lo)/(hi-lo)*pw }
	ypos := func(f float64) float64 { return top + (1-f)*ph }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="12">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", left, esc(fmt.Sprintf("Wait-time CDF: %d jobs, %s", r.Jobs, baseName(r.Federation))))
	// Grid and axes.
	for f := 0.0; f <= 1.0001; f += 0.25 {
		y := ypos(f)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, left+pw, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%.0f%%</text>`+"\n", left-6, y+4, f*100)
	}
	labels := map[int]string{0: "1s", 1: "10s", 2: "100s", 3: "17m", 4: "2.8h", 5: "28h", 6: "12d", 7: "116d"}
	for e := int(lo); e <= int(hi); e++ {
		x := left + (float64(e)-lo)/(hi-lo)*pw
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", x, top, x, top+ph)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, top+ph+18, labels[e])
	}
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#333"/>`+"\n", left, top, pw, ph)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">wait (log scale)</text>`+"\n", left+pw/2, height-18)
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">jobs that waited at most x</text>`+"\n", top+ph/2)
	series := slices.Clone(r.Results)
	if r.Bound != nil {
		series = append(series, r.Bound)
	}
	for i, x := range series {
		col, dash, name := palette[i%len(palette)], "", x.Policy
		if x == r.Bound {
			// The bound is drawn dashed in grey: a floor, not a policy.
			col, dash, name = "#777777", ` stroke-dasharray="6 4"`, "("+PolicyBound+")"
		}
		n := len(x.Waits)
		if n > 0 {
			var pts []string
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", xpos(1), ypos(0)))
			for k := 0; k < n; k++ {
				// Keep the last point of each run of equal waits (and thin long lists).
				if k+1 < n && (x.Waits[k+1] == x.Waits[k] || (n > 2000 && k%(n/1000) != 0)) {
					continue
				}
				xx := xpos(x.Waits[k])
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xx, ypos(float64(k)/float64(n))), fmt.Sprintf("%.1f,%.1f", xx, ypos(float64(k+1)/float64(n))))
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", left+pw, ypos(1)))
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", col, dash, strings.Join(pts, " "))
		}
		ly := top + 10 + float64(i)*20
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="3"%s/>`+"\n", left+pw+12, ly, left+pw+32, ly, col, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s (%s)</text>`+"\n", left+pw+38, ly+4, esc(name), FormatDuration(x.MeanWait))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#555">legend: policy (mean wait)</text>`+"\n", left+pw+12, top+10+float64(len(series))*20+6)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// SystemNames lists a federation's systems in file order.
func (f *Federation) SystemNames() []string {
	out := make([]string, len(f.Systems))
	for i, s := range f.Systems {
		out[i] = s.Name
	}
	return slices.Clip(out)
}
