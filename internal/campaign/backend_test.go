package campaign

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/dialect/dialects"
	"github.com/mosaic-hpc/mosaic/internal/dialect/slurm"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

func testLaunch(t *testing.T, sp SiteSpec) SiteLaunch {
	rd, err := CreateRunDir(filepath.Join(t.TempDir(), "runs"), RunState{RunID: "r9", Sites: []SiteState{{SiteSpec: sp}}})
	if err != nil {
		t.Fatal(err)
	}
	return SiteLaunch{Spec: sp, RunID: "r9", Campaign: "/c/chat.jsonc", MosaicBin: "/opt/mosaic", Exchange: "http://login:1",
		Tokens: map[string]string{"coordinator": "mxa_t"}, Startup: 10 * time.Minute, Forward: map[string]string{"ARGO_USER": "jinchu.li", "NO_PROXY": "127.0.0.1,localhost,.alcf.anl.gov"}, Dir: rd}
}

// TestSubmitScriptExportsBeforeEnvScript: the rendered sbatch script exports
// the forwarded values before it sources the site's env script, and the slice
// opens its log before the env script is sourced (once, by the slice, checked).
func TestSubmitScriptExportsBeforeEnvScript(t *testing.T) {
	sp := SiteSpec{Name: "alpha", Mode: ModeSubmit, Queue: "cpu", Walltime: model.Duration(time.Hour), Agents: []string{"coordinator"}}
	sys := site.System{Name: "alpha", Kind: site.KindLocal, Accounts: []string{"rigacct"}, EnvScript: "/etc/site-env.sh"}
	b, err := NewSubmitBackend(sys, testLaunch(t, sp), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec := b.JobSpec("/work/mosaic-campaigns/r9/alpha")
	if spec.Account != "rigacct" || spec.Tag != "mosaic-c-r9-alpha" {
		t.Errorf("job spec: %+v", spec)
	}
	script, err := slurm.RenderScript(spec, dialect.JobFiles{Script: "/w/s", Stdout: "/w/o", Stderr: "/w/e"}, sys.EnvScript)
	if err != nil {
		t.Fatal(err)
	}
	s := string(script)
	order := []string{"export ARGO_USER=jinchu.li", "export NO_PROXY=127.0.0.1,localhost,.alcf.anl.gov",
		"exec >> site.log 2>&1", "trap ", "\n. /etc/site-env.sh\n", "mosaic_env_rc=$?", "trap - EXIT",
		"unset MOSAIC_EXCHANGE_TOKEN", "exec /opt/mosaic campaign spawn-site"}
	last := -1
	for _, w := range order {
		i := strings.Index(s, w)
		if i < 0 || i < last {
			t.Fatalf("%q missing or out of order in:\n%s", w, s)
		}
		last = i
	}
	if strings.Count(s, "\n. ") != 1 {
		t.Errorf("the env script must be sourced once:\n%s", s)
	}
}

// TestAttachPBSJobRebuildsAllocationEnv: on a PBS site a job id means nested
// ssh with PBS_JOBID and PBS_NODEFILE rebuilt; on Slurm, srun --overlap.
func TestAttachPBSJobRebuildsAllocationEnv(t *testing.T) {
	sp := SiteSpec{Name: "aurora", Mode: ModeAttach, Host: "x4708c1s0b0n0", JobID: "8568282.aurora-pbs-0001", Agents: []string{"a"}}
	pbs, err := NewAttachBackend(site.System{Name: "aurora", Kind: site.KindLocal, Dialect: site.DialectPBS}, testLaunch(t, sp), nil)
	if err != nil {
		t.Fatal(err)
	}
	s := pbs.outerScript("/d")
	for _, w := range []string{"exec ssh -tt", "PBS_JOBID=8568282.aurora-pbs-0001", "PBS_NODEFILE=/var/spool/pbs/aux/8568282.aurora-pbs-0001", "x4708c1s0b0n0"} {
		if !strings.Contains(s, w) {
			t.Errorf("PBS attach script lacks %q:\n%s", w, s)
		}
	}
	if strings.Contains(s, "srun") {
		t.Errorf("PBS attach must not use srun:\n%s", s)
	}
	sp.Name = "beta"
	sl, err := NewAttachBackend(site.System{Name: "beta", Kind: site.KindLocal}, testLaunch(t, sp), nil)
	if err != nil {
		t.Fatal(err)
	}
	s = sl.outerScript("/d")
	for _, w := range []string{"exec >> site.log 2>&1", "exec srun --jobid=8568282.aurora-pbs-0001 --overlap -w x4708c1s0b0n0", "--job-name=mosaic-c-r9-beta"} {
		if !strings.Contains(s, w) {
			t.Errorf("Slurm attach script lacks %q:\n%s", w, s)
		}
	}
	if strings.Index(s, "exec >> site.log") > strings.Index(s, "srun") {
		t.Errorf("the log must be opened before srun can fail:\n%s", s)
	}
}

// TestSubmitScriptEnvScriptChecked runs the batch script both dialects render for a
// submit-mode slice with bash, as the scheduler would: a failing env script (a
// non-zero status, an `exit`, a missing file) is reported in site.log — the tail the
// launcher shows — not in the scheduler's stdout/stderr files, the job exits 1 and
// spawn-site never starts; a good one's exports and the forwarded values reach it.
func TestSubmitScriptEnvScriptChecked(t *testing.T) {
	for _, dl := range []string{site.DialectSlurm, site.DialectPBS} {
		for _, tc := range []struct {
			name, env string // env: the env script's body; "-" = no such file
			code      int
			log       []string
		}{
			{"exit 3", "echo loading modules\nexit 3\n", 1, []string{"mosaic: slice starting on ", "loading modules\n", "mosaic: env script %s failed (exit 3)\n"}},
			{"last command fails", "module_load_that_fails() { return 4; }\nmodule_load_that_fails\n", 1, []string{"mosaic: env script %s failed (exit 4)\n"}},
			{"set -e in the env script", "set -e\nfalse\necho not reached\n", 1, []string{"mosaic: env script %s failed (exit 1)\n"}},
			{"missing", "-", 1, []string{"No such file or directory", "mosaic: env script %s failed (exit 1)\n"}},
			{"good", "export SITE_MARK=from-env-script\n", 0, []string{"spawn-site ran: SITE_MARK=from-env-script ARGO_USER=jinchu.li token=\n"}},
		} {
			t.Run(dl+"/"+tc.name, func(t *testing.T) {
				tmp := t.TempDir()
				dir, envScript, bin := filepath.Join(tmp, "site"), filepath.Join(tmp, "it's env.sh"), filepath.Join(tmp, "mosaic")
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				if tc.env != "-" {
					if err := os.WriteFile(envScript, []byte(tc.env), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				stub := "#!/bin/sh\necho \"spawn-site ran: SITE_MARK=$SITE_MARK ARGO_USER=$ARGO_USER token=$MOSAIC_EXCHANGE_TOKEN\"\n"
				if err := os.WriteFile(bin, []byte(stub), 0o700); err != nil {
					t.Fatal(err)
				}
				sp := SiteSpec{Name: "alpha", Mode: ModeSubmit, Queue: "cpu", Walltime: model.Duration(time.Hour), Agents: []string{"coordinator"}}
				sys := site.System{Name: "alpha", Kind: site.KindLocal, Dialect: dl, Accounts: []string{"rigacct"}, EnvScript: envScript}
				l := testLaunch(t, sp)
				l.MosaicBin = bin
				b, err := NewSubmitBackend(sys, l, nil, nil)
				if err != nil {
					t.Fatal(err)
				}
				d, err := dialects.For(sys)
				if err != nil {
					t.Fatal(err)
				}
				script, err := d.RenderJob(b.JobSpec(dir), dialect.JobFiles{Script: tmp + "/job", Stdout: tmp + "/job.out", Stderr: tmp + "/job.err"})
				if err != nil {
					t.Fatal(err)
				}
				if n := strings.Count(string(script), "\n. "); n != 1 {
					t.Errorf("the env script is sourced %d times, want once (by the slice, not the dialect):\n%s", n, script)
				}
				cmd := exec.Command("bash", "-c", string(script))
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "MOSAIC_EXCHANGE_TOKEN=mxo_operator"}
				var out, errOut strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errOut
				err = cmd.Run()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				logData, _ := os.ReadFile(filepath.Join(dir, "site.log"))
				log := string(logData)
				if code != tc.code {
					t.Errorf("job exit %d, want %d; site.log:\n%s", code, tc.code, log)
				}
				last := -1
				for _, w := range tc.log {
					if strings.Contains(w, "%s") {
						w = fmt.Sprintf(w, envScript)
					}
					i := strings.Index(log, w)
					if i < 0 || i < last {
						t.Errorf("site.log lacks %q (or out of order):\n%s", w, log)
					}
					last = i
				}
				if tc.code != 0 && strings.Contains(log, "spawn-site ran") {
					t.Errorf("spawn-site ran after a failed env script:\n%s", log)
				}
				if out.Len() > 0 || errOut.Len() > 0 {
					t.Errorf("the scheduler's files got output (the launcher never shows them): stdout %q stderr %q", out.String(), errOut.String())
				}
			})
		}
	}
}
