package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/exchange/redistest"
)

// The exchange-restart tests: a coordinator sends restartN numbered messages
// to a worker, one every 200 ms, the worker answers each, and the coordinator
// exits 0 only once every answer arrived (test/e2e/testdata/restart_*.py).
// Mid-campaign the exchange is killed (SIGKILL) and brought back on the same
// address from the same Redis; the agents must reconnect, lose nothing, and
// the run must finish. Both sites are kind local (this machine), attached to
// one allocation of the rig's beta cluster (srun --overlap).
const restartN = 25

// restartSetup is what both restart tests share: Redis, the campaign, a local
// two-site catalog, an allocation and the environment.
type restartSetup struct {
	e              *env
	redis, camp    string
	sites, run     string
	siteA, siteB   string
	slurmConf, tok string
	// the coordinator's and the worker's site
	coordSite, workerSite string
	job, node             string
	r                     *rig
}

func newRestartSetup(t *testing.T, kind, backend string) *restartSetup {
	t.Helper()
	r := needRig(t)
	needTool(t, "python3", "apt-get install python3")
	s := &restartSetup{e: newEnv(t), redis: redistest.Start(t), slurmConf: r.env.Get(t, "SLURM_CONF_BETA"), coordSite: "here-a", workerSite: "here-b", r: r}
	job, node := r.allocation(t)
	s.job, s.node = job, node
	_, file, _, _ := runtime.Caller(0)
	data := filepath.Join(filepath.Dir(file), "testdata")
	dir := t.TempDir()
	s.camp = filepath.Join(dir, "restart.jsonc")
	camp := fmt.Sprintf(`{"name":"restart-pair","initial_agent":"coordinator","user_task":"count to %d",
  "agents":[
    {"name":"coordinator","command":["python3",%q],"allowed_peers":["worker"],"env":{"RESTART_N":"%d","RESTART_INTERVAL":"0.2"}},
    {"name":"worker","command":["python3",%q],"allowed_peers":["coordinator"],"env":{"RESTART_N":"%d"}}],
  "exchange":{"backend":%q,"redis_url":%q,"discover_timeout":"60s"}}`,
		restartN, filepath.Join(data, "restart_coordinator.py"), restartN, filepath.Join(data, "restart_worker.py"), restartN, backend, s.redis)
	if err := os.WriteFile(s.camp, []byte(camp), 0o600); err != nil {
		t.Fatal(err)
	}
	s.sites = filepath.Join(dir, "sites.yaml")
	if err := os.WriteFile(s.sites, []byte(fmt.Sprintf("systems:\n  - name: here-a\n    kind: local\n    workdir: %s\n  - name: here-b\n    kind: local\n    workdir: %s\n",
		filepath.Join(dir, "work-a"), filepath.Join(dir, "work-b"))), 0o600); err != nil {
		t.Fatal(err)
	}
	s.siteA = "here-a:attach=" + node + ";jobid=" + job + ";agents=coordinator"
	s.siteB = "here-b:attach=" + node + ";jobid=" + job + ";agents=worker"
	var b [16]byte
	_, _ = rand.Read(b[:])
	s.tok = "mxt_" + hex.EncodeToString(b[:])
	s.run = fmt.Sprintf("e2e-%s-%x", kind, b[:4])
	s.e.vars = append(s.e.vars, "SLURM_CONF="+s.slurmConf, "MOSAIC_SITES="+s.sites)
	return s
}

// waitMessages waits until the run's exchange at url has recorded at least n
// messages (GET /run/timeline with the run token).
func waitMessages(t *testing.T, url, tok string, n int, limit time.Duration, why func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		code, data := httpGet(url+"/run/timeline", tok)
		var tl struct {
			Messages []json.RawMessage `json:"messages"`
		}
		if code == 200 && json.Unmarshal(data, &tl) == nil && len(tl.Messages) >= n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the exchange at %s did not record %d messages within %s:\n%s", url, n, limit, why())
}

// checkRestartedRun checks a run that lived through an exchange restart: it
// finished, every request was answered exactly once (the coordinator says so,
// the timeline holds restartN requests each way), both agents' logs say
// they reconnected, and status and timeline show the counts of both sites.
func (s *restartSetup) checkRestartedRun(t *testing.T) {
	t.Helper()
	so, se, code := s.e.run("campaign", "status", s.run, "--json")
	if code != 0 {
		t.Fatalf("campaign status: exit %d\n%s%s", code, so, se)
	}
	var st struct {
		State string `json:"state"`
		Sites []struct {
			Name  string `json:"name"`
			State string `json:"state"`
			Log   string `json:"log"`
		} `json:"sites"`
		Counts []struct {
			Site      string `json:"site"`
			Mailboxes int    `json:"mailboxes"`
			Sent      int    `json:"sent"`
			Received  int    `json:"received"`
		} `json:"counts"`
	}
	if err := json.Unmarshal([]byte(so), &st); err != nil {
		t.Fatalf("status --json: %v\n%s", err, so)
	}
	if st.State != "finished" {
		t.Errorf("run state %s, want finished:\n%s", st.State, so)
	}
	logs := map[string]string{}
	for _, site := range st.Sites {
		data, err := os.ReadFile(site.Log)
		if err != nil {
			t.Fatalf("site %s log: %v", site.Name, err)
		}
		logs[site.Name] = string(data)
		t.Logf("%s:\n%s", site.Log, data)
		if site.State != "succeeded" {
			t.Errorf("site %s ended %s:\n%s", site.Name, site.State, data)
		}
		if !strings.Contains(string(data), "reconnected after") {
			t.Errorf("site %s's agent never says it reconnected:\n%s", site.Name, data)
		}
	}
	if !strings.Contains(logs[s.coordSite], fmt.Sprintf("coordinator: all %d replies arrived", restartN)) {
		t.Errorf("the coordinator did not get every reply:\n%s", logs[s.coordSite])
	}
	counts := map[string][3]int{}
	for _, c := range st.Counts {
		counts[c.Site] = [3]int{c.Mailboxes, c.Sent, c.Received}
	}
	if a, b := counts[s.coordSite], counts[s.workerSite]; a[0] != 1 || b[0] != 1 || a[1] < restartN || b[1] != restartN || a[2] < restartN+1 || b[2] < restartN {
		t.Errorf("counts in campaign status --json: %+v", st.Counts)
	}
	text, _, _ := s.e.run("campaign", "status", s.run)
	t.Logf("$ mosaic campaign status %s\n%s", s.run, text)
	text, _, _ = s.e.run("campaign", "timeline", s.run)
	t.Logf("$ mosaic campaign timeline %s\n%s", s.run, text)
	so, se, code = s.e.run("campaign", "timeline", s.run, "--json")
	if code != 0 {
		t.Fatalf("campaign timeline: exit %d\n%s%s", code, so, se)
	}
	var tl struct {
		Source   string `json:"source"`
		Messages []struct {
			Src, Dest, SrcSite, DestSite string
		} `json:"messages"`
		Counts []json.RawMessage `json:"counts"`
	}
	if err := json.Unmarshal([]byte(so), &tl); err != nil {
		t.Fatal(err)
	}
	ab, ba := 0, 0
	for _, m := range tl.Messages {
		switch {
		case m.Src == "coordinator" && m.Dest == "worker":
			ab++
		case m.Src == "worker" && m.Dest == "coordinator":
			ba++
		}
	}
	if ab != restartN || ba != restartN || len(tl.Counts) < 2 || tl.Source != "run-directory" {
		t.Errorf("campaign timeline --json: source %s, %d requests and %d replies (want %d each), %d site counts", tl.Source, ab, ba, restartN, len(tl.Counts))
	}
}

// TestRigCampaignExternalExchangeRestart: the run uses an external `mosaic
// exchange serve --redis`; it is killed mid-campaign and started again on the
// same address. The launcher records the timeline and counts from it all along.
func TestRigCampaignExternalExchangeRestart(t *testing.T) {
	s := newRestartSetup(t, "xrestart", "memory")
	tokFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokFile, []byte(s.tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	url := "http://" + addr
	serve := func() (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(binary, "exchange", "serve", "--addr", addr, "--token-file", tokFile, "--run-id", s.run, "--campaign", s.camp, "--redis", s.redis)
		cmd.Env = s.e.vars
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		for i := 0; i < 100; i++ {
			if code, _ := httpGet(url+"/run/timeline", s.tok); code == 200 {
				return cmd, &out
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("exchange serve did not answer on %s:\n%s", addr, out.String())
		return nil, nil
	}
	x, _ := serve()
	s.e.vars = append(s.e.vars, "MOSAIC_EXCHANGE_TOKEN="+s.tok)
	l := startLaunch(t, s.e, "--campaign", s.camp, "--run-id", s.run, "--mosaic-bin", binary, "--exchange-url", url,
		"--site", s.siteA, "--site", s.siteB, "--auto-bootstrap", "--startup-timeout", "60s")
	l.waitFor("sent the user task to coordinator", 60*time.Second)
	waitMessages(t, url, s.tok, 8, 30*time.Second, l.output)
	_ = x.Process.Signal(syscall.SIGKILL)
	_ = x.Wait()
	time.Sleep(time.Second) // agents see connection refused meanwhile
	serve()
	if err := l.wait(90 * time.Second); err != nil {
		t.Fatalf("launch: %v\n%s", err, l.output())
	}
	t.Logf("launcher:\n%s", l.output())
	if out := l.output(); !strings.Contains(out, "run "+s.run+" finished") || !strings.Contains(out, "site here-b") {
		t.Errorf("launch output lacks the end and the counts:\n%s", out)
	}
	s.checkRestartedRun(t)
}

// TestRigCampaignResumeAfterLauncherDied: the launcher embeds the exchange on
// Redis; the launcher is killed (SIGKILL) mid-campaign, with its exchange;
// `mosaic campaign resume RUN` serves it again on the same address and follows
// the run to its end.
func TestRigCampaignResumeAfterLauncherDied(t *testing.T) {
	s := newRestartSetup(t, "resume", "redis")
	l := startLaunch(t, s.e, "--campaign", s.camp, "--run-id", s.run, "--mosaic-bin", binary,
		"--site", s.siteA, "--site", s.siteB, "--auto-bootstrap", "--startup-timeout", "60s")
	l.waitFor("sent the user task to coordinator", 60*time.Second)
	stateFile := filepath.Join(s.e.home, "state", "mosaic", "campaigns", s.run, "state.json")
	var st struct {
		ExchangeLocalURL string `json:"exchange_local_url"`
	}
	if data, err := os.ReadFile(stateFile); err != nil || json.Unmarshal(data, &st) != nil || st.ExchangeLocalURL == "" {
		t.Fatalf("run directory without the exchange's URL: %v", err)
	}
	tok, err := os.ReadFile(filepath.Join(filepath.Dir(stateFile), "token"))
	if err != nil {
		t.Fatal(err)
	}
	waitMessages(t, st.ExchangeLocalURL, strings.TrimSpace(string(tok)), 8, 30*time.Second, l.output)
	_ = l.cmd.Process.Signal(syscall.SIGKILL)
	_ = l.wait(10 * time.Second)
	time.Sleep(time.Second) // the exchange is gone: agents see connection refused meanwhile

	// A resume while nothing is wrong would be refused; now it takes over.
	cmd := exec.Command(binary, "campaign", "resume", s.run)
	cmd.Env = s.e.vars
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("campaign resume: %v\n%s\nlauncher:\n%s", err, out.String(), l.output())
		}
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
		t.Fatalf("campaign resume did not finish:\n%s", out.String())
	}
	t.Logf("launcher (killed):\n%s\nresume:\n%s", l.output(), out.String())
	for _, want := range []string{"serving run " + s.run + " again on " + st.ExchangeLocalURL, "run " + s.run + " finished", "site here-a"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("resume output lacks %q:\n%s", want, out.String())
		}
	}
	s.checkRestartedRun(t)
	// Over now: a second resume is refused, exit 126 (usage: nothing was done).
	if _, se, code := s.e.run("campaign", "resume", s.run); code != exitUsage || !strings.Contains(se, "is over (finished)") {
		t.Errorf("resume of a finished run: exit %d, %s", code, se)
	}
}

// TestRigCampaignResumeThroughTunnel: as TestRigCampaignResumeAfterLauncherDied,
// with the rig's sites reached over ssh and forced reverse tunnels: alpha runs
// the coordinator in a submitted job, beta the worker attached to an
// allocation. The dead launcher's tunnels went with it; resume reopens each on
// the port of the login node its agents know, replaces the orphaned forward,
// and follows alpha's job at the site.
func TestRigCampaignResumeThroughTunnel(t *testing.T) {
	s := newRestartSetup(t, "resumetun", "redis")
	s.sites, s.coordSite, s.workerSite = s.r.sites(), "alpha", "beta"
	l := startLaunch(t, s.e, "--campaign", s.camp, "--run-id", s.run, "--mosaic-bin", binary, "--sites", s.sites, "--tunnel", "always",
		"--site", "alpha:queue=cpu;walltime=00:05:00;agents=coordinator", "--site", "beta:attach="+s.node+";jobid="+s.job+";agents=worker",
		"--auto-bootstrap", "--startup-timeout", "90s")
	l.waitFor("sent the user task to coordinator", 120*time.Second)
	stateFile := filepath.Join(s.e.home, "state", "mosaic", "campaigns", s.run, "state.json")
	var st struct {
		ExchangeLocalURL string `json:"exchange_local_url"`
		ExchangeListen   string `json:"exchange_listen"`
	}
	if data, err := os.ReadFile(stateFile); err != nil || json.Unmarshal(data, &st) != nil || st.ExchangeListen == "" {
		t.Fatalf("run directory without the exchange's address: %v", err)
	}
	tok, err := os.ReadFile(filepath.Join(filepath.Dir(stateFile), "token"))
	if err != nil {
		t.Fatal(err)
	}
	waitMessages(t, st.ExchangeLocalURL, strings.TrimSpace(string(tok)), 8, 30*time.Second, l.output)
	_ = l.cmd.Process.Signal(syscall.SIGKILL)
	_ = l.wait(10 * time.Second)
	time.Sleep(time.Second)
	cmd := exec.Command(binary, "campaign", "resume", s.run, "--sites", s.sites)
	cmd.Env = s.e.vars
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("campaign resume: %v\n%s\nlauncher:\n%s", err, out.String(), l.output())
		}
	case <-time.After(120 * time.Second):
		_ = cmd.Process.Signal(os.Interrupt)
		<-done
		t.Fatalf("campaign resume did not finish:\n%s", out.String())
	}
	t.Logf("launcher (killed):\n%s\nresume:\n%s", l.output(), out.String())
	for _, want := range []string{"alpha: tunnel reopened at", "beta: tunnel reopened at", "alpha: slice finished (succeeded)", "run " + s.run + " finished"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("resume output lacks %q", want)
		}
	}
	s.checkRestartedRun(t)
	var left []string
	for k := 0; k < 20; k++ {
		left = append(processesMentioning("0:"+st.ExchangeListen), processesMentioning(binary+" exchange relay")...)
		if len(left) == 0 {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("tunnel processes left: %v", left)
	}
}
