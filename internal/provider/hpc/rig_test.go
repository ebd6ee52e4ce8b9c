package hpc

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// countingTransport counts remote calls and remembers their program names.
type countingTransport struct {
	inner transport.Transport
	n     atomic.Int64
	mu    sync.Mutex
	progs []string
}

func (c *countingTransport) Run(ctx context.Context, argv []string, stdin io.Reader) (transport.Result, error) {
	c.n.Add(1)
	c.mu.Lock()
	c.progs = append(c.progs, argv[0])
	c.mu.Unlock()
	return c.inner.Run(ctx, argv, stdin)
}

func (c *countingTransport) reset() {
	c.n.Store(0)
	c.mu.Lock()
	c.progs = nil
	c.mu.Unlock()
}

func (c *countingTransport) Close() error {
	if cl, ok := c.inner.(interface{ Close() error }); ok {
		return cl.Close()
	}
	return nil
}

// rigProvider builds a provider for a rig cluster ("alpha"/"beta") via "local", "ssh"
// or "globus".
func rigProvider(t *testing.T, cluster, via string) (*Provider, *countingTransport) {
	t.Helper()
	env := rigenv.Require(t)
	up := strings.ToUpper(cluster)
	sys := site.System{
		Name: cluster + "@rig", Dialect: site.DialectSlurm, Accounts: []string{env.Get(t, "RIG_ACCOUNT")},
		WorkDir: env.Get(t, "RIG_WORKDIR_"+up), ContainerRuntimes: []string{"apptainer"},
	}
	var opts []Option
	switch via {
	case "local":
		sys.Kind = site.KindLocal
		opts = append(opts, WithLocalEnv("SLURM_CONF="+env.Get(t, "SLURM_CONF_"+up)))
	case "ssh":
		sys.Kind = site.KindSSH
		sys.Host = env.Get(t, "RIG_SSH_HOST_"+up)
		sys.SSH = &site.SSH{ConfigFile: env.Get(t, "RIG_SSH_CONFIG")}
	case "globus":
		// A fake Globus Compute service whose endpoint runs tasks on this host.
		id, c, _ := globusRig(t, "SLURM_CONF="+env.Get(t, "SLURM_CONF_"+up))
		sys.Kind = site.KindGlobus
		sys.Endpoint = id
		opts = append(opts, WithGlobusClient(c))
	}
	p, err := New(sys, opts...)
	if err != nil {
		t.Fatal(err)
	}
	fastGlobusPolling(p)
	return counted(t, p)
}

// counted counts p's remote calls, shares the tests' ssh control directory, and
// closes p when the test ends.
func counted(t *testing.T, p *Provider) (*Provider, *countingTransport) {
	if s, ok := p.tr.(*transport.SSH); ok {
		s.ControlDir = filepath.Join(os.TempDir(), "mosaic-ssh-hpctest")
	}
	ct := &countingTransport{inner: p.tr}
	p.tr = ct
	t.Cleanup(func() { _ = p.Close() })
	return p, ct
}

var tagSeq atomic.Int64

// tag returns a unique Mosaic tag for this test run.
func tag(t *testing.T, what string) string {
	return fmt.Sprintf("mosaic-%s%d-%d", what, time.Now().UnixNano()%1_000_000_000, tagSeq.Add(1))
}

func spec(t *testing.T, what, partition, cmd string, wall time.Duration) model.JobSpec {
	return model.JobSpec{Tag: tag(t, what), Name: what, Partition: partition, Nodes: 1, NTasks: 1, CPUsPerTask: 1,
		MemoryGB: 1, Walltime: model.Duration(wall), Command: cmd}
}

// waitState polls Status until the job reaches a state accepted by ok, or fails after limit.
func waitState(t *testing.T, p *Provider, id string, limit time.Duration, ok func(model.JobState) bool) model.JobStatus {
	t.Helper()
	deadline := time.Now().Add(limit)
	var last model.JobStatus
	for time.Now().Before(deadline) {
		st, err := p.Status(context.Background(), []string{id})
		if err != nil {
			t.Fatalf("status %s: %v", id, err)
		}
		if s, found := st[id]; found {
			last = s
			if ok(s.State) {
				return s
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("job %s: still %s (%s) after %s", id, last.State, last.RawState, limit)
	return last
}

func final(s model.JobState) bool { return s.Final() }

func record(t *testing.T, recs []model.ResourceRecord, partition string) model.ResourceRecord {
	t.Helper()
	for _, r := range recs {
		if r.Partition == partition {
			return r
		}
	}
	t.Fatalf("no record for partition %s in %+v", partition, recs)
	return model.ResourceRecord{}
}

// TestRigProbe runs on beta (nothing else uses it): an idle node, then a GPU job that
// occupies part of it, seen through both transports.
func TestRigProbe(t *testing.T) {
	for _, via := range []string{"local", "ssh", "globus"} {
		t.Run(via, func(t *testing.T) {
			p, ct := rigProvider(t, "beta", via)
			ctx := context.Background()
			if _, err := p.User(ctx); err != nil {
				t.Fatal(err)
			}
			ct.reset()
			recs, err := p.Probe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := ct.n.Load(); n > 2 {
				t.Errorf("probe used %d remote calls, want at most 2 (%v)", n, ct.progs)
			}
			if len(recs) != 2 {
				t.Fatalf("want 2 records (cpu, gpuA100 × rigacct), got %+v", recs)
			}
			g := record(t, recs, "gpuA100")
			if g.System != "beta@rig" || g.Account != "rigacct" || g.Provider != via || g.GPUModel != "A100" ||
				g.GPUsPerNode != 4 || g.CPUCoresPerNode != 64 || g.MemoryPerNodeGB != 250 || g.Health != model.HealthOK ||
				g.WalltimeCap != model.Duration(24*time.Hour) {
				t.Errorf("gpu record: %+v", g)
			}
			if g.FreeGPUs != 4 || g.FreeCores != 64 {
				t.Fatalf("beta should be idle before the test (free gpus %d cores %d); is something else running there?", g.FreeGPUs, g.FreeCores)
			}
			sp := spec(t, "probe", "gpuA100", "sleep 120", 5*time.Minute)
			sp.GPUs, sp.GPUModel, sp.CPUsPerTask = 2, "A100", 8
			id, err := p.Submit(ctx, sp)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{id}) })
			waitState(t, p, id, 30*time.Second, func(s model.JobState) bool { return s == model.JobRunning })
			recs, err = p.Probe(ctx)
			if err != nil {
				t.Fatal(err)
			}
			g = record(t, recs, "gpuA100")
			if g.FreeGPUs != 2 || g.FreeCores != 56 || g.Nodes.Mixed != 1 || g.RunningJobs != 1 || g.MyRunningJobs != 1 {
				t.Errorf("with a 2-GPU job: %+v", g)
			}
			c := record(t, recs, "cpu")
			if c.FreeCores != 56 || c.RunningJobs != 0 {
				t.Errorf("cpu partition shares the node: %+v", c)
			}
			if err := p.Cancel(ctx, []string{id}); err != nil {
				t.Fatal(err)
			}
			waitState(t, p, id, 30*time.Second, final)
			deadline := time.Now().Add(20 * time.Second)
			for {
				recs, err = p.Probe(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if g = record(t, recs, "gpuA100"); g.FreeGPUs == 4 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("GPUs not freed after cancel: %+v", g)
				}
				time.Sleep(300 * time.Millisecond)
			}
		})
	}
}

// TestRigLifecycle: success, failure with exit code, cancel, logs, find-by-tag, through
// both transports on alpha.
func TestRigLifecycle(t *testing.T) {
	for _, via := range []string{"local", "ssh", "globus"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			p, _ := rigProvider(t, "alpha", via)
			ctx := context.Background()

			ok := spec(t, "ok", "cpu", `echo "hello from $SLURM_JOB_NAME"; echo "to stderr" >&2; echo "$GREETING"`, 5*time.Minute)
			ok.Env = map[string]string{"GREETING": "it's $not expanded"}
			okID, err := p.Submit(ctx, ok)
			if err != nil {
				t.Fatal(err)
			}
			bad := spec(t, "fail", "cpu", "exit 3", 5*time.Minute)
			badID, err := p.Submit(ctx, bad)
			if err != nil {
				t.Fatal(err)
			}
			long := spec(t, "cancel", "cpu", "sleep 300", 10*time.Minute)
			longID, err := p.Submit(ctx, long)
			if err != nil {
				t.Fatal(err)
			}
			s := waitState(t, p, okID, 60*time.Second, final)
			// Accounting may not know the name for a few seconds after a short job ends.
			if s.State != model.JobSucceeded || s.ExitCode != 0 || (s.Name != ok.Tag && s.Name != "") {
				t.Errorf("ok job: %+v", s)
			}
			s = waitState(t, p, badID, 60*time.Second, final)
			if s.State != model.JobFailed || s.ExitCode != 3 {
				t.Errorf("failing job: %+v", s)
			}
			waitState(t, p, longID, 60*time.Second, func(s model.JobState) bool { return s == model.JobRunning })
			if err := p.Cancel(ctx, []string{longID, "999999"}); err != nil {
				t.Fatal(err)
			}
			s = waitState(t, p, longID, 30*time.Second, final)
			if s.State != model.JobCancelled {
				t.Errorf("cancelled job: %+v", s)
			}
			logs, err := p.Logs(ctx, okID, 1024)
			if err != nil {
				t.Fatal(err)
			}
			if logs.Stdout != "hello from "+ok.Tag+"\nit's $not expanded\n" || logs.Stderr != "to stderr\n" || logs.Truncated {
				t.Errorf("logs: %+v", logs)
			}
			logs, err = p.Logs(ctx, okID, 5)
			if err != nil || logs.Stdout != "nded\n" || !logs.Truncated {
				t.Errorf("tail 5: %+v %v", logs, err)
			}
			// The location recorded at submit is read by a provider that never saw the
			// job (a restarted core), without asking the scheduler.
			loc, err := p.Output(ok, okID)
			if err != nil {
				t.Fatal(err)
			}
			fresh, _ := rigProvider(t, "alpha", via)
			logs, err = fresh.ReadOutput(ctx, loc, 1024)
			if err != nil || logs.Stdout != "hello from "+ok.Tag+"\nit's $not expanded\n" || logs.Stderr != "to stderr\n" {
				t.Errorf("recorded output read by a fresh provider: %+v %v", logs, err)
			}
			found, err := p.FindByTag(ctx, []string{ok.Tag, bad.Tag, "mosaic-never-submitted-1"})
			if err != nil {
				t.Fatal(err)
			}
			if len(found) != 2 || found[ok.Tag].JobID != okID || found[bad.Tag].JobID != badID {
				t.Errorf("find by tag: %+v", found)
			}
		})
	}
}

// TestRigTimeout: a job over its walltime (1 minute, the minimum) ends TIMEOUT.
func TestRigTimeout(t *testing.T) {
	t.Parallel()
	p, _ := rigProvider(t, "alpha", "local")
	sp := spec(t, "timeout", "cpu", "sleep 600", time.Minute)
	id, err := p.Submit(context.Background(), sp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{id}) })
	s := waitState(t, p, id, 150*time.Second, final)
	if s.State != model.JobTimeout {
		t.Errorf("want timeout, got %+v", s)
	}
}

// TestRigBatchStatus: 50 jobs' status in one remote call.
func TestRigBatchStatus(t *testing.T) {
	t.Parallel()
	p, ct := rigProvider(t, "alpha", "local")
	ctx := context.Background()
	var ids []string
	for i := range 50 {
		sp := spec(t, "batch", "cpu", fmt.Sprintf("exit %d", i%4), 5*time.Minute)
		id, err := p.Submit(ctx, sp)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		ct.reset()
		st, err := p.Status(ctx, ids)
		if err != nil {
			t.Fatal(err)
		}
		if n := ct.n.Load(); n != 1 {
			t.Fatalf("status of 50 jobs took %d remote calls (%v), want 1", n, ct.progs)
		}
		done := 0
		for i, id := range ids {
			s, ok := st[id]
			if ok && s.State.Final() {
				done++
				want := model.JobSucceeded
				if i%4 != 0 {
					want = model.JobFailed
				}
				if s.State != want || s.ExitCode != i%4 {
					t.Errorf("job %s (exit %d): %+v", id, i%4, s)
				}
			}
		}
		if done == len(ids) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 50 jobs finished", done)
		}
		time.Sleep(time.Second)
	}
}

// TestRigEstimate: with all GPUs of alpha taken, a 4-GPU job must wait; --test-only says
// until when. Planned on the limits: the rig's history of the user's jobs (its tests'
// short ones) would predict the sleeping blocker to end early.
func TestRigEstimate(t *testing.T) {
	t.Parallel()
	p, _ := rigProvider(t, "alpha", "ssh")
	WithRuntimePredictions(false)(p)
	ctx := context.Background()
	block := spec(t, "block", "gpuA100", "sleep 300", 10*time.Minute)
	block.GPUs = 4
	id, err := p.Submit(ctx, block)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{id}) })
	waitState(t, p, id, 60*time.Second, func(s model.JobState) bool { return s == model.JobRunning })
	want := spec(t, "wait", "gpuA100", "true", 30*time.Minute)
	want.GPUs = 4
	est, err := p.EstimateStart(ctx, want)
	if err != nil {
		t.Fatal(err)
	}
	if until := time.Until(est); until < 5*time.Minute || until > 11*time.Minute {
		t.Errorf("estimate %v is %v from now; want about the blocker's 10-minute limit", est, until)
	}
	// An impossible request is refused with Slurm's reason.
	huge := spec(t, "huge", "gpuA100", "true", 30*time.Minute)
	huge.GPUs = 5
	if _, err := p.EstimateStart(ctx, huge); err == nil || !strings.Contains(err.Error(), "node configuration") {
		t.Errorf("5 GPUs on a 4-GPU node: %v", err)
	}
}

// TestRigEstimateBatch: a batch of start estimates is one remote command (over one
// ssh connection), and each spec gets Slurm's own answer: a start for those that fit,
// the refusal for the one that never can.
func TestRigEstimateBatch(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"ssh", "local"} {
		t.Run(via, func(t *testing.T) {
			p, ct := rigProvider(t, "alpha", via)
			if s, ok := ct.inner.(*transport.SSH); ok {
				// Its own control master: closing the shared one at the end would cut
				// off the other tests' commands on alpha.
				dir, err := os.MkdirTemp("", "mosaic-ssh-est")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = p.Close(); os.RemoveAll(dir) }) // the master exits before its socket's directory goes
				s.ControlDir = dir
			}
			ctx := context.Background()
			a := spec(t, "esta", "gpuA100", "true", 30*time.Minute)
			a.GPUs = 1
			b := spec(t, "estb", "gpuA100", "true", time.Hour)
			b.GPUs = 2
			huge := spec(t, "esth", "gpuA100", "true", 30*time.Minute)
			huge.GPUs = 5
			bad := spec(t, "estx", "gpuA100", "", time.Hour) // no command: refused before the site
			first, err := p.EstimateStart(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			ct.reset()
			before := time.Now()
			got, err := p.EstimateStarts(ctx, []model.JobSpec{a, huge, bad, b})
			if err != nil {
				t.Fatal(err)
			}
			if n := ct.n.Load(); n != 1 {
				t.Errorf("%d remote calls for a batch of 4, want 1 (%v)", n, ct.progs)
			}
			for _, i := range []int{0, 3} {
				if got[i].Err != nil || got[i].Start.Before(before.Add(-2*time.Minute)) || got[i].Start.After(before.Add(24*time.Hour)) {
					t.Errorf("spec %d: start %v err %v; want Slurm's estimate", i, got[i].Start, got[i].Err)
				}
			}
			if got[1].Err == nil || !strings.Contains(got[1].Err.Error(), "node configuration") {
				t.Errorf("5 GPUs on a 4-GPU node: %v", got[1].Err)
			}
			if got[2].Err == nil || !strings.Contains(got[2].Err.Error(), "command") {
				t.Errorf("a spec without a command: %v", got[2].Err)
			}
			// The same answer as single estimates just before and after, when those agree
			// (other tests share the rig: a job of theirs may change the answer).
			last, err := p.EstimateStart(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			near := func(x, y time.Time) bool { return x.Sub(y).Abs() <= time.Minute }
			if near(first, last) && !near(got[0].Start, first) {
				t.Errorf("batch says %v, single estimates before and after %v and %v", got[0].Start, first, last)
			} else if !near(first, last) {
				t.Logf("the rig changed during the test (single estimates %v then %v): batch not compared", first, last)
			}
		})
	}
}
