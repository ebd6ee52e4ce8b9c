package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// These tests drive the built binary against the real two-cluster Slurm rig
// (scripts/testrig/up.sh), reached over the rig's sshd like a user's login nodes.

type rig struct {
	t   *testing.T
	env rigenv.Env
}

func needRig(t *testing.T) *rig {
	t.Helper()
	return &rig{t: t, env: rigenv.Require(t)}
}

func (r *rig) sites() string {
	r.t.Helper()
	var b strings.Builder
	b.WriteString("systems:\n")
	for _, c := range []string{"alpha", "beta"} {
		up := strings.ToUpper(c)
		fmt.Fprintf(&b, `  - name: %s
    kind: ssh
    host: %s
    ssh: {config_file: %s}
    accounts: [%s]
    workdir: %s
`, c, r.env.Get(r.t, "RIG_SSH_HOST_"+up), r.env.Get(r.t, "RIG_SSH_CONFIG"), r.env.Get(r.t, "RIG_ACCOUNT"), r.env.Get(r.t, "RIG_WORKDIR_"+up))
	}
	p := filepath.Join(r.t.TempDir(), "sites.yaml")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// slurm runs a Slurm client command against one cluster.
func (r *rig) slurm(cluster string, args ...string) string {
	r.t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "SLURM_CONF="+r.env.Get(r.t, "SLURM_CONF_"+strings.ToUpper(cluster)))
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("%s on %s: %v\n%s", strings.Join(args, " "), cluster, err, out)
	}
	return string(out)
}

// queued lists the job names in a cluster's queue that start with prefix.
func (r *rig) queued(cluster, prefix string) []string {
	var out []string
	for _, l := range strings.Split(r.slurm(cluster, "squeue", "-h", "-t", "PD,R,CG,S", "-o", "%j"), "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, prefix) {
			out = append(out, l)
		}
	}
	return out
}

// block fills a cluster's node (all CPUs) so new jobs queue; it returns the job id.
func (r *rig) block(cluster string) string {
	out := r.slurm(cluster, "sbatch", "--parsable", "-J", "rig-blocker", "-A", r.env.Get(r.t, "RIG_ACCOUNT"), "-p", "cpu",
		"-c", r.env.Get(r.t, "RIG_NODE_CPUS"), "--gres=gpu:"+r.env.Get(r.t, "RIG_GPUS_PER_NODE"), "-t", "30", "-o", "/dev/null", "--wrap", "sleep 600")
	id := strings.TrimSpace(strings.Split(out, ";")[0])
	conf := r.env.Get(r.t, "SLURM_CONF_"+strings.ToUpper(cluster))
	r.t.Cleanup(func() {
		c := exec.Command("scancel", id)
		c.Env = append(os.Environ(), "SLURM_CONF="+conf)
		c.Run()
	})
	// wait until it runs
	for i := 0; i < 600; i++ { // other jobs may still hold the node: up to 60 s
		if st := strings.TrimSpace(r.slurm(cluster, "squeue", "-h", "-j", id, "-o", "%T")); st == "RUNNING" {
			return id
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.t.Fatalf("blocker %s on %s never started", id, cluster)
	return ""
}

func (r *rig) ctldPid(cluster string) int {
	b, err := os.ReadFile(filepath.Join(r.env.Get(r.t, "RIG_DIR"), cluster, "run", "slurmctld.pid"))
	if err != nil {
		r.t.Fatal(err)
	}
	var pid int
	fmt.Sscan(string(b), &pid)
	return pid
}

func (r *rig) stopCtld(cluster string) {
	r.t.Helper()
	pid := r.ctldPid(cluster)
	syscall.Kill(pid, syscall.SIGTERM)
	for i := 0; i < 100; i++ {
		if syscall.Kill(pid, 0) != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	r.t.Fatalf("slurmctld of %s did not stop", cluster)
}

func (r *rig) startCtld(cluster string) {
	r.t.Helper()
	conf := r.env.Get(r.t, "SLURM_CONF_"+strings.ToUpper(cluster))
	if out, err := exec.Command("slurmctld", "-f", conf).CombinedOutput(); err != nil {
		r.t.Fatalf("restart slurmctld of %s: %v %s", cluster, err, out)
	}
	for i := 0; i < 150; i++ {
		cmd := exec.Command("scontrol", "ping")
		cmd.Env = append(os.Environ(), "SLURM_CONF="+conf)
		if out, _ := cmd.CombinedOutput(); strings.Contains(string(out), "UP") {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	r.t.Fatalf("slurmctld of %s did not come back", cluster)
}

type taskJSON struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	State    string `json:"state"`
	Reason   string `json:"reason"`
	Attempts []struct {
		N      int    `json:"n"`
		Tag    string `json:"tag"`
		System string `json:"system"`
		JobID  string `json:"job_id"`
		State  string `json:"state"`
	} `json:"attempts"`
}

func (e *env) task(id string) taskJSON {
	e.t.Helper()
	out, errOut, rc := e.run("task", id, "--json")
	if rc != 0 {
		e.t.Fatalf("task %s: %s", id, errOut)
	}
	var t taskJSON
	if err := json.Unmarshal([]byte(out), &t); err != nil {
		e.t.Fatal(err)
	}
	return t
}

func (e *env) waitTask(id string, limit time.Duration, done func(taskJSON) bool) taskJSON {
	e.t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		t := e.task(id)
		if done(t) {
			return t
		}
		time.Sleep(500 * time.Millisecond)
	}
	out, _, _ := e.run("task", id)
	e.t.Fatalf("task %s: condition not met within %s\n%s", id, limit, out)
	return taskJSON{}
}

func final(t taskJSON) bool {
	return t.State == "succeeded" || t.State == "failed" || t.State == "cancelled"
}

func submitID(t *testing.T, e *env, args ...string) string {
	t.Helper()
	out, errOut, rc := e.run(append([]string{"submit", "--json=task"}, args...)...)
	if rc != 0 {
		t.Fatalf("submit: %s", errOut)
	}
	var res struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Task.ID == "" {
		t.Fatalf("submit output %q: %v", out, err)
	}
	return res.Task.ID
}

func TestRigFailedAttemptRunsAgain(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	e.serve("--sites", r.sites(), "--tick", "1s")
	marker := filepath.Join(t.TempDir(), "marker")
	id := submitID(t, e, "--name", "second-time-lucky", "--cpus", "1", "--walltime", "5m",
		"--command", fmt.Sprintf("if [ -f %s ]; then echo ok; else touch %s; exit 4; fi", marker, marker))
	task := e.waitTask(id, 90*time.Second, final)
	if task.State != "succeeded" || len(task.Attempts) != 2 || task.Attempts[0].State != "failed" {
		t.Fatalf("want failed then succeeded: %+v", task)
	}
	out, _, _ := e.run("logs", id)
	if !strings.Contains(out, "ok") {
		t.Fatalf("logs of the second attempt: %s", out)
	}
}

func TestRigSlurmctldDownMigratesPendingWork(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	// Both clusters full: the task queues on whichever the scheduler picks.
	blockers := map[string]string{"alpha": r.block("alpha"), "beta": r.block("beta")}
	e.serve("--sites", r.sites(), "--tick", "1s")
	time.Sleep(1500 * time.Millisecond) // a probe that sees the blockers
	id := submitID(t, e, "--name", "mover", "--cpus", "1", "--walltime", "5m", "--command", "echo moved")
	task := e.waitTask(id, 30*time.Second, func(t taskJSON) bool { return len(t.Attempts) > 0 && t.Attempts[0].JobID != "" })
	first := task.Attempts[0].System
	other := map[string]string{"alpha": "beta", "beta": "alpha"}[first]
	// Free the other cluster, then take the first one's controller away.
	r.slurm(other, "scancel", blockers[other])
	r.stopCtld(first)
	defer r.startCtld(first)
	task = e.waitTask(id, 120*time.Second, final)
	if task.State != "succeeded" {
		t.Fatalf("task %s: %s", task.State, task.Reason)
	}
	last := task.Attempts[len(task.Attempts)-1]
	if last.System != other {
		t.Fatalf("finished on %s, want %s: %+v", last.System, other, task.Attempts)
	}
	evs, _, _ := e.run("events", "--task", id)
	if !strings.Contains(evs, "migrate pending job") {
		t.Fatalf("no migration event:\n%s", evs)
	}
	// When the controller is back, the old pending job is cancelled (the monitor keeps
	// asking), so nothing of this task is left in either queue.
	r.startCtld(first)
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if len(r.queued(first, "mosaic-"+id)) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
	evs, _, _ = e.run("events", "--task", id)
	t.Fatalf("old job of task %s still queued on %s: %v\n%s", id, first, r.queued(first, "mosaic-"+id), evs)
}

func TestRigCancelLeavesNothingQueued(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	e.serve("--sites", r.sites(), "--tick", "1s")
	var ids []string
	for i := 0; i < 4; i++ {
		ids = append(ids, submitID(t, e, "--name", fmt.Sprintf("long%d", i), "--cpus", "1", "--walltime", "10m", "--command", "sleep 300"))
	}
	for _, id := range ids {
		e.waitTask(id, 60*time.Second, func(t taskJSON) bool { return t.State == "running" || t.State == "queued" })
	}
	for _, id := range ids {
		if _, errOut, rc := e.run("cancel", id); rc != 0 {
			t.Fatalf("cancel %s: %s", id, errOut)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		left := 0
		for _, id := range ids {
			left += len(r.queued("alpha", "mosaic-"+id)) + len(r.queued("beta", "mosaic-"+id))
		}
		if left == 0 {
			for _, id := range ids {
				if st := e.task(id).State; st != "cancelled" {
					t.Fatalf("task %s is %s", id, st)
				}
			}
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatal("cancelled tasks still have jobs queued")
}

// TestRigCrashRecovery kills the core with SIGKILL at random points (at least four
// times) while 50 tasks are being submitted and run, restarts it, and checks that
// every task reaches a final state with exactly one batch job per attempt — no
// duplicates, none orphaned — and, from a side-effect file every command appends
// to, that each command ran exactly once.
func TestRigCrashRecovery(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	sites := r.sites()
	// The rig's jobs run on this machine, so they can append to a file of the test's.
	side := filepath.Join(t.TempDir(), "side-effects")
	if err := os.WriteFile(side, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	start := time.Now()

	serve := e.serve("--sites", sites, "--tick", "1s")
	type result struct{ id string }
	submitted := make(chan result, 100)
	go func() {
		defer close(submitted)
		for i := 0; i < 50; i++ {
			for try := 0; try < 40; try++ { // the core may be down: retry (bounded)
				// Each try has its own name: a try whose answer was lost may still have
				// made a task, and that task's run is not the same command run twice.
				name := fmt.Sprintf("crash%02d-%02d", i, try)
				out, _, rc := e.run("submit", "--json=task", "--name", name, "--cpus", "1",
					"--walltime", "5m", "--command", fmt.Sprintf("echo %s job=$SLURM_JOB_ID restarts=${SLURM_RESTART_COUNT:-0} host=$(hostname) >> %s; sleep %d", name, side, 1+i%3))
				if rc == 0 {
					var res struct {
						Task struct{ ID string } `json:"task"`
					}
					json.Unmarshal([]byte(out), &res)
					submitted <- result{res.Task.ID}
					break
				}
				time.Sleep(250 * time.Millisecond)
			}
		}
	}()
	// Four or five SIGKILLs at random moments, each followed by a restart.
	kills := 4 + rng.IntN(2)
	for k := 0; k < kills; k++ {
		time.Sleep(time.Duration(300+rng.IntN(2500)) * time.Millisecond)
		serve.Process.Signal(syscall.SIGKILL)
		serve.Wait()
		t.Logf("killed the core at %s", time.Since(start).Round(time.Millisecond))
		time.Sleep(time.Duration(rng.IntN(500)) * time.Millisecond)
		serve = e.serve("--sites", sites, "--tick", "1s")
	}
	var acked []string
	for res := range submitted {
		acked = append(acked, res.id)
	}
	// Every task the core knows of (acknowledged or not) must end.
	deadline := time.Now().Add(4 * time.Minute)
	var tasks []taskJSON
	for time.Now().Before(deadline) {
		out, _, rc := e.run("tasks", "--json=id,state")
		if rc != 0 {
			time.Sleep(time.Second)
			continue
		}
		var list []taskJSON
		json.Unmarshal([]byte(out), &list)
		open := 0
		for _, x := range list {
			if !final(x) {
				open++
			}
		}
		if open == 0 && len(list) >= len(acked) {
			for _, x := range list {
				tasks = append(tasks, e.task(x.ID))
			}
			break
		}
		time.Sleep(time.Second)
	}
	if tasks == nil {
		out, _, _ := e.run("tasks")
		t.Fatalf("not every task reached a final state:\n%s", out)
	}
	if len(tasks) < 50 {
		t.Fatalf("only %d tasks recorded; 50 were submitted", len(tasks))
	}
	for _, id := range acked {
		found := false
		for _, x := range tasks {
			found = found || x.ID == id
		}
		if !found {
			t.Fatalf("acknowledged task %s was lost", id)
		}
	}
	// Exactly one batch job per attempt: every job of these tasks at either site belongs
	// to a recorded attempt, and no attempt has two jobs. Accounting lags a little (a
	// just-finished job is briefly named "allocation" in sacct), so poll, bounded.
	since := start.Add(-5 * time.Second).Format("2006-01-02T15:04:05")
	ours := map[string]bool{}
	attempts := map[string]string{}
	// Each command ran exactly once: one line per task in the side-effect file, and
	// no line from a command no task owns.
	b, err := os.ReadFile(side)
	if err != nil {
		t.Fatal(err)
	}
	ran := sideEffects(string(b))
	names := map[string]bool{}
	for _, x := range tasks {
		names[x.Name] = true
		if n := ran[x.Name]; n != 1 && x.State == "succeeded" {
			var lines []string
			for _, l := range strings.Split(string(b), "\n") {
				if strings.HasPrefix(l, x.Name+" ") {
					lines = append(lines, l)
				}
			}
			detail, _, _ := e.run("task", x.ID)
			t.Errorf("task %s (%s) succeeded but its command ran %d times, want once: %q\n%s", x.ID, x.Name, n, lines, detail)
		}
	}
	for name, n := range ran {
		if !names[name] {
			t.Errorf("command %s ran %d times but no task owns it", name, n)
		}
	}
	for _, x := range tasks {
		ours[x.ID] = true
		if x.State != "succeeded" {
			t.Errorf("task %s ended %s: %s", x.ID, x.State, x.Reason)
		}
		for _, a := range x.Attempts {
			if a.JobID != "" {
				attempts[a.Tag] = a.System + ":" + a.JobID
			}
		}
	}
	for _, p := range r.jobsPerAttempt(since, attempts, ours) {
		t.Error(p)
	}
}

// jobsPerAttempt checks sacct on both clusters since the given time: every attempt
// (tag -> cluster:job) has exactly its one job, and no job of our tasks (by task id)
// belongs to no attempt. Accounting lags a little (a just-finished job is briefly
// named "allocation"), so it polls, bounded (about a minute); it returns the
// problems left.
func (r *rig) jobsPerAttempt(since string, attempts map[string]string, ours map[string]bool) []string {
	var problems []string
	for try := 0; try < 30; try++ {
		jobsByTag := map[string][]string{}
		for _, c := range []string{"alpha", "beta"} {
			out := r.slurm(c, "sacct", "-X", "-n", "-P", "-S", since, "-o", "JobID,JobName")
			for _, l := range strings.Split(out, "\n") {
				id, name, ok := strings.Cut(strings.TrimSpace(l), "|")
				if ok && strings.HasPrefix(name, "mosaic-") {
					jobsByTag[name] = append(jobsByTag[name], c+":"+id)
				}
			}
		}
		problems = problems[:0]
		for tag, want := range attempts {
			if jobs := jobsByTag[tag]; len(jobs) != 1 || jobs[0] != want {
				problems = append(problems, fmt.Sprintf("attempt %s (job %s): site has %v", tag, want, jobs))
			}
		}
		for tag, jobs := range jobsByTag {
			parts := strings.Split(tag, "-") // mosaic-<task>-<n>
			if len(parts) == 3 && ours[parts[1]] {
				if _, ok := attempts[tag]; !ok {
					problems = append(problems, fmt.Sprintf("orphaned job(s) %v with tag %s belong to no attempt", jobs, tag))
				}
			}
		}
		if len(problems) == 0 {
			return nil
		}
		time.Sleep(2 * time.Second)
	}
	return problems
}
