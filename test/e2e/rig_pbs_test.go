package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// The three-site federation: the rig's two Slurm clusters and its OpenPBS complex
// (scripts/testrig/pbs.sh), one catalog, one rule chain.

func needPBSRig(t *testing.T) *rig {
	t.Helper()
	return &rig{t: t, env: rigenv.RequirePBS(t)}
}

// sitesWithPBS is sites() plus the PBS complex as system "pbs".
func (r *rig) sitesWithPBS() string {
	r.t.Helper()
	b, err := os.ReadFile(r.sites())
	if err != nil {
		r.t.Fatal(err)
	}
	s := string(b) + fmt.Sprintf(`  - name: pbs
    kind: ssh
    dialect: pbs
    host: %s
    ssh: {config_file: %s}
    accounts: [%s]
    workdir: %s
`, r.env.Get(r.t, "RIG_SSH_HOST_PBS"), r.env.Get(r.t, "RIG_SSH_CONFIG"), r.env.Get(r.t, "RIG_ACCOUNT"), r.env.Get(r.t, "RIG_PBS_WORKDIR"))
	p := filepath.Join(r.t.TempDir(), "sites3.yaml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// pbs runs a PBS client command as the rig's PBS user (over its sshd, as Mosaic does).
func (r *rig) pbs(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("ssh", append([]string{"-F", r.env.Get(r.t, "RIG_SSH_CONFIG"), r.env.Get(r.t, "RIG_SSH_HOST_PBS")}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("%s on pbs: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// blockPBS fills the PBS node's CPUs with a long job; it returns the job id.
func (r *rig) blockPBS(wall string) string {
	r.t.Helper()
	id := strings.TrimSpace(r.pbs("cd", r.env.Get(r.t, "RIG_PBS_WORKDIR"), "&&", "qsub", "-N", "rig-blocker", "-j", "oe", "-o", "/dev/null",
		"-l", "select=1:ncpus="+r.env.Get(r.t, "RIG_PBS_NODE_CPUS"), "-l", "walltime="+wall, "--", "/bin/sleep", "3000"))
	r.t.Cleanup(func() {
		exec.Command("ssh", "-F", r.env.Get(r.t, "RIG_SSH_CONFIG"), r.env.Get(r.t, "RIG_SSH_HOST_PBS"), "qdel", "-W", "force", id).Run()
	})
	for range 120 {
		if strings.Contains(r.pbs("qstat", "-f", id), "job_state = R") {
			return id
		}
		time.Sleep(500 * time.Millisecond)
	}
	r.t.Fatalf("PBS blocker %s never started", id)
	return ""
}

// pbsQueued lists the rig user's live PBS job names starting with prefix.
func (r *rig) pbsQueued(prefix string) []string {
	var out []string
	for _, l := range strings.Split(r.pbs("qstat", "-f"), "\n") {
		l = strings.TrimSpace(l)
		if name, ok := strings.CutPrefix(l, "Job_Name = "); ok && strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	return out
}

// sharedBinary copies the built binary where the PBS login user (not root) can run it:
// the Slurm logins are root's and run the test's own copy, the PBS one is not.
func (r *rig) sharedBinary() string {
	r.t.Helper()
	dir, err := os.MkdirTemp("/tmp", "mosaic-e2e-bin-")
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { os.RemoveAll(dir) })
	data, err := os.ReadFile(binary)
	if err != nil {
		r.t.Fatal(err)
	}
	p := filepath.Join(dir, "mosaic")
	if err := os.WriteFile(p, data, 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		r.t.Fatal(err)
	}
	return p
}

// TestRigThreeSiteFederation: 20 tasks over alpha, beta and pbs, placed by one
// scheduler; each site gets some, every task ends succeeded with its output.
func TestRigThreeSiteFederation(t *testing.T) {
	r := needPBSRig(t)
	e := newEnv(t)
	e.serve("--sites", r.sitesWithPBS(), "--tick", "1s")
	out, errOut, rc := e.run("status")
	if rc != 0 || !strings.Contains(out, "pbs") {
		t.Fatalf("status: %s %s", out, errOut)
	}
	var ids []string
	for i := range 20 {
		// 24 cores for 20 s: two fit a 64-core node, so the work spreads as queues fill.
		ids = append(ids, submitID(t, e, "--name", fmt.Sprintf("fed%02d", i), "--cpus", "24", "--walltime", "5m",
			"--command", fmt.Sprintf("sleep 20; echo done-%02d", i)))
		if i%4 == 3 {
			time.Sleep(1500 * time.Millisecond) // a probe that sees what was placed
		}
	}
	per := map[string]int{}
	for _, id := range ids {
		task := e.waitTask(id, 6*time.Minute, final)
		if task.State != "succeeded" {
			t.Errorf("task %s: %s (%s)", id, task.State, task.Reason)
			continue
		}
		per[task.Attempts[len(task.Attempts)-1].System]++
	}
	t.Logf("tasks per system: %v", per)
	for _, s := range []string{"alpha", "beta", "pbs"} {
		if per[s] == 0 {
			t.Errorf("no task ran on %s: %v", s, per)
		}
	}
	for _, id := range ids[:3] {
		out, _, _ := e.run("logs", id)
		if !strings.Contains(out, "done-") {
			t.Errorf("logs of %s: %s", id, out)
		}
	}
}

// TestRigSlurmDownMigratesToPBS: every site full; a task waits on a Slurm cluster;
// that cluster's controller stops while PBS frees up: the task moves to PBS and
// finishes there, and nothing of it is left queued anywhere.
func TestRigSlurmDownMigratesToPBS(t *testing.T) {
	r := needPBSRig(t)
	e := newEnv(t)
	r.block("alpha")
	r.block("beta")
	pbsBlocker := r.blockPBS("20:00:00")
	// A job waiting behind it in each queue (both queues share the node): PBS offers no
	// start estimate, and Mosaic's per-queue model then sees a longer line than Slurm's
	// 30-minute --test-only answer.
	var waiting []string
	for _, q := range []string{"workq", "gpu"} {
		id := strings.TrimSpace(r.pbs("cd", r.env.Get(t, "RIG_PBS_WORKDIR"), "&&", "qsub", "-q", q, "-N", "rig-waiter", "-j", "oe", "-o", "/dev/null",
			"-l", "select=1:ncpus="+r.env.Get(t, "RIG_PBS_NODE_CPUS"), "-l", "walltime=04:00:00", "--", "/bin/sleep", "3000"))
		waiting = append(waiting, id)
		t.Cleanup(func() {
			exec.Command("ssh", "-F", r.env.Get(t, "RIG_SSH_CONFIG"), r.env.Get(t, "RIG_SSH_HOST_PBS"), "qdel", "-W", "force", id).Run()
		})
	}
	e.serve("--sites", r.sitesWithPBS(), "--tick", "1s")
	time.Sleep(1500 * time.Millisecond)
	id := submitID(t, e, "--name", "to-pbs", "--cpus", "1", "--walltime", "5m", "--command", "echo moved-to-pbs")
	task := e.waitTask(id, 30*time.Second, func(t taskJSON) bool { return len(t.Attempts) > 0 && t.Attempts[0].JobID != "" })
	first := task.Attempts[0].System
	if first == "pbs" {
		t.Fatalf("the task queued on pbs behind two 20 h jobs; want a Slurm cluster: %+v", task.Attempts)
	}
	r.pbs(append([]string{"qdel", pbsBlocker}, waiting...)...)
	r.stopCtld(first)
	defer r.startCtld(first)
	task = e.waitTask(id, 150*time.Second, final)
	last := task.Attempts[len(task.Attempts)-1]
	if task.State != "succeeded" || last.System != "pbs" {
		evs, _, _ := e.run("events", "--task", id)
		t.Fatalf("task %s on %s, want succeeded on pbs: %+v\n%s", task.State, last.System, task.Attempts, evs)
	}
	out, _, _ := e.run("logs", id)
	if !strings.Contains(out, "moved-to-pbs") {
		t.Errorf("logs: %s", out)
	}
	r.startCtld(first)
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		if len(r.queued(first, "mosaic-"+id)) == 0 && len(r.pbsQueued("mosaic-"+id)) == 0 {
			return
		}
		time.Sleep(time.Second)
	}
	t.Fatalf("jobs of task %s still queued: %s %v, pbs %v", id, first, r.queued(first, "mosaic-"+id), r.pbsQueued("mosaic-"+id))
}

// TestRigCampaignPBSSubmitSlurmAttach: the example campaign with its coordinator in a
// PBS job (submit mode: qsub through the engine) and its workers attached to an
// allocation on Slurm beta; bootstrap delivered, every agent reports, and the PBS job
// ends (nothing left in qstat).
func TestRigCampaignPBSSubmitSlurmAttach(t *testing.T) {
	r := needPBSRig(t)
	e := newEnv(t)
	l, run, node, _ := launchPBSSubmitBetaAttach(t, r, e, "pbs", "--auto-bootstrap")
	l.waitFor("all 2 sites ready", 150*time.Second)
	if err := l.wait(120 * time.Second); err != nil {
		t.Fatalf("launch failed: %v\n%s", err, l.output())
	}
	out := l.output()
	t.Logf("launch output:\n%s", out)
	for _, want := range []string{"submitted job", "attached to " + node, "bootstrap: sent the user task to coordinator", "run " + run + " finished"} {
		if !strings.Contains(out, want) {
			t.Errorf("launch output lacks %q", want)
		}
	}
	if left := r.pbsQueued("mosaic-c-" + run); len(left) > 0 {
		t.Errorf("PBS jobs of the run still queued: %v", left)
	}
}

// pbsAllocation opens a "sleep" job on the PBS complex, as a user would before
// attaching; it returns the job id and its node.
func (r *rig) pbsAllocation() (jobID, node string) {
	r.t.Helper()
	jobID = strings.TrimSpace(r.pbs("cd", r.env.Get(r.t, "RIG_PBS_WORKDIR"), "&&", "qsub", "-N", "e2e-alloc", "-j", "oe", "-o", "/dev/null",
		"-l", "walltime=00:20:00", "--", "/bin/sleep", "1200"))
	r.t.Cleanup(func() {
		exec.Command("ssh", "-F", r.env.Get(r.t, "RIG_SSH_CONFIG"), r.env.Get(r.t, "RIG_SSH_HOST_PBS"), "qdel", "-W", "force", jobID).Run()
	})
	for range 120 {
		if strings.Contains(r.pbs("qstat", "-f", jobID), "job_state = R") {
			return jobID, r.env.Get(r.t, "RIG_PBS_NODE")
		}
		time.Sleep(500 * time.Millisecond)
	}
	r.t.Fatalf("PBS allocation %s never started", jobID)
	return "", ""
}

// TestRigCampaignAttachPBSInterrupt: workers attached to a PBS job (jobid=: the agents
// see PBS_JOBID and PBS_NODEFILE), the coordinator in a new PBS job (submit mode);
// SIGINT to the launcher leaves no job of the run in qstat (history shows it ended) and
// the user's own allocation still running.
func TestRigCampaignAttachPBSInterrupt(t *testing.T) {
	r := needPBSRig(t)
	e := newEnv(t)
	job, node := r.pbsAllocation()
	run := fmt.Sprintf("e2e-pbsint-%d", time.Now().UnixNano()%1e9)
	l := startLaunch(t, e, "--campaign", exampleCampaign(t), "--run-id", run, "--sites", r.sitesWithPBS(), "--mosaic-bin", r.sharedBinary(),
		"--site", "pbs:attach="+node+";jobid="+job+";agents=worker-a,worker-b",
		"--site", "alpha:queue=cpu;walltime=00:10:00;agents=coordinator",
		"--startup-timeout", "120s")
	l.waitFor("all 2 sites ready", 150*time.Second)
	out := l.output()
	if !strings.Contains(out, "pbs: attached to "+node) {
		t.Fatalf("launch output lacks the PBS attach:\n%s", out)
	}
	// The attached agents run in the job's context.
	envOut := r.pbs("sh", "-c", "'for p in $(pgrep -u mosaicpbs -f \"[c]ampaign spawn-site\"); do tr \"\\0\" \"\\n\" </proc/$p/environ | grep ^PBS_; done | sort -u'")
	if !strings.Contains(envOut, "PBS_JOBID="+job) || !strings.Contains(envOut, "PBS_NODEFILE=") {
		t.Errorf("attached agents' PBS_JOBID: %q, want %s\n%s", envOut, job, r.pbs("ps", "-u", "mosaicpbs", "-o", "pid,ppid,args"))
	}
	if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := l.wait(90 * time.Second); err == nil {
		t.Errorf("interrupted launch exited 0\n%s", l.output())
	}
	prefix := "mosaic-c-" + run
	var left []string
	for range 40 {
		left = append(r.pbsQueued(prefix), r.queued("alpha", prefix)...)
		// "[e]2e-…": the pattern does not match the shell running pgrep itself.
		if ps := strings.TrimSpace(r.pbs("sh", "-c", "'pgrep -u mosaicpbs -f \"["+run[:1]+"]"+run[1:]+"\" || true'")); ps != "" {
			left = append(left, "processes "+ps)
		}
		if len(left) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("left behind after SIGINT: %v\n%s\n%s", left, l.output(), r.pbs("ps", "-u", "mosaicpbs", "-o", "pid,ppid,args"))
	}
	if !strings.Contains(r.pbs("qstat", "-f", job), "job_state = R") {
		t.Errorf("the user's allocation %s is no longer running; attach must not end it", job)
	}
}

// TestRigPBSSiteTools: preflight, smoke and look-around against the PBS site, through
// the built binary as a user runs them.
func TestRigPBSSiteTools(t *testing.T) {
	r := needPBSRig(t)
	e := newEnv(t)
	sites := r.sitesWithPBS()
	out, errOut, rc := e.run("preflight", "--sites", sites)
	if rc != 0 || !strings.Contains(out, "pbs 23.06") || strings.Count(out, " ok ") < 6 {
		t.Fatalf("preflight rc=%d\n%s%s", rc, out, errOut)
	}
	out, errOut, rc = e.run("smoke", "pbs", "--sites", sites, "--json")
	if rc != 0 {
		t.Fatalf("smoke pbs rc=%d %s\n%s", rc, errOut, out)
	}
	var steps []struct {
		Step string
		OK   bool
	}
	if err := json.Unmarshal([]byte(out), &steps); err != nil || len(steps) != 5 || !steps[4].OK || steps[4].Step != "gone" {
		t.Fatalf("smoke steps %s (%v)", out, err)
	}
	e.serve("--sites", sites, "--tick", "2s")
	out, _, rc = e.run("exec", "pbs", "qstat -Q")
	if rc != 0 || !strings.Contains(out, "workq") {
		t.Fatalf("exec qstat -Q: rc=%d %s", rc, out)
	}
}

// TestRigCampaignPBSSubmitInterrupt: the coordinator in a PBS job (submit mode), the
// workers attached on Slurm beta; SIGINT to the launcher deletes the PBS job (qstat -x
// shows it finished) and leaves nothing of the run queued or running anywhere.
func TestRigCampaignPBSSubmitInterrupt(t *testing.T) {
	r := needPBSRig(t)
	e := newEnv(t)
	l, run, _, job := launchPBSSubmitBetaAttach(t, r, e, "pbssub")
	l.waitFor("all 2 sites ready", 150*time.Second)
	prefix := "mosaic-c-" + run
	if len(r.pbsQueued(prefix)) != 1 {
		t.Fatalf("want the run's PBS job live before the interrupt, qstat has %v\n%s", r.pbsQueued(prefix), l.output())
	}
	if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if err := l.wait(90 * time.Second); err == nil {
		t.Errorf("interrupted launch exited 0\n%s", l.output())
	}
	var left []string
	for range 60 {
		left = append(r.pbsQueued(prefix), stepsNamed(r, job, prefix)...)
		if len(left) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("left behind after SIGINT: %v\n%s", left, l.output())
	}
	hist := r.pbs("qstat", "-x", "-f", "-F", "json")
	if !strings.Contains(hist, prefix) {
		t.Errorf("qstat -x has no job named %s*", prefix)
	}
}

// launchPBSSubmitBetaAttach starts `campaign launch` of the example campaign under a
// fresh run id (prefixed e2e-kind): the coordinator in a new PBS job (submit mode), the
// workers attached to an allocation job made on beta's node; extra are more flags.
func launchPBSSubmitBetaAttach(t *testing.T, r *rig, e *env, kind string, extra ...string) (l *launcher, run, node, job string) {
	t.Helper()
	job, node = r.allocation(t)
	run = fmt.Sprintf("e2e-%s-%d", kind, time.Now().UnixNano()%1e9)
	args := []string{"--campaign", exampleCampaign(t), "--run-id", run, "--sites", r.sitesWithPBS(), "--mosaic-bin", r.sharedBinary(),
		"--site", "pbs:queue=workq;walltime=00:10:00;agents=coordinator",
		"--site", "beta:attach=" + node + ";jobid=" + job + ";agents=worker-a,worker-b",
		"--startup-timeout", "120s"}
	return startLaunch(t, e, append(args, extra...)...), run, node, job
}
