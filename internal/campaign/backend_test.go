package campaign

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
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
// opens its log before anything else.
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
	order := []string{"export ARGO_USER=jinchu.li", "export NO_PROXY=127.0.0.1,localhost,.alcf.anl.gov", "source /etc/site-env.sh",
		"exec >> site.log 2>&1", "unset MOSAIC_EXCHANGE_TOKEN", "exec /opt/mosaic campaign spawn-site"}
	last := -1
	for _, w := range order {
		i := strings.Index(s, w)
		if i < 0 || i < last {
			t.Fatalf("%q missing or out of order in:\n%s", w, s)
		}
		last = i
	}
	if strings.Count(s, "source ") != 1 {
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
