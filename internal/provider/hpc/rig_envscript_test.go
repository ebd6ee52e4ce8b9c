package hpc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// sharedEnvScript writes an env script every rig user can read (the PBS login user is
// not root): it fails with status 5 when the job's ENV_MODE is "fail", else exports MARK.
func sharedEnvScript(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "mosaic-envscript-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "site-env.sh")
	body := "if [ \"$ENV_MODE\" = fail ]; then echo 'module load: no such module' >&2; exit 5; fi\nexport MARK=loaded\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestRigEnvScriptChecked: on the real Slurm and PBS sites, an ordinary job whose
// site env script fails ends failed with exit 1, "mosaic: env script X failed (exit 5)"
// after the env script's own message in its stderr, and its command never ran; with
// the env script succeeding, its exports reach the command.
func TestRigEnvScriptChecked(t *testing.T) {
	for _, dl := range []string{site.DialectSlurm, site.DialectPBS} {
		t.Run(dl, func(t *testing.T) {
			t.Parallel()
			var env rigenv.Env
			if dl == site.DialectPBS {
				env = rigenv.RequirePBS(t)
			} else {
				env = rigenv.Require(t)
			}
			envScript := sharedEnvScript(t)
			sys := site.System{Name: "alpha@rig", Kind: site.KindSSH, Dialect: dl, Accounts: []string{env.Get(t, "RIG_ACCOUNT")},
				Host: env.Get(t, "RIG_SSH_HOST_ALPHA"), SSH: &site.SSH{ConfigFile: env.Get(t, "RIG_SSH_CONFIG")},
				WorkDir: env.Get(t, "RIG_WORKDIR_ALPHA"), EnvScript: envScript}
			queue := "cpu"
			if dl == site.DialectPBS {
				sys.Name, sys.Host, sys.WorkDir, queue = "pbs@rig", env.Get(t, "RIG_SSH_HOST_PBS"), env.Get(t, "RIG_PBS_WORKDIR"), env.Get(t, "RIG_PBS_QUEUE_CPU")
			}
			p, err := New(sys)
			if err != nil {
				t.Fatal(err)
			}
			p, _ = counted(t, p)
			ctx := context.Background()
			ids := map[string]string{}
			for _, mode := range []string{"ok", "fail"} {
				sp := spec(t, "env"+mode, queue, `echo "ran MARK=$MARK"`, 2*time.Minute)
				sp.Env = map[string]string{"ENV_MODE": mode}
				id, err := p.Submit(ctx, sp)
				if err != nil {
					t.Fatalf("submit %s: %v", mode, err)
				}
				ids[mode] = id
				t.Cleanup(func() { _ = p.Cancel(context.Background(), []string{id}) })
			}
			st := waitState(t, p, ids["ok"], 60*time.Second, final)
			logs, err := p.Logs(ctx, ids["ok"], 4096)
			if err != nil {
				t.Fatal(err)
			}
			if st.State != model.JobSucceeded || logs.Stdout != "ran MARK=loaded\n" || logs.Stderr != "" {
				t.Errorf("job with a good env script: %s exit %d, stdout %q stderr %q", st.State, st.ExitCode, logs.Stdout, logs.Stderr)
			}
			st = waitState(t, p, ids["fail"], 60*time.Second, final)
			logs, err = p.Logs(ctx, ids["fail"], 4096)
			if err != nil {
				t.Fatal(err)
			}
			want := "module load: no such module\nmosaic: env script " + envScript + " failed (exit 5)\n"
			if st.State != model.JobFailed || st.ExitCode != 1 || strings.Contains(logs.Stdout, "ran") || logs.Stderr != want {
				t.Errorf("job with a failing env script: %s exit %d, stdout %q stderr %q; want failed, exit 1, no output, stderr %q",
					st.State, st.ExitCode, logs.Stdout, logs.Stderr, want)
			}
		})
	}
}
