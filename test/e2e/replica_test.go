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
// The store is the PostgreSQL database MOSAIC_TEST_POSTGRES names when it is set (CI
// sets it), else one SQLite file in WAL mode shared by the three processes.

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
	if dsn := os.Getenv("MOSAIC_TEST_POSTGRES"); dsn != "" {
		if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
			t.Fatalf("MOSAIC_TEST_POSTGRES=%q: want a postgres:// URL of a database the test may use", dsn)
		}
		return dsn
	}
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
	rs := &replicaSet{t: t, e: e, args: []string{"--headless", "--sites", sites, "--tick", replicaTick.String()}}
	for range 3 {
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
	rs.start(1)
	rs.start(2)
	token := e.token()
	side := filepath.Join(dir, "side")

	// Submitters: four clients, each starting at another replica, with a key per
	// label that they reuse for their own retries.
	const total = 100
	labels := make(chan string, total)
	for i := range total {
		labels <- fmt.Sprintf("rep%03d", i)
	}
	close(labels)
	urls := rs.urls()
	var wg sync.WaitGroup
	var mu sync.Mutex
	submitted := map[string]string{} // label -> task id
	var submitErrs []string
	runID := fmt.Sprintf("%x", rand.Uint64())
	for w := range 4 {
		order := append(append([]string{}, urls[w%3:]...), urls[:w%3]...)
		c, err := client.New(strings.Join(order, ","), token)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range labels {
				req := client.SubmitRequest{Name: l, Command: fmt.Sprintf("echo %s >> %s; sleep 0.5", l, side),
					Envelope: &v1.Envelope{CPUCores: v1.IntRange{Min: 1, Max: 1}, Walltime: v1.DurationRange{Min: v1.Duration(30 * time.Minute), Max: v1.Duration(30 * time.Minute)}}}
				var id string
				for try := 0; try < 10 && id == ""; try++ {
					ctx, cancel := context.WithTimeout(context.Background(), 45*time.Second)
					res, err := c.SubmitIdempotent(ctx, req, runID+"-"+l)
					cancel()
					if err == nil && res.Task != nil {
						id = res.Task.ID
						break
					}
					mu.Lock()
					submitErrs = append(submitErrs, fmt.Sprintf("%s try %d: %v", l, try, err))
					mu.Unlock()
					time.Sleep(300 * time.Millisecond)
				}
				mu.Lock()
				submitted[l] = id
				mu.Unlock()
				time.Sleep(time.Duration(50+rand.IntN(150)) * time.Millisecond)
			}
		}()
	}
	subsDone := make(chan struct{})
	go func() { wg.Wait(); close(subsDone) }()

	// The killer: the leader dies at a random moment, at least five times.
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 25))
	var takeovers []time.Duration
	cur, tok := rs.leader(-1, 0, 5*time.Second)
	for kills := 0; kills < 5 || (kills < 8 && !closed(subsDone)); kills++ {
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
		fmt.Printf("replica takeover %d: %s (tick %s)\n", kills+1, d.Round(time.Millisecond), replicaTick)
		rs.start(cur) // back as a follower
		if h, ok := rs.health(cur); !ok || h.Role != "follower" {
			t.Errorf("the restarted replica %d is %+v, want a follower", cur, h)
		}
		cur, tok = next, ntok
	}
	select {
	case <-subsDone:
	case <-time.After(120 * time.Second):
		t.Fatal("the submitters did not finish within 120s")
	}

	// Every task ends.
	c, err := client.New(strings.Join(urls, ","), token)
	if err != nil {
		t.Fatal(err)
	}
	var tasks []client.TaskSummary
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		tasks, err = c.Tasks(ctx, nil, 1000)
		cancel()
		open := 0
		for _, x := range tasks {
			if !finalState(string(x.State)) {
				open++
			}
		}
		if err == nil && open == 0 && len(tasks) >= total {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	byName := map[string][]client.TaskSummary{}
	for _, x := range tasks {
		byName[x.Name] = append(byName[x.Name], x)
	}
	ran := readSide(t, side)
	jobs := simJobsByTag(t, simDir)
	for i := range total {
		l := fmt.Sprintf("rep%03d", i)
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
	worst := time.Duration(0)
	for _, d := range takeovers {
		worst = max(worst, d)
	}
	t.Logf("takeovers after SIGKILL: %v (worst %s, tick %s); %d submit retries", takeovers, worst.Round(time.Millisecond), replicaTick, len(submitErrs))
	fmt.Printf("replica takeovers: worst %s over %d kills (tick %s)\n", worst.Round(time.Millisecond), len(takeovers), replicaTick)
	// Two ticks, plus the time this test needs to see it (health polls every 20ms
	// on a loaded machine).
	if worst > 2*replicaTick+250*time.Millisecond {
		t.Errorf("worst takeover %s, want within two ticks (%s)", worst, 2*replicaTick)
	}
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
