package e2e

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The site's env_script in submit mode, on both dialects: the slice redirects into
// site.log, then sources it, checked, so that its failure is in the log tail the
// launcher prints, at once; its exports (and the forwarded values before it) reach
// the agents; the batch script does not source it a second time.

// envScriptFixture is a directory every rig user can read (the PBS login user is not
// root), holding the campaign file of one agent, probe, that prints what it sees and
// exits after the bootstrap, and an env script per case.
type envScriptFixture struct {
	dir, campaign string
}

func newEnvScriptFixture(t *testing.T) *envScriptFixture {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "mosaic-e2e-envscript-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil { // the env script's counter is written by the PBS user
		t.Fatal(err)
	}
	f := &envScriptFixture{dir: dir, campaign: filepath.Join(dir, "probe.jsonc")}
	f.write(t, "probe.jsonc", `{
  "name": "envscript-probe",
  "initial_agent": "probe",
  "user_task": "report the environment",
  "agents": [
    {"name": "probe", "command": ["sh", "-c", "echo \"probe sees SITE_MARK=$SITE_MARK E2E_FWD=$E2E_FWD\"; read -r line; echo probe: bootstrapped"]}
  ],
  "exchange": {"backend": "memory"}
}
`)
	return f
}

func (f *envScriptFixture) write(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// withEnvScript returns a copy of the sites file at sites whose system sys sources envScript.
func withEnvScript(t *testing.T, sites, sys, envScript string) string {
	t.Helper()
	b, err := os.ReadFile(sites)
	if err != nil {
		t.Fatal(err)
	}
	head := "  - name: " + sys + "\n"
	if !strings.Contains(string(b), head) {
		t.Fatalf("no system %s in %s", sys, b)
	}
	s := strings.Replace(string(b), head, head+"    env_script: "+envScript+"\n", 1)
	p := filepath.Join(t.TempDir(), "sites-envscript.yaml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// runSiteLog is the site log the run directory of run names for its only site.
func runSiteLog(t *testing.T, e *env, run string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(e.home, "state", "mosaic", "campaigns", run, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	var st struct {
		Sites []struct {
			Log string `json:"log"`
		} `json:"sites"`
	}
	if err := json.Unmarshal(data, &st); err != nil || len(st.Sites) != 1 || st.Sites[0].Log == "" {
		t.Fatalf("run directory (%v): %s", err, data)
	}
	b, err := os.ReadFile(st.Sites[0].Log) // the rig's sites share this host's file system
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

type envScriptSite struct {
	name, sys, spec string // test name, catalog system, --site value
	sites           func(r *rig) string
	bin             func(r *rig) string
	script          func(r *rig, run string) string // the batch script Mosaic wrote for the run's job
}

func envScriptSites() []envScriptSite {
	return []envScriptSite{
		{"slurm", "alpha", "alpha:queue=cpu;walltime=00:05:00;agents=probe", func(r *rig) string { return r.sites() }, func(*rig) string { return binary },
			func(r *rig, run string) string {
				return filepath.Join(r.env.Get(r.t, "RIG_WORKDIR_ALPHA"), "mosaic", "mosaic-c-"+run+"-alpha.sbatch")
			}},
		{"pbs", "pbs", "pbs:queue=workq;walltime=00:05:00;agents=probe", func(r *rig) string { return r.sitesWithPBS() }, func(r *rig) string { return r.sharedBinary() },
			func(r *rig, run string) string {
				return filepath.Join(r.env.Get(r.t, "RIG_PBS_WORKDIR"), "mosaic", "mosaic-c-"+run+"-pbs.pbs")
			}},
	}
}

func needSiteRig(t *testing.T, name string) *rig {
	if name == "pbs" {
		return needPBSRig(t)
	}
	return needRig(t)
}

// TestRigCampaignSubmitEnvScriptFails: a submit-mode site whose env script fails
// (after printing a line of its own, exit 3) fails the launch within seconds, not
// after the startup timeout: the launcher's error carries site.log's tail with the
// env script's output and "mosaic: env script X failed (exit 3)", the job ended
// (nothing of it left queued), and the agent never started.
func TestRigCampaignSubmitEnvScriptFails(t *testing.T) {
	for _, s := range envScriptSites() {
		t.Run(s.name, func(t *testing.T) {
			r := needSiteRig(t, s.name)
			e := newEnv(t)
			f := newEnvScriptFixture(t)
			envScript := f.write(t, "bad-env.sh", "echo 'loading the site modules'\nexit 3\n")
			run := fmt.Sprintf("e2e-envfail-%s-%d", s.name, rand.IntN(1e9))
			start := time.Now()
			l := startLaunch(t, e, "--campaign", f.campaign, "--run-id", run, "--sites", withEnvScript(t, s.sites(r), s.sys, envScript),
				"--mosaic-bin", s.bin(r), "--site", s.spec, "--startup-timeout", "120s")
			err := l.wait(60 * time.Second)
			took := time.Since(start)
			out := l.output()
			t.Logf("launch output (%s):\n%s", took.Round(time.Second), out)
			if err == nil {
				t.Fatal("the launch succeeded with a failing env script")
			}
			for _, want := range []string{"--- tail of ", "loading the site modules\n", "mosaic: env script " + envScript + " failed (exit 3)\n"} {
				if !strings.Contains(out, want) {
					t.Errorf("launch output lacks %q", want)
				}
			}
			if strings.Contains(out, "not registered after") {
				t.Errorf("the launch waited for the startup timeout instead of failing on the ended job")
			}
			if took > 45*time.Second {
				t.Errorf("the launch took %s to report a failed env script", took)
			}
			if log := runSiteLog(t, e, run); strings.Contains(log, "probe sees") {
				t.Errorf("the agent started after a failed env script:\n%s", log)
			}
			prefix := "mosaic-c-" + run
			if s.name == "pbs" {
				if q := r.pbsQueued(prefix); len(q) > 0 {
					t.Errorf("the job is still in qstat: %v", q)
				}
			} else if q := r.queued("alpha", prefix); len(q) > 0 {
				t.Errorf("the job is still queued on alpha: %v", q)
			}
		})
	}
}

// TestRigCampaignSubmitEnvScriptExports: a good env script's export and a
// --forward-env value reach the agent of a submit-mode slice; the env script is
// sourced once, by the slice (its counter has one line, and the scheduler's output
// file none of its output). On Slurm the job goes through a running `mosaic serve`
// (the launcher hands it over the core's API), on PBS through the launcher's own engine.
func TestRigCampaignSubmitEnvScriptExports(t *testing.T) {
	for _, s := range envScriptSites() {
		t.Run(s.name, func(t *testing.T) {
			r := needSiteRig(t, s.name)
			e := newEnv(t)
			f := newEnvScriptFixture(t)
			count := filepath.Join(f.dir, "sourced")
			envScript := f.write(t, "good-env.sh", fmt.Sprintf("echo \"env script sees E2E_FWD=$E2E_FWD\"\necho once >> %s\nexport SITE_MARK=from-env-script\n", count))
			sites := withEnvScript(t, s.sites(r), s.sys, envScript)
			e.vars = append(e.vars, "E2E_FWD=forwarded-value")
			if s.name == "slurm" {
				e.serveLogged("--sites", sites, "--tick", "2s")
			}
			run := fmt.Sprintf("e2e-envok-%s-%d", s.name, rand.IntN(1e9))
			l := startLaunch(t, e, "--campaign", f.campaign, "--run-id", run, "--sites", sites, "--mosaic-bin", s.bin(r),
				"--site", s.spec, "--forward-env", "E2E_FWD", "--auto-bootstrap", "--startup-timeout", "120s")
			if err := l.wait(90 * time.Second); err != nil {
				t.Fatalf("launch failed: %v\n%s", err, l.output())
			}
			if s.name == "slurm" && !strings.Contains(l.output(), "is owned by the core at http://"+e.addr) {
				t.Errorf("the launcher did not hand its job to the serve:\n%s", l.output())
			}
			log := runSiteLog(t, e, run)
			t.Logf("site.log:\n%s", log)
			for _, want := range []string{"env script sees E2E_FWD=forwarded-value\n", "probe sees SITE_MARK=from-env-script E2E_FWD=forwarded-value", "probe: bootstrapped"} {
				if !strings.Contains(log, want) {
					t.Errorf("site.log lacks %q", want)
				}
			}
			if b, err := os.ReadFile(count); err != nil || string(b) != "once\n" {
				t.Errorf("the env script was sourced %q times (%v), want once", b, err)
			}
			// The forwarded value is written only into the batch script, which no other
			// user can read.
			script := s.script(r, run)
			fi, err := os.Stat(script)
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(script)
			if err != nil || !strings.Contains(string(b), "export E2E_FWD=forwarded-value\n") || fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("batch script %s (mode %v, %v) must hold the forwarded export and be private:\n%s", script, fi.Mode(), err, b)
			}
		})
	}
}
