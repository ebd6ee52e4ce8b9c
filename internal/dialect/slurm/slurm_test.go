package slurm

import (
	"os"
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

var utc = &Slurm{Loc: time.UTC}

func TestMapStateEveryState(t *testing.T) {
	cases := map[string]model.JobState{
		"PENDING": model.JobPending, "CONFIGURING": model.JobPending, "RUNNING": model.JobRunning,
		"COMPLETING": model.JobCompleting, "COMPLETED": model.JobSucceeded, "FAILED": model.JobFailed,
		"TIMEOUT": model.JobTimeout, "OUT_OF_MEMORY": model.JobOOM, "NODE_FAIL": model.JobNodeFail,
		"CANCELLED": model.JobCancelled, "CANCELLED by 0": model.JobCancelled, "CANCELLED by 12345": model.JobCancelled,
		"CANCELLED+": model.JobCancelled, "PREEMPTED": model.JobPreempted, "BOOT_FAIL": model.JobBootFail,
		"DEADLINE": model.JobDeadline, "REQUEUED": model.JobRequeued, "REQUEUE_HOLD": model.JobRequeued,
		"REQUEUE_FED": model.JobRequeued, "RESIZING": model.JobRunning, "REVOKED": model.JobCancelled,
		"SPECIAL_EXIT": model.JobFailed, "STOPPED": model.JobSuspended, "SUSPENDED": model.JobSuspended,
		"SIGNALING": model.JobRunning, "STAGE_OUT": model.JobCompleting, "RESV_DEL_HOLD": model.JobPending,
		"PD": model.JobPending, "R": model.JobRunning, "CG": model.JobCompleting, "CD": model.JobSucceeded,
		"F": model.JobFailed, "TO": model.JobTimeout, "OOM": model.JobOOM, "NF": model.JobNodeFail,
		"CA": model.JobCancelled, "running": model.JobRunning,
		"WEIRD_NEW_STATE": model.JobUnknown, "": model.JobUnknown,
	}
	for raw, want := range cases {
		if got := MapState(raw); got != want {
			t.Errorf("MapState(%q) = %s, want %s", raw, got, want)
		}
	}
}

func TestParseExitCode(t *testing.T) {
	for in, want := range map[string][2]int{"3:0": {3, 0}, "0:15": {0, 15}, "0:0": {0, 0}, "137": {137, 0}, "": {0, 0}} {
		e, s, err := ParseExitCode(in)
		if err != nil || e != want[0] || s != want[1] {
			t.Errorf("ParseExitCode(%q) = %d,%d,%v want %v", in, e, s, err, want)
		}
	}
	for _, bad := range []string{"x:0", "3:y", "-1:0", "3:-2", ":"} {
		if _, _, err := ParseExitCode(bad); err == nil {
			t.Errorf("ParseExitCode(%q): want error", bad)
		}
	}
}

func TestParseGres(t *testing.T) {
	cases := []struct {
		in    string
		count int
		typ   string
	}{
		{"gpu:a100:4(S:0-1)", 4, "a100"},
		{"gpu:a100:4", 4, "a100"},
		{"gpu:4", 4, ""},
		{"gpu:a100:2(IDX:0-1),gpu:v100:1(IDX:2)", 3, "a100"},
		{"gpu:a100:0(IDX:N/A)", 0, "a100"},
		{"(null)", 0, ""},
		{"gpu:tesla:2(S:0,1),mps:200", 2, "tesla"},
		{"gpu:nvidia_a100-sxm4-80gb:8(S:0-3)", 8, "nvidia_a100-sxm4-80gb"},
		{"shard:a100:64K,gpu:h100:4", 4, "h100"},
		{"gpu", 1, ""},
	}
	for _, c := range cases {
		gs, err := ParseGres(c.in)
		if err != nil {
			t.Errorf("ParseGres(%q): %v", c.in, err)
			continue
		}
		n, typ := gpuSummary(gs)
		if n != c.count || typ != c.typ {
			t.Errorf("ParseGres(%q) gpus = %d %q, want %d %q", c.in, n, typ, c.count, c.typ)
		}
	}
	for _, bad := range []string{"gpu:a100:4(S:0", ":4"} {
		if _, err := ParseGres(bad); err == nil {
			t.Errorf("ParseGres(%q): want error", bad)
		}
	}
}

func TestCanonicalGPU(t *testing.T) {
	for in, want := range map[string]struct {
		m  string
		gb int
	}{"a100": {"A100", 0}, "nvidia_a100-sxm4-80gb": {"A100", 80}, "h100_94gb": {"H100", 94}, "a10": {"A10", 0},
		"l40s": {"L40S", 0}, "mi250x": {"MI250X", 0}, "gh200": {"GH200", 0}, "weird": {"WEIRD", 0}, "": {"", 0}} {
		m, gb := CanonicalGPU(in)
		if m != want.m || gb != want.gb {
			t.Errorf("CanonicalGPU(%q) = %q,%d want %q,%d", in, m, gb, want.m, want.gb)
		}
	}
}

// TestCanonicalGPUUsesCatalogue: GRES types from real sites map to the catalogue's
// names, the ones a --gpu-model request parses into, so submit and idle agree.
func TestCanonicalGPUUsesCatalogue(t *testing.T) {
	for in, want := range map[string]struct {
		m  string
		gb int
	}{"a6000": {"RTXA6000", 0}, "pvc": {"MAX1550", 0}, "rtx_a4000": {"RTXA4000", 0}, "quadro_rtx_5000": {"RTX5000", 0},
		"a100_80gb": {"A100", 80}, "h100_nvl": {"H100", 0}, "rtx_a6000": {"RTXA6000", 0}, "tesla_v100-sxm2-32gb": {"V100", 32},
		"max1550": {"MAX1550", 0}, "a40": {"A40", 0}, "nvidia_h100_80gb_hbm3": {"H100", 80}, "mi300a": {"MI300A", 0},
		"rtx_8000": {"RTX8000", 0}, "unknownx_48gb": {"UNKNOWNX_48GB", 48}} {
		m, gb := CanonicalGPU(in)
		if m != want.m || gb != want.gb {
			t.Errorf("CanonicalGPU(%q) = %q,%d want %q,%d", in, m, gb, want.m, want.gb)
		}
		if spec, err := model.ParseGPUModel(in); err == nil && spec.Model != m {
			t.Errorf("%q: record %q but a request parses to %q", in, m, spec.Model)
		}
	}
}

func TestClassifyNodeState(t *testing.T) {
	cases := map[string]NodeAvail{
		"idle": NodeIdle, "idle~": NodeIdle, "idle#": NodeIdle, "idle@": NodeIdle, "mixed": NodeMixed, "mixed-": NodeMixed,
		"allocated": NodeAlloc, "allocated+": NodeAlloc, "alloc": NodeAlloc, "mix": NodeMixed, "drained": NodeDown,
		"draining": NodeDown, "drng": NodeDown, "down*": NodeDown, "idle*": NodeDown, "mixed$": NodeDown,
		"idle%": NodeDown, "idle!": NodeDown, "IDLE+DRAIN": NodeDown, "mixed+drain": NodeDown, "inval": NodeDown,
		"unknown": NodeDown, "future": NodeDown, "planned": NodeMixed, "reserved": NodeMixed, "completing": NodeMixed,
		"fail": NodeDown, "maint": NodeDown, "": NodeDown, "idle+cloud": NodeIdle, "allocated#": NodeAlloc,
	}
	for in, want := range cases {
		if got := ClassifyNodeState(in); got != want {
			t.Errorf("ClassifyNodeState(%q) = %d, want %d", in, got, want)
		}
	}
}

func TestParseProbeFixture(t *testing.T) {
	outs := []dialect.Output{{Stdout: fixture(t, "sinfo-alpha-mixed.txt")}, {Stdout: fixture(t, "squeue-queue-alpha.txt")}}
	recs, err := utc.ParseProbe(outs, "root")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 {
		t.Fatalf("got %d records", len(recs))
	}
	var gpu, cpu model.ResourceRecord
	for _, r := range recs {
		switch r.Partition {
		case "gpuA100":
			gpu = r
		case "cpu":
			cpu = r
		}
	}
	if gpu.GPUModel != "A100" || gpu.GPUsPerNode != 4 || gpu.TotalGPUs != 4 || gpu.FreeGPUs != 2 {
		t.Errorf("gpu gres: %+v", gpu)
	}
	if gpu.CPUCoresPerNode != 64 || gpu.TotalCores != 64 || gpu.FreeCores != 56 || gpu.MemoryPerNodeGB != 250 {
		t.Errorf("gpu cores/mem: %+v", gpu)
	}
	if gpu.Nodes != (model.NodeCounts{Mixed: 1, Total: 1}) || gpu.Health != model.HealthOK {
		t.Errorf("gpu nodes: %+v %s", gpu.Nodes, gpu.Health)
	}
	if gpu.WalltimeCap != model.Duration(24*time.Hour) || cpu.WalltimeCap != model.Duration(48*time.Hour) {
		t.Errorf("walltime caps %v %v", gpu.WalltimeCap, cpu.WalltimeCap)
	}
	if gpu.RunningJobs != 1 || gpu.PendingJobs != 1 || gpu.MyRunningJobs != 1 || gpu.MyPendingJobs != 1 {
		t.Errorf("gpu queue %+v", gpu)
	}
	if cpu.PendingJobs != 1 || cpu.RunningJobs != 0 || cpu.MyPendingJobs != 1 {
		t.Errorf("cpu queue %+v", cpu)
	}
	recs, err = utc.ParseProbe(outs, "alice")
	if err != nil || recs[1].MyRunningJobs+recs[0].MyRunningJobs+recs[0].MyPendingJobs != 0 {
		t.Errorf("other user sees own jobs: %+v %v", recs, err)
	}
}

func TestParseProbeDrained(t *testing.T) {
	recs, err := utc.ParseProbe([]dialect.Output{{Stdout: fixture(t, "sinfo-beta-drained.txt")}, {}}, "root")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Health != model.HealthDown || r.Nodes.Down != 1 || r.FreeGPUs != 0 || r.FreeCores != 0 {
			t.Errorf("drained partition %s: %+v", r.Partition, r)
		}
	}
}

func TestParseSinfoSynthetic(t *testing.T) {
	// Several nodes, mixed GPU types, down nodes, UNLIMITED and partition down.
	out := strings.Join([]string{
		"gpu*|g1|mixed|128|64/64/0/128|512000|100000|gpu:h100:4(S:0-1)|gpu:h100:3(IDX:0-2)|UNLIMITED|up|1-16|hbm,ib|",
		"gpu*|g2|idle~|128|0/128/0/128|512000|0|gpu:h100:4(S:0-1)|gpu:h100:0(IDX:N/A)|UNLIMITED|up|1-16|ib|",
		"gpu*|g3|down*|128|0/0/128/128|512000|0|gpu:h100:4(S:0-1)|gpu:h100:0(IDX:N/A)|UNLIMITED|up|1-16|ib|",
		"gpu*|g4|allocated|128|128/0/0/128|512000|512000|gpu:h100:4(S:0-1)|gpu:h100:4(IDX:0-3)|UNLIMITED|up|1-16|ib|",
		"old|o1|idle|32|0/32/0/32|128000|0|(null)|gpu:0|2-12:00:00|down|1|(null)|",
	}, "\n")
	recs, err := utc.ParseProbe([]dialect.Output{{Stdout: []byte(out)}, {}}, "")
	if err != nil {
		t.Fatal(err)
	}
	g := recs[0]
	if g.Partition != "gpu" || g.GPUModel != "H100" || g.TotalGPUs != 16 || g.FreeGPUs != 1+4 || g.FreeCores != 64+128 {
		t.Errorf("gpu: %+v", g)
	}
	if g.Nodes != (model.NodeCounts{Idle: 1, Mixed: 1, Allocated: 1, Down: 1, Total: 4}) || g.Health != model.HealthDegraded {
		t.Errorf("gpu nodes: %+v %s", g.Nodes, g.Health)
	}
	if g.WalltimeCap != 0 || g.MaxNodesPerJob != 16 || strings.Join(g.Features, ",") != "hbm,ib" {
		t.Errorf("gpu limits: %+v", g)
	}
	o := recs[1]
	if o.Health != model.HealthDown || o.WalltimeCap != model.Duration(60*time.Hour) || o.GPUsPerNode != 0 || o.MaxNodesPerJob != 1 {
		t.Errorf("old: %+v", o)
	}
}

func TestParseSinfoMalformed(t *testing.T) {
	cases := map[string]string{
		"too few fields":  "cpu|n1|idle|64",
		"bad cpus":        "cpu|n1|idle|x|0/64/0/64|256000|0|(null)|(null)|1:00:00|up|1|(null)|",
		"bad cpusstate":   "cpu|n1|idle|64|0/64|256000|0|(null)|(null)|1:00:00|up|1|(null)|",
		"bad memory":      "cpu|n1|idle|64|0/64/0/64|lots|0|(null)|(null)|1:00:00|up|1|(null)|",
		"bad time":        "cpu|n1|idle|64|0/64/0/64|256000|0|(null)|(null)|soon|up|1|(null)|",
		"bad gres":        "cpu|n1|idle|64|0/64/0/64|256000|0|gpu:a100:4(S:0|(null)|1:00:00|up|1|(null)|",
		"empty partition": "|n1|idle|64|0/64/0/64|256000|0|(null)|(null)|1:00:00|up|1|(null)|",
		"extra field":     "cpu|n1|idle|64|0/64/0/64|256000|0|(null)|(null)|1:00:00|up|1|(null)|x|y|",
		"garbage":         "\x00\xff garbage",
		"truncated":       "cpu|alpha-n1|mixed|64|8/56/0/64|2560",
	}
	for name, in := range cases {
		if _, err := ParseSinfo([]byte(in)); err == nil {
			t.Errorf("%s: want error", name)
		}
	}
	if _, err := utc.ParseProbe([]dialect.Output{{}, {}}, ""); err == nil {
		t.Error("empty sinfo: want error")
	}
	if _, err := utc.ParseProbe([]dialect.Output{{ExitCode: 1, Stderr: []byte("sinfo: error: Unable to contact slurm controller")}, {}}, ""); err == nil ||
		!strings.Contains(err.Error(), "Unable to contact") {
		t.Errorf("sinfo failure: %v", err)
	}
}

func TestParseQueueMalformed(t *testing.T) {
	for _, in := range []string{"1|cpu|root", "1|cpu|root|R|extra", "|cpu|root|R", "1|cpu|root|"} {
		if _, err := ParseQueue([]byte(in)); err == nil {
			t.Errorf("ParseQueue(%q): want error", in)
		}
	}
	jobs, err := ParseQueue([]byte("1|cpu,gpu|u|PENDING\r\n\n2|gpu|v|RUNNING"))
	if err != nil || len(jobs) != 2 || jobs[0].Partitions != "cpu,gpu" || jobs[1].State != "RUNNING" {
		t.Errorf("got %+v %v", jobs, err)
	}
}

func TestParseSacctFixture(t *testing.T) {
	got, err := utc.ParseStatus([]string{"1", "2", "3", "4", "5", "404"}, dialect.Output{Stdout: fixture(t, "sacct-alpha-finished.txt")})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 5 {
		t.Fatalf("got %d jobs", len(got))
	}
	if s := got["3"]; s.State != model.JobFailed || s.ExitCode != 3 || s.Name != "mosaic-t-fail" || s.NodeList != "alpha-n1" {
		t.Errorf("job 3: %+v", s)
	}
	if s := got["4"]; s.State != model.JobCancelled || s.RawState != "CANCELLED by 0" || s.Elapsed != model.Duration(2*time.Second) {
		t.Errorf("job 4: %+v", s)
	}
	if s := got["1"]; s.State != model.JobRunning || !s.End.IsZero() || s.Start != time.Date(2026, 11, 30, 3, 38, 45, 0, time.UTC) {
		t.Errorf("job 1: %+v", s)
	}
	if s := got["5"]; s.State != model.JobPending || s.NodeList != "" || !s.Start.IsZero() {
		t.Errorf("job 5: %+v", s)
	}
	// The second fixture has a job name containing '|'.
	got, err = utc.ParseStatus([]string{"7", "8", "9", "10"}, dialect.Output{Stdout: fixture(t, "sacct-alpha.txt")})
	if err != nil {
		t.Fatal(err)
	}
	if s := got["8"]; s.Name != "name with|pipe" || s.State != model.JobPending {
		t.Errorf("job 8: %+v", s)
	}
}

func TestParseSacctMalformed(t *testing.T) {
	for _, in := range []string{
		"1|n|COMPLETED|0:0",
		"1|n|COMPLETED|x:0|00:00:01|Unknown|Unknown|n1|None|Unknown",
		"1|n|COMPLETED|0:0|forever|Unknown|Unknown|n1|None|Unknown",
		"|n|COMPLETED|0:0|00:00:01|Unknown|Unknown|n1|None|Unknown",
	} {
		if _, err := ParseSacct([]byte(in), utc); err == nil {
			t.Errorf("ParseSacct(%q): want error", in)
		}
	}
	_, err := utc.ParseStatus([]string{"1"}, dialect.Output{ExitCode: 1, Stderr: []byte("sacct: error: Slurm accounting storage is disabled\n")})
	if err == nil || !strings.Contains(err.Error(), "fallback") {
		t.Errorf("no accounting: %v", err)
	}
	if _, err := utc.ParseStatus([]string{"1"}, dialect.Output{ExitCode: 1, Stderr: []byte("sacct: fatal: something else\n")}); err == nil {
		t.Error("sacct failure: want error")
	}
}

func TestParseScontrolFixtures(t *testing.T) {
	one, err := ParseScontrolJobs(fixture(t, "scontrol-oneliner-alpha.txt"), utc)
	if err != nil {
		t.Fatal(err)
	}
	multi, err := ParseScontrolJobs(fixture(t, "scontrol-multiline-alpha.txt"), utc)
	if err != nil {
		t.Fatal(err)
	}
	if len(one) == 0 || len(one) != len(multi) {
		t.Fatalf("oneliner %d jobs, multiline %d", len(one), len(multi))
	}
	for id, s := range one {
		if multi[id] != s {
			t.Errorf("job %s differs: %+v vs %+v", id, s, multi[id])
		}
	}
	if s := one["10"]; s.State != model.JobCancelled || s.ExitCode != 0 {
		t.Errorf("job 10: %+v", s)
	}
	if s := one["8"]; s.Name != "name with|pipe" || s.State != model.JobPending || s.Reason != "Resources" {
		t.Errorf("job 8: %+v", s)
	}
	if s := one["7"]; s.State != model.JobRunning || s.NodeList != "alpha-n1" || s.Start.IsZero() {
		t.Errorf("job 7: %+v", s)
	}
}

func TestParseScontrolMalformed(t *testing.T) {
	for _, in := range []string{"garbage here", "JobName=x JobState=RUNNING", "JobId=1 ExitCode=zz:0"} {
		if _, err := ParseScontrolJobs([]byte(in), utc); err == nil {
			t.Errorf("ParseScontrolJobs(%q): want error", in)
		}
	}
	got, err := ParseScontrolJobs([]byte("No jobs in the system\n"), utc)
	if err != nil || len(got) != 0 {
		t.Errorf("empty: %v %v", got, err)
	}
	got, err = ParseScontrolJobs([]byte("JobId=5 ArrayJobId=5 ArrayTaskId=2 JobName=a b c JobState=TIMEOUT Reason=TimeLimit ExitCode=0:15 RunTime=00:01:00"), utc)
	if err != nil || got["5_2"].Name != "a b c" || got["5_2"].State != model.JobTimeout || got["5_2"].Signal != 15 {
		t.Errorf("array job: %+v %v", got, err)
	}
}

func TestFallbackStatus(t *testing.T) {
	ids := []string{"7", "8", "9", "10", "404"}
	got, err := utc.ParseFallbackStatus(ids, []dialect.Output{
		{Stdout: fixture(t, "squeue-jobs-alpha.txt")}, {Stdout: fixture(t, "scontrol-oneliner-alpha.txt")}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 4 {
		t.Fatalf("got %d: %+v", len(got), got)
	}
	if s := got["10"]; s.State != model.JobCancelled || s.ExitCode != 0 || s.End.IsZero() {
		t.Errorf("10: %+v", s)
	}
	if s := got["8"]; s.Name != "name with|pipe" || s.Reason != "Resources" {
		t.Errorf("8: %+v", s)
	}
	// squeue exits 1 when it knows none of the ids.
	got, err = utc.ParseFallbackStatus([]string{"404"}, []dialect.Output{
		{ExitCode: 1, Stderr: []byte("slurm_load_jobs error: Invalid job id specified\n")}, {Stdout: []byte("No jobs in the system")}})
	if err != nil || len(got) != 0 {
		t.Errorf("unknown ids: %+v %v", got, err)
	}
	if _, err := utc.ParseFallbackStatus(ids, []dialect.Output{{ExitCode: 1, Stderr: []byte("squeue: error: Unable to contact slurm controller")}, {}}); err == nil {
		t.Error("squeue failure: want error")
	}
}

func TestFindByTag(t *testing.T) {
	out := "3|mosaic-a-1|FAILED|3:0|00:00:00|2026-11-30T03:39:08|2026-11-30T03:39:08|n1|None|2026-11-30T03:39:08\n" +
		"12|mosaic-a-1|RUNNING|0:0|00:00:10|2026-11-30T03:40:08|Unknown|n1|None|2026-11-30T03:40:00\n" +
		"9|mosaic-b-1|PENDING|0:0|00:00:00|Unknown|Unknown|None assigned|None|2026-11-30T03:40:00\n" +
		"11|other|PENDING|0:0|00:00:00|Unknown|Unknown|None assigned|None|2026-11-30T03:40:00\n"
	got, err := utc.ParseFindByTag([]string{"mosaic-a-1", "mosaic-b-1", "mosaic-c-1"}, dialect.Output{Stdout: []byte(out)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got["mosaic-a-1"].JobID != "12" || got["mosaic-b-1"].JobID != "9" {
		t.Errorf("got %+v", got)
	}
	cmd := strings.Join(utc.FindByTagCommand([]string{"a", "b"}), " ")
	if !strings.Contains(cmd, "--name=a,b") || !strings.Contains(cmd, "--starttime=") {
		t.Errorf("command %q", cmd)
	}
}

func TestParseSubmit(t *testing.T) {
	for out, want := range map[string]string{"123\n": "123", "456;alpha\n": "456", "sbatch: warning: x\n789\n": "789"} {
		id, err := ParseSubmit(dialect.Output{Stdout: []byte(out)})
		if err != nil || id != want {
			t.Errorf("ParseSubmit(%q) = %q, %v", out, id, err)
		}
	}
	for _, o := range []dialect.Output{
		{ExitCode: 1, Stderr: []byte("sbatch: error: Batch job submission failed: Requested node configuration is not available\n")},
		{Stdout: []byte("")}, {Stdout: []byte("Submitted batch job 12\n")}, {Stdout: []byte("abc;x")},
	} {
		if _, err := ParseSubmit(o); err == nil {
			t.Errorf("ParseSubmit(%+v): want error", o)
		}
	}
	_, err := ParseSubmit(dialect.Output{ExitCode: 1, Stderr: []byte("sbatch: error: Batch job submission failed: Invalid account or account/partition combination specified\n")})
	if err == nil || !strings.Contains(err.Error(), "Invalid account") {
		t.Errorf("error should carry sbatch's message: %v", err)
	}
}

func TestParseEstimate(t *testing.T) {
	got, err := ParseEstimate(dialect.Output{Stderr: fixture(t, "sbatch-test-only.stderr.txt")}, time.UTC)
	if err != nil || !got.Equal(time.Date(2026, 11, 30, 3, 53, 45, 0, time.UTC)) {
		t.Errorf("got %v %v", got, err)
	}
	if _, err := ParseEstimate(dialect.Output{ExitCode: 1, Stderr: []byte("sbatch: error: Requested node configuration is not available")}, time.UTC); err == nil {
		t.Error("want error")
	}
	if _, err := ParseEstimate(dialect.Output{Stderr: []byte("sbatch: Job 4 to start at 2026-13-45T99:00:00 using")}, time.UTC); err == nil {
		t.Error("want error for a bad time")
	}
	if _, err := ParseEstimate(dialect.Output{}, time.UTC); err == nil {
		t.Error("want error for no output")
	}
}

func TestParseCancel(t *testing.T) {
	ok := []dialect.Output{{}, {ExitCode: 1, Stderr: []byte("scancel: error: Kill job error on job id 999: Invalid job id specified\n")},
		{ExitCode: 1, Stderr: []byte("scancel: error: Kill job error on job id 5: Job/step already completing or completed\n")}}
	for _, o := range ok {
		if err := ParseCancel(o); err != nil {
			t.Errorf("%s: %v", o.Stderr, err)
		}
	}
	if err := ParseCancel(dialect.Output{ExitCode: 1, Stderr: []byte("scancel: error: Kill job error on job id 5: Access/permission denied\n")}); err == nil {
		t.Error("permission denied: want error")
	}
}

func TestParseVersion(t *testing.T) {
	for in, want := range map[string]string{"slurm-wlm 22.05.8\n": "22.05.8", "slurm 23.11.4\n": "23.11.4", "slurm 24.05.0-0rc1": "24.05.0-0rc1"} {
		if v, err := utc.ParseVersion([]byte(in)); err != nil || v != want {
			t.Errorf("ParseVersion(%q) = %q %v", in, v, err)
		}
	}
	if _, err := utc.ParseVersion([]byte("bash: sinfo: command not found")); err == nil {
		t.Error("want error")
	}
}

func TestSplitDelimited(t *testing.T) {
	f, ok := splitDelimited("a|b|c|", 3, -1)
	if !ok || strings.Join(f, ",") != "a,b,c" {
		t.Errorf("%q %v", f, ok)
	}
	f, ok = splitDelimited("1|x|y|z|R", 3, 1)
	if !ok || f[1] != "x|y|z" {
		t.Errorf("5 fields into 3 with one free: got %q", f)
	}
	if _, ok = splitDelimited("1|x", 3, 1); ok {
		t.Error("2 fields into 3: want !ok")
	}
	f, ok = splitDelimited("1|x|y|R|", 3, 1)
	if !ok || f[1] != "x|y" || f[2] != "R" {
		t.Errorf("%q %v", f, ok)
	}
}

// A very short job shows the placeholder name "allocation" in sacct for a few seconds
// (seen on the rig, Slurm 22.05.8); it must read as "name unknown".
func TestSacctAllocationPlaceholder(t *testing.T) {
	got, err := ParseSacct([]byte("71|allocation|COMPLETED|0:0|00:00:00|2026-11-30T03:49:17|2026-11-30T03:49:17|alpha-n1|None|2026-11-30T03:49:17\n"), utc)
	if err != nil || got["71"].Name != "" || got["71"].State != model.JobSucceeded {
		t.Errorf("%+v %v", got, err)
	}
}

func TestCancelPendingCommand(t *testing.T) {
	got := (&Slurm{}).CancelPendingCommand([]string{"12", "13_1"})
	want := []string{"scancel", "--state=PENDING", "12", "13_1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("%q, want %q", got, want)
	}
}
