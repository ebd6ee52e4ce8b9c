package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// tracesDir is ../shared/traces beside the clone (CI) or $MOSAIC_TRACES.
func tracesDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(TracesEnv); d != "" {
		return d
	}
	d, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "traces"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); err != nil {
		rigenv.Missing(t, "SWF traces not found at "+d+" (the shared folder beside the clone); set "+TracesEnv+" to run this test")
	}
	return d
}

// swf is a small trace: 12 jobs on a 64-processor machine.
const swf = `; MaxProcs: 64
1 0 -1 3600 64 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
2 60 -1 600 1 -1 -1 -1 900 -1 1 1 1 -1 -1 -1 -1 -1
3 120 -1 7200 16 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
4 300 -1 60 4 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
5 900 -1 1800 8 -1 -1 -1 3600 -1 1 1 1 -1 -1 -1 -1 -1
6 1000 -1 0 8 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
7 1500 -1 5400 32 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
8 2400 -1 120 2 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
9 3000 -1 10800 64 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
10 3600 -1 300 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
11 4000 -1 2400 12 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
12 5000 -1 900 6 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1
`

func smallTrace(t testing.TB) *sim.Trace {
	t.Helper()
	tr, err := sim.ParseSWF(strings.NewReader(swf))
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestDeriveJobs(t *testing.T) {
	tr := smallTrace(t)
	jobs, err := DeriveJobs(tr, JobOptions{N: 11, Seed: 3, RefCores: 256, SizeScale: 0.5, Load: 0.5, MaxWalltime: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 11 {
		t.Fatalf("%d jobs, want 11", len(jobs))
	}
	var work, prev float64
	for _, j := range jobs {
		if j.Runtime <= 0 || j.Walltime < j.Runtime || j.Walltime > 2*time.Hour || j.Walltime%time.Minute != 0 {
			t.Errorf("%s: runtime %s walltime %s (want 0 < run ≤ wall ≤ 2h, whole minutes)", j.ID, j.Runtime, j.Walltime)
		}
		if j.TraceID == 6 {
			t.Errorf("trace job 6 has no run time and must be skipped")
		}
		if a := j.Arrival.Seconds(); a < prev {
			t.Errorf("%s arrives before the job before it", j.ID)
		} else {
			prev = a
		}
		// Size: share × 256 × 0.5; moldable to half from 8 processors up.
		var procs int
		for _, sj := range tr.Jobs {
			if sj.ID == j.TraceID {
				procs = sj.Size()
			}
		}
		want := max(1, (procs*128+63)/64)
		if j.MaxCores != want {
			t.Errorf("%s (trace %d, %d procs): max %d cores, want %d", j.ID, j.TraceID, procs, j.MaxCores, want)
		}
		if wantMin := map[bool]int{true: (want + 1) / 2, false: want}[procs >= MoldableMinProcs]; j.MinCores != wantMin {
			t.Errorf("%s (%d procs): min %d cores, want %d", j.ID, procs, j.MinCores, wantMin)
		}
		if j.TraceID == 2 && j.Walltime != 15*time.Minute {
			t.Errorf("trace job 2 asked 900 s; walltime %s", j.Walltime)
		}
		work += float64(j.MaxCores) * j.Runtime.Seconds()
	}
	// The arrival span is scaled so the offered load is Load × RefCores (the gaps
	// before the first job are not part of the span).
	span := jobs[len(jobs)-1].Arrival.Seconds()
	if got := work / span / 256; got < 0.45 || got > 0.55 {
		t.Errorf("offered load %.3f, want 0.5", got)
	}
	again, _ := DeriveJobs(tr, JobOptions{N: 11, Seed: 3, RefCores: 256, SizeScale: 0.5, Load: 0.5, MaxWalltime: 2 * time.Hour})
	if !reflect.DeepEqual(jobs, again) {
		t.Error("same seed, different jobs")
	}
	rigid, _ := DeriveJobs(tr, JobOptions{N: 11, Seed: 3, RefCores: 256, Rigid: true})
	for _, j := range rigid {
		if j.Moldable() {
			t.Errorf("rigid: %s is moldable", j.ID)
		}
	}
	env := jobs[0].Envelope(false)
	if err := env.Validate(); err != nil {
		t.Errorf("derived envelope invalid: %v", err)
	}
}

func TestDeriveJobsErrors(t *testing.T) {
	tr := smallTrace(t)
	one, _ := sim.ParseSWF(strings.NewReader("1 0 -1 60 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"))
	flat, _ := sim.ParseSWF(strings.NewReader("1 5 -1 60 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n2 5 -1 60 1 -1 -1 -1 -1 -1 1 1 1 -1 -1 -1 -1 -1\n"))
	cases := []struct {
		name string
		tr   *sim.Trace
		o    JobOptions
		want string
	}{
		{"no reference cores", tr, JobOptions{}, "reference core count"},
		{"size scale above 1", tr, JobOptions{RefCores: 8, SizeScale: 2}, "size scale"},
		{"negative load", tr, JobOptions{RefCores: 8, Load: -1}, "load"},
		{"one usable job", one, JobOptions{RefCores: 8}, "usable jobs"},
		{"no time span", flat, JobOptions{RefCores: 8}, "spans no time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := DeriveJobs(c.tr, c.o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestParsePolicies(t *testing.T) {
	cases := []struct {
		in   string
		want []string
		err  string
	}{
		{"all", PolicyNames, ""},
		{"home, mosaic,home", []string{"home", "mosaic"}, ""},
		{"RR,oracle", []string{"round-robin", "clairvoyant-greedy"}, ""},
		{"clairvoyant-greedy,oracle", []string{"clairvoyant-greedy"}, ""},
		{"", nil, "no policy"},
		{" , ", nil, "no policy"},
		{"home,fastest", nil, `unknown policy "fastest"`},
	}
	for _, c := range cases {
		ps, err := ParsePolicies(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: err %v, want %q", c.in, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		var got []string
		for _, p := range ps {
			got = append(got, p.Name())
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q: %v, want %v", c.in, got, c.want)
		}
	}
}

func FuzzParsePolicies(f *testing.F) {
	for _, s := range []string{"all", "home,mosaic", "rr", "", ",,", "oracle,x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ps, err := ParsePolicies(s)
		if err != nil {
			if ps != nil {
				t.Fatal("policies returned with an error")
			}
			return
		}
		seen := map[string]bool{}
		for _, p := range ps {
			if seen[p.Name()] {
				t.Fatalf("%q: %s twice", s, p.Name())
			}
			seen[p.Name()] = true
		}
	})
}

func TestLoadFederationErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	t.Setenv(TracesEnv, "")
	cases := []struct {
		name, body, want string
	}{
		{"ssh.yaml", "systems:\n  - name: A\n    kind: ssh\n    host: a.example.org\n    accounts: [x]\n    partitions:\n      - {name: p, nodes: 1, cpu_cores: 1, memory_gb: 1}\n", "kind: sim"},
		{"missing.yaml", "systems:\n  - name: A\n    kind: sim\n    accounts: [x]\n    partitions:\n      - {name: p, nodes: 1, cpu_cores: 1, memory_gb: 1}\n    sim:\n      load: {trace: nowhere.swf}\n", "not found"},
		{"bad.yaml", "systems:\n  - name: A\n    kind: sim\n    partitons: []\n", "bad.yaml:4"},
	}
	for _, c := range cases {
		_, err := LoadFederation(write(c.name, c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want it to mention %q", c.name, err, c.want)
		}
	}
	// A missing trace is found by name in $MOSAIC_TRACES.
	tdir := t.TempDir()
	if err := os.WriteFile(filepath.Join(tdir, "nowhere.swf"), []byte(swf), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(TracesEnv, tdir)
	f, err := LoadFederation(filepath.Join(dir, "missing.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Systems[0].SimConfig.Load.Trace; got != filepath.Join(tdir, "nowhere.swf") {
		t.Errorf("trace resolved to %s", got)
	}
}

// loadedFederation is two sites with synthetic background load at 90%.
func loadedFederation() *Federation {
	f := twoSites(16, 16)
	f.Configure = func(_ string, cfg *sim.Config) {
		for i := range cfg.Partitions {
			cfg.Partitions[i].Load.Utilization = 0.9
			cfg.Partitions[i].Load.MeanRuntime = time.Hour
		}
	}
	return f
}

// TestSameSeedSameNumbers: a replay is a pure function of its inputs.
func TestSameSeedSameNumbers(t *testing.T) {
	pols, _ := ParsePolicies("all")
	o := Options{Federation: loadedFederation(), Trace: smallTrace(t), Policies: pols, Jobs: 60, Seed: 7, Home: "Alpha"}
	a, err := Compare(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Compare(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("same seed, different reports:\n%s\n%s", ja, jb)
	}
	if !reflect.DeepEqual(a.Result(PolicyMosaic).Waits, b.Result(PolicyMosaic).Waits) {
		t.Error("same seed, different waits")
	}
	o.Seed = 8
	c, err := Compare(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if jc, _ := json.Marshal(c); bytes.Equal(ja, jc) {
		t.Error("seeds 7 and 8 gave identical reports; the seed is not used")
	}
	for _, r := range a.Results {
		if r.Finished+r.Rejected != r.Jobs {
			t.Errorf("%s: %d of %d finished", r.Policy, r.Finished, r.Jobs)
		}
		if r.MeanWait < 0 || r.P95Wait < r.MeanWait*0 || r.MeanBSLD < 1 {
			t.Errorf("%s: implausible metrics %+v", r.Policy, r)
		}
		if len(r.Utilisation) != 2 {
			t.Errorf("%s: utilisation %v, want both systems", r.Policy, r.Utilisation)
		}
	}
}

// TestReportOutputs: the table is aligned, the SVG is well-formed XML with one
// curve per policy, and the goal is computed.
func TestReportOutputs(t *testing.T) {
	pols, _ := ParsePolicies("home,earliest-start,mosaic")
	rep, err := Compare(context.Background(), Options{Federation: loadedFederation(), Trace: smallTrace(t), Policies: pols,
		Jobs: 30, Seed: 3, Home: "Alpha"})
	if err != nil {
		t.Fatal(err)
	}
	var tb bytes.Buffer
	if err := rep.WriteTable(&tb); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(tb.String(), "\n")
	col := strings.Index(lines[0], "MEAN WAIT")
	for _, l := range lines[1:4] {
		if len(l) <= col || l[col-1] != ' ' || l[col] == ' ' {
			t.Errorf("table not aligned at column %d:\n%s", col, tb.String())
		}
	}
	if rep.Goal == nil || rep.Goal.MeanMet == nil || rep.Goal.P95Met == nil || rep.Goal.BoundHeld == nil || !*rep.Goal.BoundHeld {
		t.Fatalf("goal not computed: %+v", rep.Goal)
	}
	for _, want := range []string{"goal: mosaic mean wait ≤ 0.85× earliest-start's", "goal: mosaic p95 wait ≤ earliest-start's",
		"goal: no policy below the bound: met", "\n(bound)  "} {
		if !strings.Contains(tb.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, tb.String())
		}
	}
	var sb bytes.Buffer
	if err := rep.WriteSVG(&sb); err != nil {
		t.Fatal(err)
	}
	svg := sb.String()
	dec := xml.NewDecoder(&sb)
	polylines := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			if err.Error() != "EOF" {
				t.Fatalf("SVG is not well-formed: %v", err)
			}
			break
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "polyline" {
			polylines++
		}
	}
	if polylines != 4 {
		t.Errorf("%d curves, want 4 (three policies and the bound)", polylines)
	}
	if !strings.Contains(svg, `stroke-dasharray="6 4" points=`) || !strings.Contains(svg, ">(bound) (") {
		t.Error("the SVG does not draw the bound as a dashed, labelled curve")
	}
}

func TestFormatDuration(t *testing.T) {
	for s, want := range map[float64]string{0: "0s", 42: "42s", 425: "7m05s", 3*3600 + 720: "3h12m", 2.4 * 86400: "2.4d"} {
		if got := FormatDuration(s); got != want {
			t.Errorf("FormatDuration(%v) = %s, want %s", s, got, want)
		}
	}
}

// TestExampleFederations loads every example federation and replays a few jobs.
func TestExampleFederations(t *testing.T) {
	dir := tracesDir(t)
	t.Setenv(TracesEnv, dir)
	tr, err := sim.ReadSWF(filepath.Join(dir, "lublin_256.swf.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"demo.yaml", "nasa-lublin.yaml", "grid.yaml"} {
		f, err := LoadFederation(filepath.Join("..", "..", "examples", "federations", name))
		if err != nil {
			t.Fatal(err)
		}
		pols, _ := ParsePolicies("home,mosaic")
		rep, err := Compare(context.Background(), Options{Federation: f, Trace: tr, Policies: pols, Jobs: 40})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, r := range rep.Results {
			if r.Finished == 0 {
				t.Errorf("%s %s: no job finished", name, r.Policy)
			}
		}
	}
}

// TestGridFederation: the grid example is what its header says: at least eight
// heterogeneous sites (64 to 1,024 cores, shared and whole-node, different caps), all
// loaded from the shared traces, with saturated and nearly idle sites.
func TestGridFederation(t *testing.T) {
	t.Setenv(TracesEnv, tracesDir(t))
	f, err := LoadFederation(filepath.Join("..", "..", "examples", "federations", "grid.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Systems) < 8 {
		t.Fatalf("%d sites, want at least 8", len(f.Systems))
	}
	minC, maxC, excl, hot, idle := 1<<30, 0, 0, 0, 0
	caps := map[model.Duration]bool{}
	for _, s := range f.Systems {
		p := s.Partitions[0]
		c := p.Nodes * p.CPUCores
		minC, maxC = min(minC, c), max(maxC, c)
		if p.Exclusive {
			excl++
		}
		caps[p.MaxWalltime] = true
		if s.SimConfig == nil || s.SimConfig.Load.Trace == "" {
			t.Errorf("%s: no trace background load", s.Name)
			continue
		}
		switch u := s.SimConfig.Load.Utilization; {
		case u >= 1:
			hot++
		case u <= 0.3:
			idle++
		}
	}
	if minC > 64 || maxC < 1024 || excl == 0 || excl == len(f.Systems) || len(caps) < 3 || hot < 2 || idle < 2 {
		t.Errorf("not heterogeneous: cores %d..%d, %d exclusive, %d walltime caps, %d saturated, %d idle", minC, maxC, excl, len(caps), hot, idle)
	}
}
