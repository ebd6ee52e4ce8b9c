package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestSecondCoreOnSameStoreRefuses: a second `mosaic serve` on the same MOSAIC_DB (on
// another port) exits non-zero naming the first core's PID and address and what to
// do; once the first is killed with SIGKILL (its lock file left behind), a new core
// starts on the store.
func TestSecondCoreOnSameStoreRefuses(t *testing.T) {
	e := newEnv(t)
	first := e.serve("--headless")

	other := freeAddr(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, "serve", "--headless", "--addr", other)
	cmd.Env, cmd.Dir = e.vars, e.home
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("the second core did not exit within 60s (it should refuse the store):\n%s", out.String())
	}
	if err == nil {
		t.Fatalf("the second core on the same store exited 0:\n%s", out.String())
	}
	msg := out.String()
	for _, want := range []string{"in use by another Mosaic core", "PID " + strconv.Itoa(first.Process.Pid), e.addr, "MOSAIC_DB"} {
		if !strings.Contains(msg, want) {
			t.Errorf("second core's output does not mention %q:\n%s", want, msg)
		}
	}
	if code, _ := httpGet("http://"+other+"/healthz", ""); code == 200 {
		t.Errorf("the refused core is serving on %s", other)
	}
	if code, _ := httpGet("http://"+e.addr+"/healthz", ""); code != 200 {
		t.Errorf("the first core stopped answering (%d) after the second was refused", code)
	}

	// kill -9: no cleanup; the kernel drops the flock, the lock file stays.
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = first.Process.Wait()
	e2 := *e
	e2.addr = other
	e2.serve("--headless") // fails the test if it does not become healthy
}

// sideEffects counts lines per task label in the side-effect file.
func sideEffects(text string) map[string]int {
	n := map[string]int{}
	for _, l := range strings.Split(text, "\n") {
		if f := strings.Fields(l); len(f) > 0 {
			n[f[0]]++
		}
	}
	return n
}

// simCrashSites is a small catalog of two idle simulated systems, so jobs start at
// once and the test is about the restart, not the queue.
const simCrashSites = `sim:
  speed: 60
  seed: 3
systems:
  - name: Alpha
    kind: sim
    accounts: [acct]
    arch: x86_64
    partitions:
      - {name: cpu, nodes: 4, cpu_cores: 16, memory_gb: 64, max_walltime: 4h}
    sim:
      load: {utilization: 0}
  - name: Beta
    kind: sim
    accounts: [acct]
    arch: x86_64
    partitions:
      - {name: cpu, nodes: 4, cpu_cores: 16, memory_gb: 64, max_walltime: 4h}
    sim:
      load: {utilization: 0}
`

// TestSimCrashRunsEachCommandOnce kills the core with SIGKILL while simulated jobs run
// (their processes live on) and again while tasks are being submitted, restarts it
// each time, and checks from a side-effect file that every command ran exactly once,
// every task succeeded with one attempt, and the restarted core settled them at once
// (not after a lost-job grace of minutes).
func TestSimCrashRunsEachCommandOnce(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.yaml")
	if err := os.WriteFile(sites, []byte(simCrashSites), 0o600); err != nil {
		t.Fatal(err)
	}
	side := filepath.Join(dir, "side")
	args := []string{"--headless", "--sites", sites, "--tick", "500ms"}
	serve := e.serve(args...)
	submit := func(label string, sleep int) (string, bool) {
		out, _, rc := e.run("submit", "--json=task", "--name", label, "--cpus", "1", "--walltime", "30m",
			"--command", fmt.Sprintf("echo %s >> %s; sleep %d", label, side, sleep))
		if rc != 0 {
			return "", false
		}
		var res struct {
			Task struct{ ID string } `json:"task"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || res.Task.ID == "" {
			return "", false
		}
		return res.Task.ID, true
	}
	labels := map[string]string{} // task id -> label
	// Phase 1: six tasks start; the core dies while their processes run.
	for i := range 6 {
		l := fmt.Sprintf("run%02d", i)
		id, ok := submit(l, 6)
		if !ok {
			t.Fatalf("submit %s failed", l)
		}
		labels[id] = l
	}
	for range 200 { // until every command has started (bounded: 20 s)
		if b, _ := os.ReadFile(side); len(sideEffects(string(b))) == 6 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if b, _ := os.ReadFile(side); len(sideEffects(string(b))) != 6 {
		t.Fatalf("the six commands did not all start: %q", b)
	}
	kill := func() {
		t.Helper()
		if err := serve.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_, _ = serve.Process.Wait()
	}
	kill()
	restarted := time.Now()
	serve = e.serve(args...)
	// The jobs outlived the core; the new one follows them to the end (6 s of sleep)
	// instead of calling them lost after minutes and running them again.
	for id := range labels {
		task := e.waitTask(id, 40*time.Second, final)
		if task.State != "succeeded" || len(task.Attempts) != 1 {
			t.Errorf("task %s (%s) after the restart: %s with %d attempts (%s)", id, labels[id], task.State, len(task.Attempts), task.Reason)
		}
	}
	if d := time.Since(restarted); d > 30*time.Second {
		t.Errorf("the restarted core took %s to settle jobs that ended 6 s after their start", d.Round(time.Second))
	}

	// Phase 2: kill the core at a random moment while tasks are being submitted.
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	type acked struct{ id, label string }
	acks := make(chan acked, 20)
	go func() {
		defer close(acks)
		for i := range 8 {
			for try := range 60 { // the core may be down: retry, bounded
				// A try whose answer was lost may still have made a task: each try
				// has its own label, so a retried submit is not a command run twice.
				l := fmt.Sprintf("sub%02d-%02d", i, try)
				if id, ok := submit(l, 2); ok {
					acks <- acked{id, l}
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
	}()
	time.Sleep(time.Duration(200+rng.IntN(1500)) * time.Millisecond)
	kill()
	serve = e.serve(args...)
	for a := range acks {
		labels[a.id] = a.label
	}
	// Every task the core knows (acknowledged or not) ends, each with one job.
	deadline := time.Now().Add(60 * time.Second)
	var list []taskJSON
	for time.Now().Before(deadline) {
		out, _, rc := e.run("tasks", "--json=id,state")
		list = nil
		if rc == 0 && json.Unmarshal([]byte(out), &list) == nil {
			open := 0
			for _, x := range list {
				if !final(x) {
					open++
				}
			}
			if open == 0 && len(list) >= len(labels) {
				break
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	b, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	ran := sideEffects(string(b))
	for id, l := range labels {
		task := e.task(id)
		if task.State != "succeeded" {
			out, _, _ := e.run("task", id)
			t.Errorf("task %s (%s) ended %s:\n%s", id, l, task.State, out)
		}
		if ran[l] != 1 {
			t.Errorf("command of task %s (%s) ran %d times, want once", id, l, ran[l])
		}
		jobs := 0
		for _, a := range task.Attempts {
			if a.JobID != "" {
				jobs++
			}
		}
		if jobs != 1 {
			t.Errorf("task %s (%s) has %d jobs over %d attempts, want one", id, l, jobs, len(task.Attempts))
		}
	}
	for l, n := range ran {
		if n != 1 {
			t.Errorf("%s ran %d times", l, n)
		}
	}
	if len(list) < 14 {
		t.Errorf("only %d tasks recorded, want the 14 acknowledged", len(list))
	}
}
