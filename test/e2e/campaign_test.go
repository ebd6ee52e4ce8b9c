package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// launcher is one `mosaic campaign launch` process whose stderr is watched.
type launcher struct {
	t    *testing.T
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  strings.Builder
	seen chan string
	done chan error
}

func startLaunch(t *testing.T, e *env, args ...string) *launcher {
	t.Helper()
	l := &launcher{t: t, seen: make(chan string, 1000), done: make(chan error, 1)}
	l.cmd = exec.Command(binary, append([]string{"campaign", "launch"}, args...)...)
	l.cmd.Env = e.vars
	l.cmd.Dir = e.home
	pr, pw := io.Pipe()
	l.cmd.Stderr, l.cmd.Stdout = pw, pw
	if err := l.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			l.mu.Lock()
			l.out.WriteString(sc.Text() + "\n")
			l.mu.Unlock()
			select {
			case l.seen <- sc.Text():
			default:
			}
		}
	}()
	go func() { err := l.cmd.Wait(); pw.Close(); l.done <- err }()
	t.Cleanup(func() {
		if l.cmd.ProcessState == nil {
			_ = l.cmd.Process.Signal(os.Interrupt)
			select {
			case <-l.done:
			case <-time.After(90 * time.Second):
				_ = l.cmd.Process.Kill()
			}
		}
	})
	return l
}

func (l *launcher) output() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.out.String()
}

// waitFor waits for a line containing s.
func (l *launcher) waitFor(s string, limit time.Duration) {
	l.t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case line := <-l.seen:
			if strings.Contains(line, s) {
				return
			}
		case err := <-l.done:
			l.done <- err
			l.t.Fatalf("launcher exited (%v) before %q:\n%s", err, s, l.output())
		case <-deadline:
			l.t.Fatalf("no %q after %s:\n%s", s, limit, l.output())
		}
	}
}

func (l *launcher) wait(limit time.Duration) error {
	l.t.Helper()
	select {
	case err := <-l.done:
		l.done <- err
		return err
	case <-time.After(limit):
		l.t.Fatalf("launcher still running after %s:\n%s", limit, l.output())
	}
	return nil
}

// allocation opens a "sleep" allocation on beta, as a user would before attaching.
func (r *rig) allocation(t *testing.T) (jobID, node string) {
	t.Helper()
	jobID = strings.TrimSpace(r.slurm("beta", "sbatch", "--parsable", "-J", "e2e-alloc", "-o", "/dev/null", "--wrap", "sleep 600"))
	t.Cleanup(func() { r.slurm("beta", "scancel", jobID) })
	for i := 0; i < 60; i++ {
		out := strings.TrimSpace(r.slurm("beta", "squeue", "-h", "-j", jobID, "-o", "%T %N"))
		if st, n, _ := strings.Cut(out, " "); st == "RUNNING" && n != "" {
			return jobID, n
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Fatalf("allocation %s on beta never started", jobID)
	return "", ""
}

func exampleCampaign(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	p, err := filepath.Abs(filepath.Join(filepath.Dir(file), "..", "..", "examples", "campaigns", "federated-chat.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// launchAcrossClusters starts `campaign launch` of the example campaign under a fresh
// run id (prefixed e2e-kind): alpha submits the coordinator's job, beta attaches its
// workers to allocation job made for the test on node. extra are more launch flags.
func launchAcrossClusters(t *testing.T, r *rig, e *env, kind string, extra ...string) (l *launcher, run, job, node string) {
	t.Helper()
	job, node = r.allocation(t)
	run = fmt.Sprintf("e2e-%s-%d", kind, rand.IntN(1e9))
	args := []string{"--campaign", exampleCampaign(t), "--run-id", run, "--sites", r.sites(), "--mosaic-bin", binary,
		"--site", "alpha:queue=cpu;walltime=00:10:00;agents=coordinator",
		"--site", "beta:attach=" + node + ";jobid=" + job + ";agents=worker-a,worker-b"}
	return startLaunch(t, e, append(args, extra...)...), run, job, node
}

// TestRigCampaignLaunchAcrossClusters: alpha in submit mode, beta attached to
// an existing allocation through its sshd, --auto-bootstrap; the example's
// agents exchange greetings across the clusters and the timeline tags them.
func TestRigCampaignLaunchAcrossClusters(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	sites := r.sites()
	l, run, job, node := launchAcrossClusters(t, r, e, "chat", "--auto-bootstrap", "--startup-timeout", "120s")
	l.waitFor("all 2 sites ready", 150*time.Second)
	if err := l.wait(120 * time.Second); err != nil {
		t.Fatalf("launch failed: %v\n%s", err, l.output())
	}
	out := l.output()
	t.Logf("launch output:\n%s", out)
	for _, want := range []string{"submitted job", "attached to " + node, "bootstrap: sent the user task to coordinator", "run " + run + " finished"} {
		if !strings.Contains(out, want) {
			t.Errorf("launch output lacks %q:\n%s", want, out)
		}
	}
	runDir := filepath.Join(e.home, "state", "mosaic", "campaigns", run)
	data, err := os.ReadFile(filepath.Join(runDir, "timeline.json"))
	if err != nil {
		t.Fatal(err)
	}
	var recs []struct {
		Src      string `json:"src"`
		Dest     string `json:"dest"`
		SrcSite  string `json:"src_site"`
		DestSite string `json:"dest_site"`
	}
	if err := json.Unmarshal(data, &recs); err != nil {
		t.Fatal(err)
	}
	cross := 0
	for _, rec := range recs {
		if rec.SrcSite != "" && rec.DestSite != "" && rec.SrcSite != rec.DestSite {
			cross++
		}
		if rec.Src == "worker-a" && (rec.SrcSite != "beta" || rec.DestSite != "alpha") {
			t.Errorf("worker-a's message is tagged %s -> %s, want beta -> alpha", rec.SrcSite, rec.DestSite)
		}
	}
	if len(recs) != 5 || cross != 4 {
		t.Errorf("timeline has %d messages (%d cross-site), want 5 (4): %s", len(recs), cross, data)
	}
	// status works later from the run directory.
	so, se, code := e.run("campaign", "status", run, "--sites", sites, "--json")
	if code != 0 {
		t.Fatalf("campaign status: %d %s", code, se)
	}
	var st struct {
		State string `json:"state"`
		Sites []struct {
			Name         string `json:"name"`
			SubmittedJob string `json:"submitted_job"`
			JobID        string `json:"job_id"`
		} `json:"sites"`
	}
	if err := json.Unmarshal([]byte(so), &st); err != nil {
		t.Fatalf("status JSON: %v\n%s", err, so)
	}
	if st.State != "finished" || len(st.Sites) != 2 || st.Sites[0].SubmittedJob == "" || st.Sites[1].JobID != job {
		t.Errorf("status: %s", so)
	}
	// The core's API serves the run and its timeline from the run directory.
	e.serve()
	code, body := httpGet("http://"+e.addr+"/api/campaigns/"+run+"/timeline", e.token())
	if code != 200 || !strings.Contains(string(body), `"src_site":"beta"`) || !strings.Contains(string(body), `"cross_site":true`) {
		t.Errorf("timeline API: HTTP %d %s", code, body)
	}
	code, body = httpGet("http://"+e.addr+"/api/campaigns/"+run, e.token())
	if code != 200 || !strings.Contains(string(body), `"submitted_job":"`+st.Sites[0].SubmittedJob+`"`) {
		t.Errorf("run API: HTTP %d %s", code, body)
	}
}

// TestRigCampaignInterruptLeavesNothing: SIGINT to a launcher whose agents are
// up (never bootstrapped) leaves no job, step or process of the run behind.
func TestRigCampaignInterruptLeavesNothing(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	l, run, job, _ := launchAcrossClusters(t, r, e, "int", "--startup-timeout", "120s")
	l.waitFor("all 2 sites ready", 150*time.Second)
	if got := processesMentioning(run); len(got) == 0 {
		t.Fatalf("no process of run %s is running while ready; the check below would prove nothing", run)
	}
	if err := l.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := l.wait(90 * time.Second)
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 130 {
		t.Errorf("interrupted launch exited %v, want status 130\n%s", err, l.output())
	}
	t.Logf("launch output:\n%s", l.output())
	prefix := "mosaic-c-" + run
	left := leftOfRun(r, run, job, prefix)
	if len(left) > 0 {
		t.Errorf("left behind after SIGINT: %v\n%s", left, l.output())
	}
	// The user's allocation itself is theirs: still running.
	if st := strings.TrimSpace(r.slurm("beta", "squeue", "-h", "-j", job, "-o", "%T")); st != "RUNNING" {
		t.Errorf("allocation %s is %q after the launcher stopped; attach must not cancel it", job, st)
	}
}

func stepsNamed(r *rig, job, prefix string) []string {
	var out []string
	for _, l := range strings.Split(r.slurm("beta", "squeue", "-h", "-s", "-j", job, "-o", "%i %j"), "\n") {
		if f := strings.Fields(l); len(f) == 2 && strings.HasPrefix(f[1], prefix) {
			out = append(out, "step "+l)
		}
	}
	return out
}

// processesMentioning lists live processes whose command line contains s.
func processesMentioning(s string) []string {
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, en := range ents {
		pid, err := strconv.Atoi(en.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + en.Name() + "/cmdline")
		if err != nil {
			continue
		}
		cl := strings.ReplaceAll(string(b), "\x00", " ")
		if strings.Contains(cl, s) && !isZombie(pid) {
			out = append(out, fmt.Sprintf("pid %d: %s", pid, cl))
		}
	}
	return out
}

func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] == "Z"
}

// TestCampaignOnCoreExchange runs the example through the exchange embedded in
// `mosaic serve` (mounted at /exchange with a per-run token from the API): two
// spawn-site processes tagged with different sites, bootstrap, then the
// timeline API shows the messages tagged by site, cross-site ones flagged.
func TestCampaignOnCoreExchange(t *testing.T) {
	needTool(t, "python3", "apt-get install python3") // the example's coordinator
	e := newEnv(t)
	e.serve()
	camp := exampleCampaign(t)
	const run = "core-chat-1"
	// Issue an exchange token for the run with the campaign's peer policy.
	spec, _, code := e.run("campaign", "validate", camp)
	if code != 0 {
		t.Fatalf("validate: %s", spec)
	}
	body := `{"campaign":{"name":"federated-chat","initial_agent":"coordinator","agents":[` +
		`{"name":"coordinator","command":["x"],"allowed_peers":["worker-a","worker-b"]},` +
		`{"name":"worker-a","command":["x"],"allowed_peers":["coordinator"]},` +
		`{"name":"worker-b","command":["x"],"allowed_peers":["coordinator"]}]}}`
	req, _ := http.NewRequest("POST", "http://"+e.addr+"/api/campaigns/"+run+"/token", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != 201 || tok.Token == "" {
		t.Fatalf("token: HTTP %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	vars := append(append([]string(nil), e.vars...), "MOSAIC_EXCHANGE_URL=http://"+e.addr+"/exchange", "MOSAIC_EXCHANGE_TOKEN="+tok.Token)
	start := func(args ...string) (*exec.Cmd, *strings.Builder) {
		cmd := exec.Command(binary, args...)
		cmd.Env = vars
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	a, aOut := start("campaign", "spawn-site", "--campaign", camp, "--run-id", run, "--agents", "coordinator", "--site", "aurora", "--startup-timeout", "60s")
	b, bOut := start("campaign", "spawn-site", "--campaign", camp, "--run-id", run, "--agents", "worker-a, worker-b", "--site", "crux", "--startup-timeout", "60s")
	boot, bootOut := start("campaign", "bootstrap", "--campaign", camp, "--run-id", run, "--startup-timeout", "60s")
	for _, c := range []struct {
		cmd *exec.Cmd
		out *strings.Builder
	}{{boot, bootOut}, {a, aOut}, {b, bOut}} {
		done := make(chan error, 1)
		go func() { done <- c.cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("%v: %v\n%s", c.cmd.Args, err, c.out)
			}
		case <-time.After(60 * time.Second):
			_ = c.cmd.Process.Kill()
			t.Fatalf("%v did not finish:\n%s", c.cmd.Args, c.out)
		}
	}
	for _, want := range []string{"registered", "waiting for peers [worker-a worker-b]", "discovered 2 peers", "first message from mosaic", "all 2 peers answered", "mailbox terminated"} {
		if !strings.Contains(aOut.String(), want) {
			t.Errorf("coordinator site output lacks %q:\n%s", want, aOut)
		}
	}
	code, data := httpGet("http://"+e.addr+"/api/campaigns/"+run+"/timeline", e.token())
	if code != 200 {
		t.Fatalf("timeline: HTTP %d %s", code, data)
	}
	var tl struct {
		Source   string `json:"source"`
		Messages []struct {
			Src       string `json:"src"`
			SrcSite   string `json:"src_site"`
			DestSite  string `json:"dest_site"`
			CrossSite bool   `json:"cross_site"`
		} `json:"messages"`
		Counts []struct {
			Site      string `json:"site"`
			CrossSite int    `json:"cross_site"`
		} `json:"counts"`
	}
	if err := json.Unmarshal(data, &tl); err != nil {
		t.Fatal(err)
	}
	cross := 0
	for _, m := range tl.Messages {
		if m.CrossSite {
			cross++
		}
		if m.Src == "worker-b" && (m.SrcSite != "crux" || m.DestSite != "aurora" || !m.CrossSite) {
			t.Errorf("worker-b's reply is tagged %s -> %s cross=%v", m.SrcSite, m.DestSite, m.CrossSite)
		}
	}
	if tl.Source != "exchange" || len(tl.Messages) != 5 || cross != 4 {
		t.Errorf("timeline: source %s, %d messages, %d cross-site; want exchange, 5, 4: %s", tl.Source, len(tl.Messages), cross, data)
	}
	// bootstrap to a recipient that never appears: exit 127 (not found), name on stderr.
	bcmd := exec.Command(binary, "campaign", "bootstrap", "--campaign", camp, "--run-id", run, "--recipient", "worker-a", "--startup-timeout", "1s")
	bcmd.Env = vars
	var berr strings.Builder
	bcmd.Stderr = &berr
	err = bcmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitNotFound || !strings.Contains(berr.String(), "worker-a") {
		t.Errorf("bootstrap to a gone recipient: %v, stderr %q; want exit %d naming worker-a", err, berr.String(), exitNotFound)
	}
	// agent run: a lone agent; its exit status is mosaic's, landmarks on stderr.
	solo := filepath.Join(t.TempDir(), "solo.jsonc")
	if err := os.WriteFile(solo, []byte(`{"name":"solo","initial_agent":"a","agents":[{"name":"a","command":["true"]}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	// The token is issued with the campaign: its agents get their own tokens.
	req, _ = http.NewRequest("POST", "http://"+e.addr+"/api/campaigns/solo-1/token",
		strings.NewReader(`{"campaign":{"name":"solo","initial_agent":"a","agents":[{"name":"a","command":["true"]}]}}`))
	req.Header.Set("Authorization", "Bearer "+e.token())
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	acmd := exec.Command(binary, "agent", "run", "--campaign", solo, "--run-id", "solo-1", "--name", "a", "--", "sh", "-c", "echo out-line; exit 5")
	acmd.Env = append(append([]string(nil), e.vars...), "MOSAIC_EXCHANGE_URL=http://"+e.addr+"/exchange", "MOSAIC_EXCHANGE_TOKEN="+tok.Token)
	var aout, aerr strings.Builder
	acmd.Stdout, acmd.Stderr = &aout, &aerr
	err = acmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 5 || aout.String() != "out-line\n" ||
		!strings.Contains(aerr.String(), "mosaic-agent a: registered") || !strings.Contains(aerr.String(), "mailbox terminated") {
		t.Errorf("agent run: %v stdout %q stderr %q; want exit 5", err, aout.String(), aerr.String())
	}
	// A run id the core knows nothing about is a 404, a malformed one 422.
	if code, _ := httpGet("http://"+e.addr+"/api/campaigns/nope-run", e.token()); code != 404 {
		t.Errorf("unknown run: HTTP %d, want 404", code)
	}
	if code, _ := httpGet("http://"+e.addr+"/api/campaigns/..bad/timeline", e.token()); code != 422 && code != 404 {
		t.Errorf("bad run id: HTTP %d, want 422", code)
	}
}

// TestRigCampaignThroughTunnel forces the reverse tunnel: each site's agents
// reach the launcher's exchange through ssh -R on a port sshd picks and a
// relay on the login node on a free port; nothing of it outlives the launch.
func TestRigCampaignThroughTunnel(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	l, run, _, _ := launchAcrossClusters(t, r, e, "tun", "--auto-bootstrap", "--tunnel", "always", "--startup-timeout", "120s")
	if err := l.wait(180 * time.Second); err != nil {
		t.Fatalf("launch failed: %v\n%s", err, l.output())
	}
	out := l.output()
	t.Logf("launch output:\n%s", out)
	for _, want := range []string{"alpha: agents reach the exchange through a tunnel from rig-alpha", "beta: agents reach the exchange through a tunnel from rig-beta", "run " + run + " finished"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The agents really registered through the tunnel's URL.
	j := strings.Index(out, "beta: agents reach the exchange through a tunnel from rig-beta at ")
	if j >= 0 {
		tunURL := strings.Fields(out[j+len("beta: agents reach the exchange through a tunnel from rig-beta at "):])[0]
		logData, err := os.ReadFile(filepath.Join(r.env.Get(t, "RIG_WORKDIR_BETA"), "mosaic-campaigns", run, "beta", "site.log"))
		if err != nil || !strings.Contains(string(logData), "on "+tunURL+" (run "+run) {
			t.Errorf("beta's agents did not register through %s: %v\n%s", tunURL, err, logData)
		}
	}
	i := strings.Index(out, "serving run "+run+" on http://")
	if i < 0 {
		t.Fatal("no exchange address in the output")
	}
	addr := strings.Fields(out[i+len("serving run "+run+" on http://"):])[0]
	var left []string
	for k := 0; k < 20; k++ {
		left = append(processesMentioning("0:"+addr), processesMentioning("exchange relay --to")...)
		if len(left) == 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("tunnel processes left: %v", left)
	}
}

// TestRigCampaignStopAfterLauncherCrash: the launcher is killed with SIGKILL
// (no cleanup at all); `campaign stop RUN` later finds everything in the run
// directory and leaves no job, step or process behind.
func TestRigCampaignStopAfterLauncherCrash(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	sites := r.sites()
	l, run, job, _ := launchAcrossClusters(t, r, e, "crash", "--startup-timeout", "120s")
	l.waitFor("all 2 sites ready", 150*time.Second)
	_ = l.cmd.Process.Kill()
	_ = l.wait(30 * time.Second)
	prefix := "mosaic-c-" + run
	if len(r.queued("alpha", prefix)) == 0 {
		t.Fatalf("alpha's job is already gone after SIGKILL; the stop below would prove nothing")
	}
	so, se, code := e.run("campaign", "stop", run, "--sites", sites)
	if code != 0 {
		t.Fatalf("campaign stop: exit %d\n%s%s", code, so, se)
	}
	// The dead launcher's task is cancelled through the engine, from the store.
	if !strings.Contains(se, "alpha: task ") || !strings.Contains(se, " cancelled (job ") {
		t.Errorf("campaign stop did not cancel alpha's task through the engine:\n%s", se)
	}
	left := leftOfRun(r, run, job, prefix)
	if len(left) > 0 {
		t.Errorf("left behind after campaign stop: %v\n%s", left, se)
	}
	so, _, _ = e.run("campaign", "status", run, "--sites", sites)
	if !strings.Contains(so, "stopped") {
		t.Errorf("status after stop:\n%s", so)
	}
}

// TestRigCampaignAutoPlacement: the workers' slice is placed by the running core's
// meta-scheduler (auto;agents=…), the coordinator is submitted to a named site, and the
// campaign runs to the end across them.
func TestRigCampaignAutoPlacement(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	sites := r.sites()
	e.serve("--sites", sites, "--tick", "2s")
	run := fmt.Sprintf("e2e-auto-%d", rand.IntN(1e9))
	l := startLaunch(t, e, "--campaign", exampleCampaign(t), "--run-id", run, "--sites", sites, "--mosaic-bin", binary,
		"--site", "alpha:queue=cpu;walltime=00:10:00;agents=coordinator",
		"--site", "auto;agents=worker-a,worker-b", "--auto-walltime", "10m",
		"--auto-bootstrap", "--startup-timeout", "120s")
	l.waitFor("auto placement:", 60*time.Second)
	if err := l.wait(200 * time.Second); err != nil {
		t.Fatalf("launch failed: %v\n%s", err, l.output())
	}
	out := l.output()
	if !strings.Contains(out, "bootstrap: sent the user task to coordinator") || !strings.Contains(out, "run "+run+" finished") {
		t.Fatalf("launch output:\n%s", out)
	}
	if !strings.Contains(out, "auto placement: alpha:") && !strings.Contains(out, "auto placement: beta:") {
		t.Fatalf("no auto placement line:\n%s", out)
	}
	// The running core owns the user's store: the run's tasks are its tasks, and
	// no store of the run's own is made.
	if !strings.Contains(out, "is owned by the core at http://"+e.addr) {
		t.Errorf("no note that the serve runs the jobs:\n%s", out)
	}
	own := filepath.Join(e.home, "state", "mosaic", "campaigns", run+".tasks.db")
	if _, err := os.Stat(own); err == nil {
		t.Errorf("a store of the run's own was made (%s) although the serve owns the user's", own)
	}
	code, body := httpGet("http://"+e.addr+"/api/tasks", e.token())
	if code != 200 || strings.Count(string(body), "campaign "+run+" on ") != 2 {
		t.Errorf("the serve's tasks lack the run's two jobs: HTTP %d %s", code, body)
	}
}

// TestRigCampaignSubmitJobIsATask: a submit-mode site's job is a task of the core's
// engine: its id is in the run directory while the launch runs, `campaign stop`
// cancels it through the engine (nothing left in alpha's queue), and afterwards the
// core serves it as a cancelled task pinned to alpha, under the launcher's job name,
// with the run id in its events.
func TestRigCampaignSubmitJobIsATask(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	sites := r.sites()
	l, run, _, _ := launchAcrossClusters(t, r, e, "task", "--startup-timeout", "120s")
	l.waitFor("all 2 sites ready", 150*time.Second)
	data, err := os.ReadFile(filepath.Join(e.home, "state", "mosaic", "campaigns", run, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		TasksStore string `json:"tasks_store"`
		Sites      []struct {
			Name         string `json:"name"`
			TaskID       string `json:"task_id"`
			SubmittedJob string `json:"submitted_job"`
		} `json:"sites"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	if len(st.Sites) != 2 || st.Sites[0].Name != "alpha" || st.Sites[0].TaskID == "" || st.Sites[0].SubmittedJob == "" || st.Sites[1].TaskID != "" {
		t.Fatalf("run directory: want alpha's task and job (and no task for the attached beta): %s", data)
	}
	if st.TasksStore != filepath.Join(e.home, "state", "mosaic", "mosaic.db") {
		t.Errorf("tasks store %q, want the user's store", st.TasksStore)
	}
	task, job := st.Sites[0].TaskID, st.Sites[0].SubmittedJob
	prefix := "mosaic-c-" + run + "-alpha"
	if q := r.queued("alpha", prefix); len(q) != 1 {
		t.Fatalf("alpha's queue holds %v, want the slice's job %s", q, prefix)
	}
	so, se, code := e.run("campaign", "stop", run, "--sites", sites)
	if code != 0 {
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
		t.Errorf("the launcher did not cancel task %s through the engine:\n%s", task, out)
	}
	// The core serves the task from the same store.
	e.serve("--sites", sites)
	code, body := httpGet("http://"+e.addr+"/api/tasks/"+task, e.token())
	if code != 200 {
		t.Fatalf("task %s: HTTP %d %s", task, code, body)
	}
	var td struct {
		Name   string `json:"name"`
		State  string `json:"state"`
		Target struct {
			System    string `json:"system"`
			Partition string `json:"partition"`
		} `json:"target"`
		Attempts []struct {
			Tag   string `json:"tag"`
			JobID string `json:"job_id"`
			State string `json:"state"`
		} `json:"attempts"`
	}
	if err := json.Unmarshal(body, &td); err != nil {
		t.Fatal(err)
	}
	if td.State != "cancelled" || !strings.Contains(td.Name, run) || td.Target.System != "alpha" || td.Target.Partition != "cpu" ||
		len(td.Attempts) != 1 || td.Attempts[0].Tag != prefix || td.Attempts[0].JobID != job || td.Attempts[0].State != "cancelled" {
		t.Errorf("task: %s", body)
	}
	code, body = httpGet("http://"+e.addr+"/api/tasks", e.token())
	if code != 200 || !strings.Contains(string(body), `"id":"`+task+`"`) {
		t.Errorf("task list lacks %s: HTTP %d %s", task, code, body)
	}
	code, body = httpGet("http://"+e.addr+"/api/events?task="+task, e.token())
	if code != 200 || !strings.Contains(string(body), "campaign run "+run) || !strings.Contains(string(body), "cancelled") {
		t.Errorf("events of %s: HTTP %d %s", task, code, body)
	}
}

// TestRigCampaignSubmitRefused: a job the site refuses fails the launch at once with
// the site's reason; its task is failed (never retried) and nothing is cancelled.
func TestRigCampaignSubmitRefused(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	run := fmt.Sprintf("e2e-refused-%d", rand.IntN(1e9))
	l := startLaunch(t, e, "--campaign", exampleCampaign(t), "--run-id", run, "--sites", r.sites(), "--mosaic-bin", binary,
		"--site", "alpha:queue=nosuch;walltime=00:05:00;agents=coordinator,worker-a,worker-b", "--startup-timeout", "60s")
	err := l.wait(120 * time.Second)
	out := l.output()
	if err == nil || !strings.Contains(out, "site alpha: submit: task ") || !strings.Contains(out, "alpha refused the job") {
		t.Fatalf("launch: %v\n%s", err, out)
	}
	if strings.Contains(out, "cancelled job") {
		t.Errorf("a refused job was cancelled:\n%s", out)
	}
	data, err := os.ReadFile(filepath.Join(e.home, "state", "mosaic", "campaigns", run, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		State string `json:"state"`
		Sites []struct {
			TaskID string `json:"task_id"`
			State  string `json:"state"`
		} `json:"sites"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		t.Fatal(err)
	}
	if st.State != "failed" || len(st.Sites) != 1 || st.Sites[0].TaskID == "" || st.Sites[0].State != "submit_error" {
		t.Fatalf("run directory: %s", data)
	}
	e.serve("--sites", r.sites())
	code, body := httpGet("http://"+e.addr+"/api/tasks/"+st.Sites[0].TaskID, e.token())
	var td struct {
		State    string `json:"state"`
		Attempts []struct {
			Tag   string `json:"tag"`
			State string `json:"state"`
		} `json:"attempts"`
	}
	if code != 200 || json.Unmarshal(body, &td) != nil || td.State != "failed" || len(td.Attempts) != 1 ||
		td.Attempts[0].Tag != "mosaic-c-"+run+"-alpha" || td.Attempts[0].State != "submit_error" {
		t.Errorf("refused task: HTTP %d %s", code, body)
	}
}

// leftOfRun waits up to 20 s for nothing of run to be left — alpha's queued jobs and
// the steps in allocation job named prefix*, and local processes mentioning run —
// and returns what still is.
func leftOfRun(r *rig, run, job, prefix string) []string {
	var left []string
	for range 40 {
		left = append(r.queued("alpha", prefix), stepsNamed(r, job, prefix)...)
		left = append(left, processesMentioning(run)...)
		if len(left) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	return left
}
