package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serveLogged starts `mosaic serve` like env.serve, its output (the log) kept in
// a file whose contents logOf returns.
func (e *env) serveLogged(args ...string) (logOf func() string) {
	e.t.Helper()
	logPath := filepath.Join(e.t.TempDir(), "serve.log")
	f, err := os.Create(logPath)
	if err != nil {
		e.t.Fatal(err)
	}
	cmd := exec.Command(binary, append([]string{"serve", "--addr", e.addr}, args...)...)
	cmd.Env, cmd.Dir = e.vars, e.home
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	logOf = func() string {
		b, _ := os.ReadFile(logPath)
		return string(b)
	}
	e.t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		f.Close()
		if e.t.Failed() {
			e.t.Logf("serve output:\n%s", logOf())
		}
	})
	for i := 0; i < 200; i++ {
		if code, _ := httpGet("http://"+e.addr+"/healthz", ""); code == 200 {
			return logOf
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("serve did not become healthy within 20s:\n%s", logOf())
	return nil
}

// TestRigCampaignLaunchHandsJobsToServe: with `mosaic serve` running on the
// user's store, `campaign launch` hands its submit-mode job to that serve: while
// the run is up its task is in the serve's `mosaic tasks --json` and events with
// the run id, the run directory names the user's store, `campaign status` shows
// the task, and `campaign stop` cancels it through the serve (task cancelled,
// alpha's queue empty). The forwarded value is in none of the serve's log, its
// tasks and its events.
func TestRigCampaignLaunchHandsJobsToServe(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	sites := r.sites()
	const secret = "e2e-fwd-s3cr3t-5521"
	e.vars = append(e.vars, "FWD_SECRET="+secret)
	serveLog := e.serveLogged("--sites", sites, "--tick", "2s")
	run := fmt.Sprintf("e2e-serve-%d", rand.IntN(1e9))
	l := startLaunch(t, e, "--campaign", exampleCampaign(t), "--run-id", run, "--sites", sites, "--mosaic-bin", binary,
		"--site", "alpha:queue=cpu;walltime=00:10:00;agents=coordinator,worker-a,worker-b",
		"--forward-env", "FWD_SECRET", "--startup-timeout", "120s")
	l.waitFor("all 1 sites ready", 150*time.Second)
	store := filepath.Join(e.home, "state", "mosaic", "mosaic.db")
	if out := l.output(); !strings.Contains(out, "the store "+store+" is owned by the core at http://"+e.addr) {
		t.Errorf("the launcher did not say it hands its jobs to the serve:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(e.home, "state", "mosaic", "campaigns", run+".tasks.db")); err == nil {
		t.Errorf("the launcher made a store of its own although the serve owns the user's")
	}
	data, err := os.ReadFile(filepath.Join(e.home, "state", "mosaic", "campaigns", run, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		TasksStore string `json:"tasks_store"`
		Sites      []struct {
			TaskID       string `json:"task_id"`
			SubmittedJob string `json:"submitted_job"`
		} `json:"sites"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Sites) != 1 || st.Sites[0].TaskID == "" || st.Sites[0].SubmittedJob == "" || st.TasksStore != store {
		t.Fatalf("run directory: want alpha's task and job and the user's store: %s", data)
	}
	task, job := st.Sites[0].TaskID, st.Sites[0].SubmittedJob
	prefix := "mosaic-c-" + run + "-alpha"

	// While the run is up, the task is the serve's.
	so, se, code := e.run("tasks", "--json")
	var tasks []struct {
		ID    string `json:"id"`
		Name  string `json:"name"`
		State string `json:"state"`
	}
	if code != 0 || json.Unmarshal([]byte(so), &tasks) != nil {
		t.Fatalf("mosaic tasks --json: exit %d\n%s%s", code, so, se)
	}
	var listed bool
	for _, tk := range tasks {
		listed = listed || (tk.ID == task && strings.Contains(tk.Name, run) && !finalState(tk.State))
	}
	if !listed {
		t.Errorf("the serve's tasks lack the running task %s of run %s:\n%s", task, run, so)
	}
	evJSON, se, code := e.run("events", "--task", task, "--json")
	if code != 0 || !strings.Contains(evJSON, "campaign run "+run) || !strings.Contains(evJSON, "FWD_SECRET") {
		t.Errorf("mosaic events --task %s: exit %d\n%s%s", task, code, evJSON, se)
	}
	if q := r.queued("alpha", prefix); len(q) != 1 {
		t.Fatalf("alpha's queue holds %v, want the slice's job %s", q, prefix)
	}
	so, _, _ = e.run("campaign", "status", run, "--sites", sites)
	if !strings.Contains(so, task) || !strings.Contains(so, job) {
		t.Errorf("campaign status lacks task %s and job %s:\n%s", task, job, so)
	}

	// campaign stop: cancelled through the serve.
	so, se, code = e.run("campaign", "stop", run, "--sites", sites)
	// Through the serve: cancelled, or — when the launcher's own Ctrl-C cancel is not
	// confirmed by the site yet — pending, and then cancelled at the site directly.
	viaServe := strings.Contains(se, "alpha: task "+task+" cancelled") ||
		(strings.Contains(se, "alpha: task "+task+": cancel pending") && strings.Contains(se, "alpha: job "+job+" cancelled"))
	if code != 0 || !viaServe {
		t.Fatalf("campaign stop: exit %d\n%s%s\nlauncher:\n%s", code, so, se, l.output())
	}
	_ = l.wait(90 * time.Second)
	var left []string
	for i := 0; i < 40; i++ {
		if left = r.queued("alpha", prefix); len(left) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("alpha's job left after stop: %v", left)
	}
	if out := l.output(); !strings.Contains(out, "cancelled job "+job+" (task "+task+")") {
		t.Errorf("the launcher did not cancel task %s through the serve:\n%s", task, out)
	}
	code, body := httpGet("http://"+e.addr+"/api/tasks/"+task, e.token())
	var td struct {
		State string `json:"state"`
	}
	if code != 200 || json.Unmarshal(body, &td) != nil || td.State != "cancelled" {
		t.Errorf("the serve's task after stop: HTTP %d %s", code, body)
	}
	code, events := httpGet("http://"+e.addr+"/api/events?task="+task+"&limit=1000", e.token())
	if code != 200 || !strings.Contains(string(events), "cancelled") {
		t.Errorf("events after stop: HTTP %d %s", code, events)
	}
	so, _, _ = e.run("campaign", "status", run, "--sites", sites)
	if !strings.Contains(so, "stopped") {
		t.Errorf("status after stop:\n%s", so)
	}
	tasksJSON, _, _ := e.run("tasks", "--json")
	for what, s := range map[string]string{"serve log": serveLog(), "task": string(body), "events": string(events) + evJSON, "tasks": tasksJSON} {
		if strings.Contains(s, secret) {
			t.Errorf("the forwarded value is in the %s:\n%s", what, s)
		}
	}
}

func finalState(s string) bool { return s == "succeeded" || s == "failed" || s == "cancelled" }
