package pbs

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

func fixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var utc = &PBS{Loc: time.UTC}

func TestMapJob(t *testing.T) {
	type c struct {
		state      string
		exit       int
		has        bool
		sub        int
		want       model.JobState
		code, sign int
	}
	cases := []c{
		{"Q", 0, false, 10, model.JobPending, 0, 0}, {"H", -3, true, 20, model.JobPending, 0, 0},
		{"W", 0, false, 30, model.JobPending, 0, 0}, {"T", 0, false, 0, model.JobPending, 0, 0},
		{"R", 0, false, 42, model.JobRunning, 0, 0}, {"B", 0, false, 70, model.JobRunning, 0, 0},
		{"E", 0, false, 51, model.JobCompleting, 0, 0}, {"S", 0, false, 43, model.JobSuspended, 0, 0},
		{"U", 0, false, 0, model.JobSuspended, 0, 0}, {"M", 0, false, 94, model.JobLost, 0, 0},
		{"F", 0, true, 92, model.JobSucceeded, 0, 0}, {"F", 3, true, 93, model.JobFailed, 3, 0},
		{"F", -29, true, 93, model.JobTimeout, -29, 0}, {"F", -27, true, 93, model.JobOOM, -27, 0},
		{"F", 0, false, 91, model.JobCancelled, 0, 0}, {"F", 271, true, 91, model.JobCancelled, 0, 15},
		{"F", 265, true, 93, model.JobFailed, 0, 9}, {"X", 0, true, 92, model.JobSucceeded, 0, 0},
		{"F", -1, true, 93, model.JobFailed, -1, 0}, {"Z", 0, false, 0, model.JobUnknown, 0, 0},
	}
	for _, k := range cases {
		st, code, sig := MapJob(k.state, k.exit, k.has, k.sub)
		if st != k.want || code != k.code || sig != k.sign {
			t.Errorf("MapJob(%s,%d,%v,%d) = %s,%d,%d want %s,%d,%d", k.state, k.exit, k.has, k.sub, st, code, sig, k.want, k.code, k.sign)
		}
	}
}

func TestParseJobsFixtures(t *testing.T) {
	got, err := utc.ParseJobs(fixture(t, "qstat-x-f-F-json.sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := got["6617175.aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov"]
	if s.State != model.JobTimeout || s.ExitCode != -29 || s.Elapsed != model.Duration(6*time.Hour+84*time.Second) || s.End.IsZero() {
		t.Errorf("walltime-killed job: %+v", s)
	}
	if s := got["6631289.aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov"]; s.State != model.JobSucceeded || s.Name != "3d-bfield.sh" {
		t.Errorf("finished job: %+v", s)
	}
	if s := got["4905472.aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov"]; s.State != model.JobPending {
		t.Errorf("held job: %+v", s)
	}
	got, err = utc.ParseJobs(fixture(t, "qstat-x-f-F-json.aurora-2022.1.7.Q-H-Fterminated.excerpt.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s := got["4846771.aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov"]; s.State != model.JobCancelled || !s.Start.IsZero() {
		t.Errorf("deleted-before-run job: %+v", s)
	}
	got, err = utc.ParseJobs(fixture(t, "qstat-x-f-F-json.openpbs-23.06.06.sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	if s := got["1004.pbs"]; s.State != model.JobSucceeded || s.NodeList != "pbs" || s.Start != time.Date(2025, 6, 19, 10, 36, 47, 0, time.UTC) {
		t.Errorf("1004: %+v", s)
	}
	if s := got["1006.pbs"]; s.State != model.JobRunning || s.Elapsed != model.Duration(10*time.Second) {
		t.Errorf("1006: %+v", s)
	}
	for _, f := range []string{"qstat-f-F-json.polaris-2022.1.1.Q-H-R.sample.json", "qstat-x-f-F-json.metacentrum-19.0.0.R.sample.json",
		"qstat-f-F-json.iitd-2021.1.3.R-gpu.sample.json"} {
		got, err := utc.ParseJobs(fixture(t, f))
		if err != nil || len(got) == 0 {
			t.Errorf("%s: %d jobs, %v", f, len(got), err)
		}
	}
	pol, _ := utc.ParseJobs(fixture(t, "qstat-f-F-json.polaris-2022.1.1.Q-H-R.sample.json"))
	if s := pol["1147579.polaris-pbs-01.hsn.cm.polaris.alcf.anl.gov"]; s.State != model.JobRunning || !strings.HasPrefix(s.NodeList, "x3006c0s31b1n0,x3006c0s37b0n0") {
		t.Errorf("polaris R: %+v", s)
	}
}

func TestParseStatusMatchesIDs(t *testing.T) {
	out := dialect.Output{Stdout: fixture(t, "qstat-x-f-F-json.openpbs-23.06.06.sample.json"), ExitCode: 153,
		Stderr: []byte("qstat: Unknown Job Id 2001.pbs\n")}
	got, err := utc.ParseStatus([]string{"1004.pbs", "1005", "2001.pbs"}, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["1005"].JobID != "1005" || got["1004.pbs"].State != model.JobSucceeded {
		t.Errorf("got %+v", got)
	}
	// Header-only document on connection failure (Q8) is an error, not "no jobs".
	_, err = utc.ParseStatus([]string{"1"}, dialect.Output{Stdout: fixture(t, "quirks/q8-header-only.json"), ExitCode: 162,
		Stderr: []byte("Connection refused\nqstat: cannot connect to server 6cfab3a0b8ac (errno=15010)\n")})
	if err == nil || !strings.Contains(err.Error(), "cannot connect") {
		t.Errorf("connection failure: %v", err)
	}
	// The same header-only document with exit 0 means no job matched (Q9).
	got, err = utc.ParseStatus([]string{"1"}, dialect.Output{Stdout: fixture(t, "quirks/q8-header-only.json")})
	if err != nil || len(got) != 0 {
		t.Errorf("no jobs: %+v %v", got, err)
	}
}

func TestQuirks(t *testing.T) {
	got, err := utc.ParseJobs(fixture(t, "quirks/q1-bare-numbers.json"))
	if err != nil || got["53.testpbs"].State != model.JobPending {
		t.Errorf("Q1: %+v %v", got, err)
	}
	got, err = utc.ParseJobs(fixture(t, "quirks/q2-bad-escapes.json"))
	if err != nil {
		t.Fatalf("Q2: %v", err)
	}
	if s := got["7.polaris"]; s.Reason != `path C:\dir and a "quoted" word` || s.State != model.JobRunning {
		t.Errorf("Q2 comment: %q", s.Reason)
	}
	got, err = utc.ParseJobs(fixture(t, "quirks/q10-cjson-layout.json"))
	if err != nil || got["10.ip-10-0-6-176"].State != model.JobSucceeded {
		t.Errorf("Q10: %+v %v", got, err)
	}
	qs, err := ParseQueues(fixture(t, "quirks/q3-duplicate-keys.json"))
	if err != nil || len(qs) != 1 || !qs[0].Enabled {
		t.Errorf("Q3: %+v %v", qs, err)
	}
	if _, err := utc.ParseJobs(fixture(t, "quirks/truncated.json")); err == nil {
		t.Error("truncated: want error")
	}
	for _, bad := range []string{"", "garbage", `{"Jobs":[1,2]}`, `{"Jobs":{"1.x":5}}`, `{"Jobs":{"1.x":{"Job_Name":"a"}}}`} {
		if _, err := utc.ParseJobs([]byte(bad)); err == nil {
			t.Errorf("ParseJobs(%q): want error", bad)
		}
	}
}

func TestRepairKeepsValid(t *testing.T) {
	in := []byte(`{"a":"x\\y","b":1}`)
	if string(Repair(in)) != string(in) {
		t.Errorf("valid JSON changed: %s", Repair(in))
	}
}

func TestProbeFixtures(t *testing.T) {
	recs, err := utc.ParseProbe([]dialect.Output{{Stdout: fixture(t, "qstat-Q-f-F-json.polaris-2022.1.1.sample.json")},
		{Stdout: fixture(t, "pbsnodes-a-F-json.sample.json")}, {}}, "")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]model.ResourceRecord{}
	for _, r := range recs {
		byName[r.Partition] = r
	}
	d := byName["debug"]
	if d.WalltimeCap != model.Duration(time.Hour) || d.PendingJobs != 25 || d.RunningJobs != 7 || d.Health != model.HealthDegraded {
		t.Errorf("debug: %+v", d)
	}
	if d.Nodes != (model.NodeCounts{Idle: 1, Allocated: 1, Down: 1, Total: 3}) || d.TotalGPUs != 12 || d.FreeGPUs != 4 ||
		d.FreeCores != 64 || d.GPUModel != "A100" || d.GPUsPerNode != 4 || d.MemoryPerNodeGB != 503 {
		t.Errorf("debug nodes: %+v", d)
	}
	if r := byName["run_next"]; r.Health != model.HealthDown {
		t.Errorf("disabled queue: %+v", r)
	}
	if r := byName["prod"]; r.WalltimeCap != model.Duration(24*time.Hour) {
		t.Errorf("route queue: %+v", r)
	}
	recs, err = utc.ParseProbe([]dialect.Output{{Stdout: fixture(t, "qstat-Q-f-F-json.barbora-20.0.1.sample.json")},
		{Stdout: fixture(t, "pbsnodes-a-F-json.iitd-2021.1.3.sample.json")}, {}}, "")
	if err != nil || len(recs) != 1 {
		t.Fatalf("%+v %v", recs, err)
	}
	// The IITD node is bound to queue "test", so it does not count for "qexp".
	if r := recs[0]; r.Partition != "qexp" || r.Nodes.Total != 0 || r.MaxNodesPerJob != 4 || r.PendingJobs != 2 {
		t.Errorf("qexp: %+v", r)
	}
	recs, err = utc.ParseProbe([]dialect.Output{{Stdout: fixture(t, "qstat-Q-f-F-json.sample.json")},
		{Stdout: fixture(t, "pbsnodes-a-F-json.openpbs-23.06.06.sample.json")}, {}}, "")
	if err != nil || len(recs) < 10 {
		t.Errorf("aurora queues: %d %v", len(recs), err)
	}
	if _, err := utc.ParseProbe([]dialect.Output{{ExitCode: 1, Stderr: []byte("qstat: cannot connect to server x (errno=15010)")}, {}, {}}, ""); err == nil ||
		!strings.Contains(err.Error(), "cannot connect") {
		t.Errorf("qstat failure: %v", err)
	}
}

func TestIITDNodeMixed(t *testing.T) {
	ns, err := ParseNodes(fixture(t, "pbsnodes-a-F-json.iitd-2021.1.3.sample.json"))
	if err != nil || len(ns) != 1 {
		t.Fatal(ns, err)
	}
	recs := QueueRecords([]Queue{{Name: "test", Type: "Execution", Enabled: true, Started: true}}, ns)
	if r := recs[0]; r.Nodes.Mixed != 1 || r.FreeCores != 2 || r.FreeGPUs != 0 {
		t.Errorf("%+v", r)
	}
	if _, err := ParseNodes([]byte(`{"timestamp":1}`)); err == nil {
		t.Error("no nodes object: want error")
	}
	ns, err = ParseNodes([]byte(`{"nodes":{"x":{"Error":"Unknown node "}}}`))
	if err != nil || ns[0].Error != "Unknown node" {
		t.Errorf("unknown node: %+v %v", ns, err)
	}
}

func TestValues(t *testing.T) {
	for in, want := range map[string]int64{"527672488kb": 527672488 << 10, "8gb": 8 << 30, "0b": 0, "1024mb": 1 << 30, "4GB": 4 << 30, "10w": 80, "100": 100} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "kb", "-5kb", "1.5gb"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("ParseSize(%q): want error", bad)
		}
	}
	for in, want := range map[string]time.Duration{"45682:59:56": 45682*time.Hour + 59*time.Minute + 56*time.Second, "01:00:00": time.Hour, "30": 30 * time.Second, "1:30": 90 * time.Second, "00:00:01.5": 1500 * time.Millisecond} {
		if got, err := ParseWalltime(in); err != nil || got.D() != want {
			t.Errorf("ParseWalltime(%q) = %v %v", in, got, err)
		}
	}
	for _, bad := range []string{"", "a:b:c", "1:2:3:4", "-5", "inf"} {
		if _, err := ParseWalltime(bad); err == nil {
			t.Errorf("ParseWalltime(%q): want error", bad)
		}
	}
	if s := FormatWalltime(model.Duration(50*time.Hour + time.Second)); s != "50:00:01" {
		t.Errorf("FormatWalltime = %s", s)
	}
}

func TestRenderScript(t *testing.T) {
	sp := model.JobSpec{Tag: "mosaic-t-1", Name: "t", Partition: "debug", Account: "proj", Nodes: 2, NTasks: 8, CPUsPerTask: 4,
		GPUs: 8, MemoryGB: 64, Walltime: model.Duration(90 * time.Minute), Command: "mpiexec ./a.out", Env: map[string]string{"X": "a b"}}
	f := dialect.JobFiles{Script: "/w/mosaic/mosaic-t-1.pbs", Stdout: "/w/mosaic/mosaic-t-1.out", Stderr: "/w/mosaic/mosaic-t-1.err"}
	b, err := RenderScript(sp, f, "", "home:eagle")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{"#PBS -N mosaic-t-1\n", "#PBS -q debug\n", "#PBS -A proj\n",
		"#PBS -l select=2:ncpus=16:ngpus=4:mem=64gb:mpiprocs=4\n", "#PBS -l walltime=01:30:00\n", "#PBS -l place=scatter\n",
		"#PBS -l filesystems=home:eagle\n", "#PBS -o /w/mosaic/mosaic-t-1.out\n", "export X='a b'\n", "cd \"$PBS_O_WORKDIR\" || exit 1\n", "mpiexec ./a.out\n"} {
		if !strings.Contains(s, want) {
			t.Errorf("script lacks %q:\n%s", want, s)
		}
	}
	if err := exec.Command("bash", "-n", "-c", s).Run(); err != nil {
		t.Errorf("bash -n: %v", err)
	}
	sp.Partition = "debug\n#PBS -q prod"
	if _, err := RenderScript(sp, f, "", ""); err == nil {
		t.Error("newline in queue: want error")
	}
	sp.Partition = "debug"
	if _, err := RenderScript(sp, f, "", "bad fs"); err == nil {
		t.Error("bad filesystems: want error")
	}
}

func TestSubmitCancelVersion(t *testing.T) {
	for out, want := range map[string]string{"1004.pbs\n": "1004.pbs", "6617175.aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov\n": "6617175.aurora-pbs-0001.hostmgmt.cm.aurora.alcf.anl.gov", "12[].srv\n": "12[].srv"} {
		if id, err := utc.ParseSubmit(dialect.Output{Stdout: []byte(out)}); err != nil || id != want {
			t.Errorf("ParseSubmit(%q) = %q %v", out, id, err)
		}
	}
	_, err := utc.ParseSubmit(dialect.Output{ExitCode: 188, Stderr: []byte("qsub: Job violates queue and/or server resource limits\n")})
	if err == nil || !strings.Contains(err.Error(), "violates queue") {
		t.Errorf("qsub error: %v", err)
	}
	if _, err := utc.ParseSubmit(dialect.Output{Stdout: []byte("Job submitted!\n")}); err == nil {
		t.Error("garbage id: want error")
	}
	if err := utc.ParseCancel(dialect.Output{ExitCode: 153, Stderr: []byte("qdel: Unknown Job Id 120\nqdel: Job has finished 8\n")}); err != nil {
		t.Errorf("unknown/finished: %v", err)
	}
	if err := utc.ParseCancel(dialect.Output{ExitCode: 159, Stderr: []byte("qdel: Unauthorized Request  210\n")}); err == nil {
		t.Error("unauthorized: want error")
	}
	if v, err := utc.ParseVersion([]byte("pbs_version = 23.06.06\n")); err != nil || v != "23.06.06" {
		t.Errorf("version %q %v", v, err)
	}
	if utc.EstimateCommand("x") != nil {
		t.Error("PBS has no estimate command")
	}
}

func TestFindByTag(t *testing.T) {
	got, err := utc.ParseFindByTag([]string{"hello_pbs", "hi_pbs", "nope"}, dialect.Output{Stdout: fixture(t, "qstat-x-f-F-json.openpbs-23.06.06.sample.json")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["hello_pbs"].JobID != "1005.pbs" || got["hi_pbs"].JobID != "1006.pbs" {
		t.Errorf("%+v", got)
	}
}

// TestParseWalltimeOverflow: a huge hour count from qstat is an error, never wrapped
// into a short walltime (finding 7 of issue 14, at the PBS parser).
func TestParseWalltimeOverflow(t *testing.T) {
	for _, in := range []string{"2562048:00:00", "99999999999999999999", "153722867281:00", "9223372036854775807:00:00",
		"1:2.5:3", "1..5", "1:.:2", "+5", "5e3", "0x10"} {
		if d, err := ParseWalltime(in); err == nil {
			t.Errorf("ParseWalltime(%q) = %v, want an error", in, d)
		}
	}
	for in, want := range map[string]time.Duration{"2562047:00:00": 2562047 * time.Hour, ".5": 500 * time.Millisecond,
		"00:00:01.123456789123": time.Second + 123456789} {
		if got, err := ParseWalltime(in); err != nil || got.D() != want {
			t.Errorf("ParseWalltime(%q) = %v %v, want %v", in, got, err, want)
		}
	}
}

// TestQueueRecordsCanonicalGPU: PBS resources_available.gpu_type values become the
// catalogue's names (with the memory they spell), not just upper-cased text.
func TestQueueRecordsCanonicalGPU(t *testing.T) {
	for in, want := range map[string]struct {
		m  string
		gb int
	}{"A100-80GB": {"A100", 80}, "a100": {"A100", 0}, "pvc": {"MAX1550", 0}, "NVIDIA A6000": {"RTXA6000", 0},
		"h100_nvl": {"H100", 0}, "Tesla V100-SXM2-16GB": {"V100", 16}, "mystery": {"MYSTERY", 0}} {
		recs := QueueRecords([]Queue{{Name: "gpu", Type: "Execution", Enabled: true, Started: true}},
			[]Node{{Name: "n1", State: "free", CPUs: 8, GPUs: 4, GPUType: in}})
		if len(recs) != 1 || recs[0].GPUModel != want.m || recs[0].GPUMemoryGB != want.gb {
			t.Errorf("gpu_type %q: %+v; want %s %d GB", in, recs, want.m, want.gb)
		}
	}
}
