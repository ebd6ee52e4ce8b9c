package simprov

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

var ctx = context.Background()

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.t
}

func (f *fakeClock) Add(d time.Duration) {
	f.mu.Lock()
	f.t = f.t.Add(d)
	f.mu.Unlock()
}

func hours(h float64) model.Duration { return model.Duration(time.Duration(h * float64(time.Hour))) }

func testSystem() site.System {
	return site.System{
		Name: "Test@Sim", Kind: site.KindSim, Accounts: []string{"acct1", "acct2"}, Arch: "x86_64",
		ContainerRuntimes: []string{"apptainer"}, Features: []string{"scratch"},
		Partitions: []site.Partition{
			{Name: "gpu", Nodes: 4, CPUCores: 8, MemoryGB: 32, GPUs: 4, GPUModel: "A100", GPUMemoryGB: 40,
				MaxWalltime: hours(2), MaxNodesPerJob: 2, ChargeFactor: 2},
			{Name: "cpu", Nodes: 4, CPUCores: 16, MemoryGB: 64, MaxWalltime: hours(4), Exclusive: true, Arch: "aarch64"},
		},
	}
}

// noLoad removes background load and warm-up so tests control every job.
func noLoad(c *sim.Config) {
	c.WarmUp = -1
	for i := range c.Partitions {
		c.Partitions[i].Load.Utilization = 0
	}
}

func newProvider(t *testing.T, sys site.System, opts Options) *Provider {
	t.Helper()
	if opts.WorkDir == "" {
		opts.WorkDir = t.TempDir()
	}
	p, err := New(sys, site.SimGlobal{Seed: 1}, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// live is a provider on the real clock with a fast background tick.
func live(t *testing.T, speed float64, configure func(*sim.Config)) *Provider {
	p := newProvider(t, testSystem(), Options{Speed: speed, Tick: 20 * time.Millisecond, Configure: configure})
	p.Start()
	return p
}

func spec(part, cmd string, wall time.Duration) model.JobSpec {
	return model.JobSpec{Tag: "mosaic-t1-1", Name: "t1", Partition: part, Nodes: 1, NTasks: 1, CPUsPerTask: 2,
		Walltime: model.Duration(wall), Command: cmd}
}

func submit(t *testing.T, p *Provider, s model.JobSpec) string {
	t.Helper()
	id, err := p.Submit(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// waitFinal polls a job until it is final (at most 15 s).
func waitFinal(t *testing.T, p *Provider, id string) model.JobStatus {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		m, err := p.Status(ctx, []string{id})
		if err != nil {
			t.Fatal(err)
		}
		if st, ok := m[id]; ok && st.State.Final() {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s not final after 15s", id)
	return model.JobStatus{}
}

// waitGone waits until pid no longer runs (at most 5 s). A zombie counts as gone:
// the killed job's orphaned children are reaped by init, which may take a while.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for range 250 {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil {
			if i := strings.LastIndexByte(string(b), ')'); i > 0 && strings.HasPrefix(string(b[i+1:]), " Z") {
				return
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d still exists", pid)
}

// readPid waits for a job to write a pid file in its work directory.
func readPid(t *testing.T, p *Provider, id string) int {
	t.Helper()
	n, _ := strconv.ParseInt(id, 10, 64)
	path := filepath.Join(p.jobDir(n), "pid")
	for range 250 {
		b, err := os.ReadFile(path)
		if s := strings.TrimSpace(string(b)); err == nil && s != "" && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(s)
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("job %s wrote no pid file", id)
	return 0
}

func TestExitCodeAndLogs(t *testing.T) {
	p := live(t, 60, noLoad)
	s := spec("gpu", `echo hi; echo "job $MOSAIC_JOB_ID on $MOSAIC_SYSTEM/$MOSAIC_PARTITION gpus=$MOSAIC_GPUS cuda=$CUDA_VISIBLE_DEVICES x=$X" >&2; exit 3`, 10*time.Minute)
	s.GPUs, s.Env = 2, map[string]string{"X": "y"}
	id := submit(t, p, s)
	st := waitFinal(t, p, id)
	if st.State != model.JobFailed || st.ExitCode != 3 || st.RawState != "FAILED" || st.Name != "mosaic-t1-1" {
		t.Fatalf("status %+v", st)
	}
	if st.Start.IsZero() || st.End.Before(st.Start) || st.NodeList == "" {
		t.Fatalf("times/nodes %+v", st)
	}
	l, err := p.Logs(ctx, id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if l.Stdout != "hi\n" || !strings.Contains(l.Stderr, "job "+id+" on Test@Sim/gpu gpus=2 cuda=0,1 x=y") || l.Truncated {
		t.Fatalf("logs %+v", l)
	}
	l, _ = p.Logs(ctx, id, 2)
	if l.Stdout != "i\n" || !l.Truncated {
		t.Fatalf("tail 2: %+v", l)
	}
	if _, err := p.Logs(ctx, "999999", 10); err == nil {
		t.Fatal("logs of an unknown job")
	}
}

// TestJobEnvironmentIsClean: a simulated job sees PATH, HOME, the MOSAIC_* variables
// and its task's env, never the core's keys.
func TestJobEnvironmentIsClean(t *testing.T) {
	t.Setenv("MOSAIC_LLM_API_KEY", "sk-test-secret")
	t.Setenv("GLOBUS_CLIENT_SECRET", "globus-test-secret")
	t.Setenv("MOSAIC_TOKEN", "api-test-secret")
	p := live(t, 60, noLoad)
	s := spec("cpu", "env", time.Hour)
	s.Env = map[string]string{"TASK_VAR": "asked-for"}
	id := submit(t, p, s)
	if st := waitFinal(t, p, id); st.State != model.JobSucceeded {
		t.Fatalf("status %+v", st)
	}
	l, err := p.Logs(ctx, id, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"sk-test-secret", "globus-test-secret", "api-test-secret", "MOSAIC_LLM_API_KEY", "GLOBUS_CLIENT_SECRET"} {
		if strings.Contains(l.Stdout, secret) {
			t.Errorf("the job's environment holds %s:\n%s", secret, l.Stdout)
		}
	}
	for _, want := range []string{"PATH=", "HOME=", "MOSAIC_JOB_ID=" + id, "MOSAIC_JOB_NAME=", "MOSAIC_SYSTEM=Test@Sim", "TASK_VAR=asked-for"} {
		if !strings.Contains(l.Stdout, want) {
			t.Errorf("the job's environment lacks %s:\n%s", want, l.Stdout)
		}
	}
}

func TestSucceeded(t *testing.T) {
	p := live(t, 60, noLoad)
	s := spec("cpu", "", time.Hour)
	s.Script = "#!/bin/sh\necho from-script\n"
	id := submit(t, p, s)
	if st := waitFinal(t, p, id); st.State != model.JobSucceeded || st.ExitCode != 0 {
		t.Fatalf("status %+v", st)
	}
	if l, _ := p.Logs(ctx, id, 100); l.Stdout != "from-script\n" {
		t.Fatalf("logs %+v", l)
	}
}

func TestWalltimeTimeoutKillsProcessGroup(t *testing.T) {
	p := live(t, 60, noLoad)
	// 1 simulated minute = 1 real second at speed 60.
	id := submit(t, p, spec("gpu", "sleep 30 & echo $! > pid; wait", time.Minute))
	child := readPid(t, p, id)
	st := waitFinal(t, p, id)
	if st.State != model.JobTimeout || st.RawState != "TIMEOUT" {
		t.Fatalf("status %+v", st)
	}
	if e := st.End.Sub(st.Start); e < 900*time.Millisecond || e > 3*time.Second {
		t.Fatalf("ran %s of wall-clock time, want about 1s", e)
	}
	waitGone(t, child)
}

func TestCancelKillsProcess(t *testing.T) {
	p := live(t, 60, noLoad)
	id := submit(t, p, spec("gpu", "sleep 30 & echo $! > pid; wait", time.Hour))
	child := readPid(t, p, id)
	if err := p.Cancel(ctx, []string{id, "424242", "junk"}); err != nil {
		t.Fatal(err)
	}
	if st := waitFinal(t, p, id); st.State != model.JobCancelled {
		t.Fatalf("status %+v", st)
	}
	waitGone(t, child)
	if err := p.Cancel(ctx, []string{id}); err != nil {
		t.Fatalf("cancel of a finished job: %v", err)
	}
}

func TestInjectedJobFailure(t *testing.T) {
	sys := testSystem()
	sys.SimConfig = &site.SimSystem{Faults: site.Faults{JobFailureProb: 1}}
	p := newProvider(t, sys, Options{Speed: 600, Tick: 20 * time.Millisecond, Configure: noLoad})
	p.Start()
	id := submit(t, p, spec("gpu", "sleep 30 & echo $! > pid; wait", 10*time.Minute))
	child := readPid(t, p, id)
	if st := waitFinal(t, p, id); st.State != model.JobNodeFail {
		t.Fatalf("status %+v", st)
	}
	waitGone(t, child)
}

func TestProbeFieldsChange(t *testing.T) {
	clk := newFakeClock()
	p := newProvider(t, testSystem(), Options{Clock: clk.Now, Configure: noLoad})
	recs, err := p.Probe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 {
		t.Fatalf("%d records, want 2 partitions × 2 accounts", len(recs))
	}
	g := recs[0]
	want := model.ResourceRecord{
		Timestamp: clk.Now(), Provider: "sim", Endpoint: "sim://Test@Sim", System: "Test@Sim", Partition: "gpu",
		Account: "acct1", Arch: "x86_64", CPUCoresPerNode: 8, MemoryPerNodeGB: 32, GPUModel: "A100", GPUsPerNode: 4,
		GPUMemoryGB: 40, Nodes: model.NodeCounts{Idle: 4, Total: 4}, TotalGPUs: 16, FreeGPUs: 16, TotalCores: 32,
		FreeCores: 32, WalltimeCap: hours(2), MaxNodesPerJob: 2, ChargeFactor: 2,
		ContainerRuntimes: []string{"apptainer"}, Features: []string{"scratch"}, Health: model.HealthOK,
	}
	if !reflect.DeepEqual(g, want) {
		t.Fatalf("record\n got %+v\nwant %+v", g, want)
	}
	if recs[1].Account != "acct2" || recs[2].Partition != "cpu" || recs[2].Arch != "aarch64" || !recs[2].Exclusive {
		t.Fatalf("records %+v", recs)
	}
	s := spec("gpu", "sleep 5", time.Hour)
	s.GPUs = 3
	submit(t, p, s)
	submit(t, p, s)
	s.Partition, s.GPUs = "cpu", 0
	submit(t, p, s)
	recs, _ = p.Probe(ctx)
	g, c := recs[0], recs[2]
	if g.FreeGPUs != 10 || g.FreeCores != 28 || g.Nodes.Mixed != 2 || g.Nodes.Idle != 2 || g.MyRunningJobs != 2 || g.RunningJobs != 2 {
		t.Fatalf("gpu after two jobs %+v", g)
	}
	if c.Nodes.Allocated != 1 || c.FreeCores != 48 || c.MyRunningJobs != 1 {
		t.Fatalf("cpu after one job %+v", c)
	}
	// Two 2-node jobs with 3 GPUs per node: only the two idle nodes have 3 free GPUs,
	// so the first takes them and the second waits.
	s = spec("gpu", "sleep 5", time.Hour)
	s.Nodes, s.GPUsPerNode = 2, 3
	submit(t, p, s)
	submit(t, p, s)
	recs, _ = p.Probe(ctx)
	if g := recs[0]; g.MyPendingJobs != 1 || g.PendingJobs != 1 || g.FreeGPUs != 4 || g.Nodes.Mixed != 4 {
		t.Fatalf("gpu after 2-node jobs %+v", g)
	}
}

func TestProbeDeterminism(t *testing.T) {
	probes := func(seed int64) [][]model.ResourceRecord {
		clk := newFakeClock()
		p, err := New(testSystem(), site.SimGlobal{Seed: seed}, Options{Clock: clk.Now, WorkDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		var out [][]model.ResourceRecord
		for range 30 {
			recs, err := p.Probe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, recs)
			clk.Add(30 * time.Second) // 30 simulated minutes
		}
		return out
	}
	a, b := probes(3), probes(3)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed and clock gave different probes")
	}
	moved := false
	for i := 1; i < len(a); i++ {
		if a[i][0].FreeGPUs != a[0][0].FreeGPUs || a[i][0].PendingJobs != a[0][0].PendingJobs {
			moved = true
		}
	}
	if !moved {
		t.Fatal("background load never changed free GPUs or queue depth")
	}
	if reflect.DeepEqual(a, probes(4)) {
		t.Fatal("different seeds gave identical probes")
	}
}

func TestOutage(t *testing.T) {
	sys := testSystem()
	sys.SimConfig = &site.SimSystem{Faults: site.Faults{Outages: []site.Window{{Start: 0, Duration: hours(1)}}}}
	clk := newFakeClock()
	p := newProvider(t, sys, Options{Clock: clk.Now, Configure: noLoad})
	if _, err := p.Probe(ctx); !errors.Is(err, provider.ErrSiteDown) {
		t.Fatalf("probe during outage: %v", err)
	}
	if _, err := p.Submit(ctx, spec("gpu", "true", time.Hour)); !errors.Is(err, provider.ErrSiteDown) {
		t.Fatalf("submit during outage: %v", err)
	}
	if _, err := p.EstimateStart(ctx, spec("gpu", "true", time.Hour)); !errors.Is(err, provider.ErrSiteDown) {
		t.Fatalf("estimate during outage: %v", err)
	}
	if _, err := p.Status(ctx, []string{"1"}); !errors.Is(err, provider.ErrSiteDown) {
		t.Fatalf("status during outage: %v", err)
	}
	if err := p.Cancel(ctx, []string{"1"}); !errors.Is(err, provider.ErrSiteDown) {
		t.Fatalf("cancel during outage: %v", err)
	}
	clk.Add(61 * time.Second) // 61 simulated minutes
	if _, err := p.Probe(ctx); err != nil {
		t.Fatalf("probe after the outage: %v", err)
	}
}

func TestBatchedStatus(t *testing.T) {
	clk := newFakeClock()
	p := newProvider(t, testSystem(), Options{Clock: clk.Now, Configure: noLoad})
	var ids []string
	for range 6 {
		ids = append(ids, submit(t, p, spec("cpu", "sleep 5", time.Hour)))
	}
	for i := 1; i < len(ids); i++ {
		a, _ := strconv.Atoi(ids[i-1])
		b, _ := strconv.Atoi(ids[i])
		if b <= a {
			t.Fatalf("ids not increasing: %v", ids)
		}
	}
	m, err := p.Status(ctx, append(slicesClone(ids), "nope", "987654321"))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 6 {
		t.Fatalf("%d statuses, want 6: %v", len(m), m)
	}
	running, pending := 0, 0
	for _, id := range ids {
		switch m[id].State {
		case model.JobRunning:
			running++
		case model.JobPending:
			pending++
			if m[id].Reason != "Resources" && m[id].Reason != "Priority" {
				t.Fatalf("pending reason %q", m[id].Reason)
			}
		}
	}
	if running != 4 || pending != 2 { // 4 exclusive nodes
		t.Fatalf("running %d pending %d", running, pending)
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

func TestSubmitRefusals(t *testing.T) {
	clk := newFakeClock()
	p := newProvider(t, testSystem(), Options{Clock: clk.Now, Configure: noLoad})
	cases := []struct {
		name string
		edit func(*model.JobSpec)
		want string
	}{
		{"walltime", func(s *model.JobSpec) { s.Walltime = hours(3) }, `"Requested time limit is invalid (missing or exceeds some limit)" (partition gpu allows 2h0m0s walltime; asked 3h0m0s). Lower the walltime`},
		{"nodes", func(s *model.JobSpec) { s.Nodes = 3 }, "Node count specification invalid"},
		{"gpus", func(s *model.JobSpec) { s.GPUsPerNode = 8 }, "allows 4 gpus per node"},
		{"partition", func(s *model.JobSpec) { s.Partition = "big" }, "partitions: gpu, cpu"},
		{"account", func(s *model.JobSpec) { s.Account = "other" }, "Invalid account"},
		{"gpu model", func(s *model.JobSpec) { s.GPUModel = "H100" }, "has A100 GPUs"},
		{"runtime", func(s *model.JobSpec) { s.Container = &model.Container{Image: "x.sif", Runtime: "docker"} }, "runtime \"docker\""},
		{"invalid", func(s *model.JobSpec) { s.Command = "" }, "neither command nor script"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := spec("gpu", "true", time.Hour)
			tc.edit(&s)
			_, err := p.Submit(ctx, s)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestEstimateStart(t *testing.T) {
	clk := newFakeClock()
	p := newProvider(t, testSystem(), Options{Clock: clk.Now, Configure: noLoad})
	now := clk.Now()
	est, err := p.EstimateStart(ctx, spec("cpu", "true", time.Hour))
	if err != nil || !est.Equal(now) {
		t.Fatalf("empty partition: %v %v", est, err)
	}
	for range 4 {
		submit(t, p, spec("cpu", "sleep 5", time.Hour))
	}
	est, err = p.EstimateStart(ctx, spec("cpu", "true", time.Hour))
	// Full until the first jobs' 1h walltime: one real minute at speed 60.
	if err != nil || !est.Equal(now.Add(time.Minute)) {
		t.Fatalf("estimate %v (%v), want %v", est, err, now.Add(time.Minute))
	}
	ps := newProvider(t, testSystem(), Options{Clock: clk.Now, Configure: noLoad, SimTimestamps: true})
	for range 4 {
		submit(t, ps, spec("cpu", "sleep 5", time.Hour))
	}
	est, _ = ps.EstimateStart(ctx, spec("cpu", "true", time.Hour))
	if !est.Equal(now.Add(time.Hour)) {
		t.Fatalf("simulated-time estimate %v, want %v", est, now.Add(time.Hour))
	}
}

func TestFindByTag(t *testing.T) {
	clk := newFakeClock()
	p := newProvider(t, testSystem(), Options{Clock: clk.Now, Configure: noLoad})
	a := spec("cpu", "sleep 5", time.Hour)
	a.Tag = "mosaic-a-1"
	b := a
	b.Tag = "mosaic-b-1"
	submit(t, p, a)
	idB := submit(t, p, b)
	m, err := p.FindByTag(ctx, []string{"mosaic-b-1", "mosaic-z-9"})
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 1 || m["mosaic-b-1"].JobID != idB {
		t.Fatalf("found %+v", m)
	}
}

func TestNewDefaults(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	p, err := New(testSystem(), site.SimGlobal{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Speed() != DefaultSpeed || p.Kind() != "sim" || p.System() != "Test@Sim" ||
		!strings.HasSuffix(p.WorkDir(), filepath.Join("mosaic", "sim", "Test@Sim")) {
		t.Fatalf("defaults: speed %v workdir %s", p.Speed(), p.WorkDir())
	}
	sys := testSystem()
	sys.Partitions = nil
	if _, err := New(sys, site.SimGlobal{}, Options{WorkDir: t.TempDir()}); err == nil {
		t.Fatal("system without partitions accepted")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Probe(ctx); err == nil {
		t.Fatal("probe after close")
	}
}

func TestJobIDsGrowAcrossRestarts(t *testing.T) {
	clk := newFakeClock()
	a := newProvider(t, testSystem(), Options{Clock: clk.Now, Configure: noLoad})
	idA := submit(t, a, spec("cpu", "true", time.Hour))
	clk.Add(time.Second)
	b := newProvider(t, testSystem(), Options{Clock: clk.Now})
	idB := submit(t, b, spec("cpu", "true", time.Hour))
	na, _ := strconv.ParseInt(idA, 10, 64)
	nb, _ := strconv.ParseInt(idB, 10, 64)
	if nb <= na {
		t.Fatalf("restarted simulator reissued ids: %d then %d", na, nb)
	}
}

func TestTraceBackedSystem(t *testing.T) {
	path := filepath.Join("..", "..", "..", "..", "shared", "traces", "lublin_256.swf.gz")
	if _, err := os.Stat(path); err != nil {
		rigenv.Missing(t, fmt.Sprintf("trace %s not available (%v); the shared traces folder must be beside the clone", path, err))
	}
	sys := testSystem()
	sys.SimConfig = &site.SimSystem{Load: site.SimLoad{Trace: path, Utilization: 0.9}}
	clk := newFakeClock()
	p := newProvider(t, sys, Options{Clock: clk.Now})
	busy := 0
	for range 20 {
		recs, err := p.Probe(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if recs[2].FreeCores < recs[2].TotalCores {
			busy++
		}
		clk.Add(time.Minute)
	}
	if busy == 0 {
		t.Fatal("trace replay never occupied the cpu partition")
	}
}
