package e2e

import (
	"bytes"
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

// procsCampaign writes a campaign of two agents whose commands are shells with
// background children (grandchildren of the wrapper), one of which ignores
// SIGTERM, every process of them marked by PROCS_MARK=mark in its environment.
func procsCampaign(t *testing.T, mark string) string {
	t.Helper()
	body := fmt.Sprintf(`{"name":"procs","initial_agent":"a","user_task":"none","agents":[
 {"name":"a","command":["sh","-c","sleep 300 & (trap '' TERM; exec sleep 301) & wait"],"allowed_peers":["b"],"env":{"PROCS_MARK":%q}},
 {"name":"b","command":["sh","-c","sleep 302 & wait"],"allowed_peers":["a"],"env":{"PROCS_MARK":%q}}]}`, mark, mark)
	p := filepath.Join(t.TempDir(), "procs.jsonc")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// markedProcesses lists the live (not zombie) processes with PROCS_MARK=mark in
// their environment: the agents and everything they started, wherever they
// were reparented.
func markedProcesses(mark string) []string {
	want := []byte("PROCS_MARK=" + mark + "\x00")
	ents, _ := os.ReadDir("/proc")
	var out []string
	for _, en := range ents {
		pid, err := strconv.Atoi(en.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + en.Name() + "/environ")
		if err != nil || !bytes.Contains(env, want) || isZombie(pid) {
			continue
		}
		cl, _ := os.ReadFile("/proc/" + en.Name() + "/cmdline")
		out = append(out, fmt.Sprintf("pid %d: %s", pid, bytes.ReplaceAll(cl, []byte{0}, []byte{' '})))
	}
	return out
}

// waitMarked polls (bounded) until at least n marked processes run.
func waitMarked(t *testing.T, mark string, n int, limit time.Duration, out func() string) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for len(markedProcesses(mark)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("fewer than %d agent processes after %s: %v\n%s", n, limit, markedProcesses(mark), out())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestCampaignSpawnSiteSignalLeavesNoDescendant: spawn-site, the per-site runner of
// the agent wrappers, exits within 5 s of SIGINT and of SIGTERM, and nothing its
// agents started (a shell agent's background sleeps, one of them deaf to SIGTERM)
// outlives it.
func TestCampaignSpawnSiteSignalLeavesNoDescendant(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			e := newEnv(t)
			mark := fmt.Sprintf("ss-%d", rand.IntN(1e9))
			camp := procsCampaign(t, mark)
			run := "procs-" + strings.ToLower(strings.ReplaceAll(sig.String(), " ", ""))
			url, tok := exchangeServe(t, e, run, camp)
			cmd := exec.Command(binary, "campaign", "spawn-site", camp, "--run-id", run, "--agents", "a,b", "--exchange-url", url, "--site", "here")
			cmd.Env = append(append([]string(nil), e.vars...), "MOSAIC_EXCHANGE_TOKEN="+tok)
			var out syncBuffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				if cmd.ProcessState == nil {
					_ = cmd.Process.Kill()
					<-done
				}
				for _, p := range markedProcesses(mark) { // never leave the test's own processes behind
					if pid, err := strconv.Atoi(strings.TrimSuffix(strings.Fields(p)[1], ":")); err == nil {
						_ = syscall.Kill(pid, syscall.SIGKILL)
					}
				}
			})
			// two shells and three sleeps: the check below would prove nothing without them
			waitMarked(t, mark, 5, 30*time.Second, out.String)
			start := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("spawn-site still running 5s after %s:\n%s", sig, out.String())
			}
			took := time.Since(start)
			t.Logf("spawn-site exited %.2fs after %s (%s)", took.Seconds(), sig, cmd.ProcessState)
			if left := markedProcesses(mark); len(left) > 0 {
				t.Errorf("left behind after %s: %v\n%s", sig, left, out.String())
			}
			for _, want := range []string{"[a] mosaic-agent a: mailbox terminated", "[b] mosaic-agent b: mailbox terminated"} {
				if !strings.Contains(out.String(), want) {
					t.Errorf("output lacks %q:\n%s", want, out.String())
				}
			}
		})
	}
}

// TestRigCampaignStopLeavesNoProcess: `campaign stop RUN` of a run launched on a
// kind-local site (the rig's alpha cluster, submit mode) leaves no process of the
// run: no launcher, spawn-site, agent or agent's child, and no job.
func TestRigCampaignStopLeavesNoProcess(t *testing.T) {
	r := needRig(t)
	e := newEnv(t)
	e.vars = append(e.vars, "SLURM_CONF="+r.env.Get(t, "SLURM_CONF_ALPHA"))
	sites := r.localSites()
	mark := fmt.Sprintf("stop-%d", rand.IntN(1e9))
	camp := procsCampaign(t, mark)
	run := fmt.Sprintf("e2e-procstop-%d", rand.IntN(1e9))
	l := startLaunch(t, e, camp, "--run-id", run, "--sites", sites, "--mosaic-bin", binary,
		"--site", "alpha:queue=cpu;walltime=00:05:00;agents=a,b", "--startup-timeout", "120s")
	l.waitFor("all 1 sites ready", 150*time.Second)
	waitMarked(t, mark, 5, 30*time.Second, l.output)
	if len(processesMentioning(run)) == 0 {
		t.Fatalf("no process mentions run %s while ready; the check below would prove nothing", run)
	}
	so, se, code := e.run("campaign", "stop", run, "--sites", sites)
	if code != 0 {
		t.Fatalf("campaign stop: exit %d\n%s%s", code, so, se)
	}
	t.Logf("campaign stop:\n%s%s", so, se)
	if err := l.wait(60 * time.Second); err == nil {
		t.Errorf("the launcher exited 0 after campaign stop interrupted it\n%s", l.output())
	}
	var left []string
	for range 60 { // bounded: 30 s for the site to confirm the cancel and its processes to go
		left = append(append(r.queued("alpha", "mosaic-c-"+run), processesMentioning(run)...), markedProcesses(mark)...)
		if len(left) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("left behind after campaign stop: %v\n%s", left, l.output())
	}
}
