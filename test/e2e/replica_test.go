package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/store"
	"github.com/mosaic-hpc/mosaic/internal/store/pgtest"
)

// Team mode's done-means test (docs/TEAM.md): three `mosaic serve --replica` on one
// store and one simulated federation (a shared sim work directory), 100 submissions
// spread over the replicas by the Go client (several base URLs, an idempotency key
// per submission), and the leader killed with SIGKILL at random moments at least
// five times (each killed replica restarted, as a follower). Every task must end,
// none may be lost or doubled, and each attempt must have been submitted once: the
// side effects are counted, not store rows — the lines the commands append to a file
// and the simulated sites' own job records (one job directory per attempt tag).
//
// The store is a fresh database on the test PostgreSQL (MOSAIC_TEST_POSTGRES or
// scripts/testpg/up.sh's env file; required under CI=true), else one SQLite file in
// WAL mode shared by the three processes.

// replicaTick is the probe tick: the lease's TTL, so a takeover takes at most
// TTL + TTL/3 after the last renewal.
const replicaTick = time.Second

type replicaProc struct {
	addr string
	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{}
}

type replicaSet struct {
	t     *testing.T
	e     *env
	args  []string
	procs []*replicaProc
	mu    sync.Mutex
	logs  []string // output of killed processes
}

func (rs *replicaSet) start(i int) {
	rs.t.Helper()
	p := rs.procs[i]
	cmd := exec.Command(binary, append([]string{"serve", "--replica", "--addr", p.addr}, rs.args...)...)
	cmd.Env, cmd.Dir = rs.e.vars, rs.e.home
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		rs.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	p.cmd, p.out, p.done = cmd, &out, done
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if code, _ := httpGet("http://"+p.addr+"/healthz", ""); code == 200 {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	rs.t.Fatalf("replica %d did not answer /healthz within 20s:\n%s", i, out.String())
}

func (rs *replicaSet) kill(i int) {
	p := rs.procs[i]
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	rs.mu.Lock()
	rs.logs = append(rs.logs, fmt.Sprintf("--- killed replica %d (%s):\n%s", i, p.addr, p.out.String()))
	rs.mu.Unlock()
}

type health struct {
	Role   string `json:"role"`
	Leader string `json:"leader"`
	Token  int64  `json:"lease_token"`
}

func (rs *replicaSet) health(i int) (health, bool) {
	var h health
	code, b := httpGet("http://"+rs.procs[i].addr+"/healthz", "")
	if code != 200 || json.Unmarshal(b, &h) != nil {
		return h, false
	}
	return h, true
}

// leader waits for one replica (not skip) to say it leads with a token above
// minToken; -1 when none does within the bound.
func (rs *replicaSet) leader(skip int, minToken int64, within time.Duration) (int, int64) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		for i := range rs.procs {
			if i == skip {
				continue
			}
			if h, ok := rs.health(i); ok && h.Role == "leader" && h.Token > minToken {
				return i, h.Token
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return -1, 0
}

func (rs *replicaSet) urls() []string {
	var u []string
	for _, p := range rs.procs {
		u = append(u, "http://"+p.addr)
	}
	return u
}

func replicaStore(t *testing.T, home string) string {
	if pgtest.ServerURL() != "" || os.Getenv("CI") == "true" {
		db := pgtest.New(t) // a database of this test's own; fails under CI=true without a server
		t.Logf("store: PostgreSQL (%s)", store.RedactDSN(db))
		return db
	}
	t.Log("store: one SQLite file shared by the replicas (no test PostgreSQL: scripts/testpg/up.sh starts one)")
	return filepath.Join(home, "state", "shared.db")
}

func TestReplicasLeaderKilledNothingLostNothingTwice(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	simDir := filepath.Join(dir, "sim")
	sites := filepath.Join(dir, "sites.yaml")
	catalog := strings.Replace(simCrashSites, "sim:\n", "sim:\n  workdir: "+simDir+"\n", 1)
	if err := os.WriteFile(sites, []byte(catalog), 0o600); err != nil {
		t.Fatal(err)
	}
	e.vars = append(e.vars, "MOSAIC_DB="+replicaStore(t, e.home))
	rs := startReplicas(t, e, 3, "--headless", "--sites", sites, "--tick", replicaTick.String())
	token := e.token()
	side := filepath.Join(dir, "side")

	const total = 100
	prefix := fmt.Sprintf("rep%04x-", rand.IntN(1<<16)) // a shared PostgreSQL keeps earlier runs' tasks
	var names []string
	for i := range total {
		names = append(names, fmt.Sprintf("%s%03d", prefix, i))
	}
	urls := rs.urls()
	subs := submitAcross(t, urls, token, names, 4, func(l string) string { return fmt.Sprintf("echo %s >> %s; sleep 0.5", l, side) })
	subsDone := subs.done

	// The killer: the leader dies at a random moment, at least five times.
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 25))
	takeovers := rs.killLeaders(rng, 5, 8, subsDone, replicaTick)
	submitted := subs.wait(120 * time.Second)

	// Every task ends.
	c, err := client.New(strings.Join(urls, ","), token)
	if err != nil {
		t.Fatal(err)
	}
	tasks := waitFinal(c, prefix, total, 90*time.Second)
	byName := map[string][]client.TaskSummary{}
	for _, x := range tasks {
		byName[x.Name] = append(byName[x.Name], x)
	}
	ran := readSide(t, side)
	jobs := simJobsByTag(t, simDir)
	for _, l := range names {
		if submitted[l] == "" {
			t.Errorf("%s was never acknowledged", l)
		}
		got := byName[l]
		if len(got) != 1 {
			t.Errorf("%s: %d tasks, want exactly one (lost or doubled)", l, len(got))
			continue
		}
		if got[0].ID != submitted[l] && submitted[l] != "" {
			t.Errorf("%s: task %s, but the client was told %s", l, got[0].ID, submitted[l])
		}
		if got[0].State != "succeeded" {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			d, _ := c.Task(ctx, got[0].ID)
			cancel()
			b, _ := json.Marshal(d)
			t.Errorf("%s (%s) ended %s: %s", l, got[0].ID, got[0].State, b)
		}
		if ran[l] != 1 {
			t.Errorf("the command of %s ran %d times, want once", l, ran[l])
		}
	}
	for tag, n := range jobs {
		if n != 1 {
			t.Errorf("attempt %s was submitted %d times (sim job directories), want once", tag, n)
		}
	}
	if len(jobs) < total {
		t.Errorf("%d attempts reached the sites, want at least %d", len(jobs), total)
	}
	if len(tasks) != total {
		t.Errorf("%d tasks in the store, want %d", len(tasks), total)
	}
	worst := worstOf(takeovers)
	t.Logf("takeovers after SIGKILL: %v (worst %s, tick %s); %d submit calls failed and were retried", takeovers, worst.Round(time.Millisecond), replicaTick, subs.retries())
	fmt.Printf("replica takeovers: worst %s over %d kills (tick %s)\n", worst.Round(time.Millisecond), len(takeovers), replicaTick)
	// Two ticks, plus the time this test needs to see it (health polls every 20ms
	// on a loaded machine).
	if worst > 2*replicaTick+250*time.Millisecond {
		t.Errorf("worst takeover %s, want within two ticks (%s)", worst, 2*replicaTick)
	}
}

// startReplicas starts n replicas (the first one leading) and stops them when the
// test ends, showing every output if it failed.
func startReplicas(t *testing.T, e *env, n int, args ...string) *replicaSet {
	t.Helper()
	rs := &replicaSet{t: t, e: e, args: args}
	for range n {
		rs.procs = append(rs.procs, &replicaProc{addr: freeAddr(t)})
	}
	t.Cleanup(func() {
		for _, p := range rs.procs {
			if p.cmd != nil {
				_ = p.cmd.Process.Signal(os.Interrupt)
				select {
				case <-p.done:
				case <-time.After(10 * time.Second):
					_ = p.cmd.Process.Kill()
					<-p.done
				}
			}
		}
		if t.Failed() {
			for _, l := range rs.logs {
				t.Log(l)
			}
			for i, p := range rs.procs {
				t.Logf("--- replica %d (%s):\n%s", i, p.addr, p.out.String())
			}
		}
	})
	rs.start(0)
	if i, _ := rs.leader(-1, 0, 10*time.Second); i != 0 {
		t.Fatalf("the first replica did not become the leader (leader %d)", i)
	}
	for i := 1; i < n; i++ {
		rs.start(i)
	}
	return rs
}

// killLeaders kills the leader at random moments, at least min times (and on, up to
// max, while busy is open), restarting each killed replica as a follower; it returns
// the takeover times (kill to a new leader's /healthz).
func (rs *replicaSet) killLeaders(rng *rand.Rand, minKills, maxKills int, busy chan struct{}, tick time.Duration) []time.Duration {
	t := rs.t
	t.Helper()
	var takeovers []time.Duration
	cur, tok := rs.leader(-1, 0, 5*time.Second)
	for kills := 0; kills < minKills || (kills < maxKills && !closed(busy)); kills++ {
		time.Sleep(time.Duration(300+rng.IntN(1700)) * time.Millisecond)
		rs.kill(cur)
		killed := time.Now()
		next, ntok := rs.leader(cur, tok, 10*time.Second)
		if next < 0 {
			t.Fatalf("no replica took over within 10s after leader %d (token %d) was killed", cur, tok)
		}
		d := time.Since(killed)
		takeovers = append(takeovers, d)
		t.Logf("kill %d: leader %d (token %d) killed; replica %d leads (token %d) after %s", kills+1, cur, tok, next, ntok, d.Round(time.Millisecond))
		fmt.Printf("replica takeover %d: %s (tick %s)\n", kills+1, d.Round(time.Millisecond), tick)
		rs.start(cur) // back as a follower
		if h, ok := rs.health(cur); !ok || h.Role != "follower" {
			t.Errorf("the restarted replica %d is %+v, want a follower", cur, h)
		}
		cur, tok = next, ntok
	}
	return takeovers
}

func worstOf(ds []time.Duration) time.Duration {
	w := time.Duration(0)
	for _, d := range ds {
		w = max(w, d)
	}
	return w
}

// submissions are labelled tasks submitted across the replicas.
type submissions struct {
	t    *testing.T
	done chan struct{}
	mu   sync.Mutex
	ids  map[string]string // label -> task id ("" if never acknowledged)
	errs []string
}

// submitAcross submits one task per label from workers clients, each given every
// replica's URL starting at another one, with one idempotency key per label that a
// worker reuses for its own retries; the client fails over between replicas.
func submitAcross(t *testing.T, urls []string, token string, labels []string, workers int, command func(string) string) *submissions {
	t.Helper()
	s := &submissions{t: t, done: make(chan struct{}), ids: map[string]string{}}
	ch := make(chan string, len(labels))
	for _, l := range labels {
		ch <- l
	}
	close(ch)
	runID := fmt.Sprintf("%x", rand.Uint64())
	var wg sync.WaitGroup
	for w := range workers {
		k := w % len(urls)
		order := append(append([]string{}, urls[k:]...), urls[:k]...)
		c, err := client.New(strings.Join(order, ","), token)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range ch {
				req := client.SubmitRequest{Name: l, Command: command(l),
					Envelope: &v1.Envelope{CPUCores: v1.IntRange{Min: 1, Max: 1}, Walltime: v1.DurationRange{Min: v1.Duration(5 * time.Minute), Max: v1.Duration(5 * time.Minute)}}}
				var id string
				for try := 0; try < 10 && id == ""; try++ {
					ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
					res, err := c.SubmitIdempotent(ctx, req, runID+"-"+l)
					cancel()
					if err == nil && res.Task != nil {
						id = res.Task.ID
						break
					}
					s.mu.Lock()
					s.errs = append(s.errs, fmt.Sprintf("%s try %d: %v", l, try, err))
					s.mu.Unlock()
					time.Sleep(300 * time.Millisecond)
				}
				s.mu.Lock()
				s.ids[l] = id
				s.mu.Unlock()
				time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond)
			}
		}()
	}
	go func() { wg.Wait(); close(s.done) }()
	return s
}

// wait waits (bounded) for every submission and returns label -> task id.
func (s *submissions) wait(limit time.Duration) map[string]string {
	s.t.Helper()
	select {
	case <-s.done:
	case <-time.After(limit):
		s.t.Fatalf("the submitters did not finish within %s", limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ids
}

func (s *submissions) retries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.errs)
}

// waitFinal waits (bounded) until at least n tasks named prefix… exist and all are
// final, and returns them (as they are at the limit otherwise).
func waitFinal(c *client.Client, prefix string, n int, limit time.Duration) []client.TaskSummary {
	var tasks []client.TaskSummary
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(500 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		all, err := c.Tasks(ctx, nil, 10000)
		cancel()
		if err != nil {
			continue
		}
		tasks = named(all, prefix)
		open := 0
		for _, x := range tasks {
			if !finalState(string(x.State)) {
				open++
			}
		}
		if open == 0 && len(tasks) >= n {
			break
		}
	}
	return tasks
}

// named keeps the tasks whose name starts with prefix.
func named(ts []client.TaskSummary, prefix string) []client.TaskSummary {
	var out []client.TaskSummary
	for _, x := range ts {
		if strings.HasPrefix(x.Name, prefix) {
			out = append(out, x)
		}
	}
	return out
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func readSide(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sideEffects(string(b))
}

// simJobsByTag counts the simulated sites' job directories per attempt tag: each
// submit the sites accepted left one (<workdir>/<system>/<id>/mosaic-job.json).
func simJobsByTag(t *testing.T, dir string) map[string]int {
	t.Helper()
	n := map[string]int{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "mosaic-job.json" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var rec struct {
			Spec struct {
				Tag string `json:"tag"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(b, &rec); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		n[rec.Spec.Tag]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRigReplicasLeaderKilledOneJobPerAttempt is the team-mode test on the real Slurm
// rig: three replicas, 20 tasks, the leader killed with SIGKILL at random moments (at
// least five times); every task succeeds, its command runs once, and sacct lists
// exactly one job per attempt tag (none doubled, none orphaned). A submit the killed
// leader had in flight (its ssh may still deliver the sbatch) is looked up by tag
// before anything else and never repeated within its timeout, so a task can take a
// couple of minutes longer; the waits allow for that and for a busy rig.
func TestRigReplicasLeaderKilledOneJobPerAttempt(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	e.vars = append(e.vars, "MOSAIC_DB="+replicaStore(t, e.home))
	side := filepath.Join(t.TempDir(), "side-effects")
	if err := os.WriteFile(side, nil, 0o666); err != nil { // the rig's jobs run on this machine
		t.Fatal(err)
	}
	start := time.Now()
	rs := startReplicas(t, e, 3, "--headless", "--sites", r.sites(), "--tick", "1s")
	prefix := fmt.Sprintf("rrep%04x-", rand.IntN(1<<16))
	var names []string
	for i := range 20 {
		names = append(names, fmt.Sprintf("%s%02d", prefix, i))
	}
	subs := submitAcross(t, rs.urls(), e.token(), names, 2, func(l string) string {
		return fmt.Sprintf("echo %s job=$SLURM_JOB_ID >> %s; sleep 1", l, side)
	})
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	takeovers := rs.killLeaders(rand.New(rand.NewPCG(uint64(seed), 26)), 5, 6, subs.done, time.Second)
	submitted := subs.wait(3 * time.Minute)
	t.Logf("takeovers after SIGKILL: %v (worst %s, tick 1s)", takeovers, worstOf(takeovers).Round(time.Millisecond))

	c, err := client.New(strings.Join(rs.urls(), ","), e.token())
	if err != nil {
		t.Fatal(err)
	}
	tasks := waitFinal(c, prefix, len(names), 5*time.Minute)
	ran := readSide(t, side)
	attempts := map[string]string{} // tag -> cluster:job
	ours := map[string]bool{}
	byName := map[string]int{}
	for _, x := range tasks {
		byName[x.Name]++
		ours[x.ID] = true
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		d, err := c.Task(ctx, x.ID)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if d.State != "succeeded" {
			t.Errorf("task %s (%s) ended %s: %s", x.ID, x.Name, d.State, d.Reason)
		}
		for _, a := range d.Attempts {
			if a.JobID != "" {
				attempts[a.Tag] = a.System + ":" + a.JobID
			}
		}
	}
	for _, l := range names {
		if submitted[l] == "" || byName[l] != 1 {
			t.Errorf("%s: acknowledged as %q, %d tasks in the store (want exactly one)", l, submitted[l], byName[l])
		}
		if ran[l] != 1 {
			t.Errorf("the command of %s ran %d times, want once", l, ran[l])
		}
	}
	// One batch job per attempt (sacct lags a little behind: polled, bounded).
	for _, p := range r.jobsPerAttempt(start.Add(-5*time.Second).Format("2006-01-02T15:04:05"), attempts, ours) {
		t.Error(p)
	}
}
