package pbs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestRenderScriptEnvScript: an ordinary job script sources the site's env script
// after cd and before the command, checked — run with bash, a failing env script ends
// the job with status 1 and "mosaic: env script X failed (exit N)" on stderr (the
// job's .err file) and the command never runs; a good one's exports reach it. No env
// script, or a spec whose command sources it itself (NoSiteEnvScript, a campaign
// slice), renders no source line at all.
func TestRenderScriptEnvScript(t *testing.T) {
	for _, tc := range []struct {
		name, env string // env: the env script's body; "" = no env script in the catalog
		noSite    bool
		code      int
		stdout    string
		stderr    string
	}{
		{"good env script", "export MARK=module-loaded\n", false, 0, "ran MARK=module-loaded\n", ""},
		{"failing env script", "echo loading\nexit 7\n", false, 1, "loading\n", "mosaic: env script %s failed (exit 7)\n"},
		{"failing last command", "false\n", false, 1, "", "mosaic: env script %s failed (exit 1)\n" + fmt.Sprintf(dialect.LastCommandHint, 1) + "\n"},
		{"no env script", "", false, 0, "ran MARK=\n", ""},
		{"sourced by the command", "exit 7\n", true, 0, "ran MARK=\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tmp := t.TempDir()
			envScript := ""
			if tc.env != "" {
				envScript = filepath.Join(tmp, "site-env.sh")
				if err := os.WriteFile(envScript, []byte(tc.env), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			sp := model.JobSpec{Tag: "mosaic-t-1", Name: "t", Partition: "workq", Nodes: 1, Walltime: model.Duration(time.Hour),
				WorkDir: tmp, Command: `echo "ran MARK=$MARK"`, NoSiteEnvScript: tc.noSite}
			f := dialect.JobFiles{Script: "/w/mosaic/mosaic-t-1.pbs", Stdout: "/w/mosaic/mosaic-t-1.out", Stderr: "/w/mosaic/mosaic-t-1.err"}
			b, err := RenderScript(sp, f, envScript, "")
			if err != nil {
				t.Fatal(err)
			}
			s := string(b)
			if want := envScript != "" && !tc.noSite; strings.Contains(s, "\n. ") != want || strings.Contains(s, "trap ") != want {
				t.Errorf("source/trap lines present = %v, want %v:\n%s", !want, want, s)
			}
			if envScript != "" && !tc.noSite {
				cd, src, body := strings.Index(s, "cd "+tmp), strings.Index(s, "\n. "+envScript+"\n"), strings.Index(s, `echo "ran`)
				if cd < 0 || src < cd || body < src {
					t.Errorf("want cd, then the env script, then the command:\n%s", s)
				}
			}
			// bash, as the job runs; and sh (dash), as a site that ignored the
			// script's interpreter would run it.
			for _, shell := range []string{"bash", "sh"} {
				cmd := exec.Command(shell, "-c", s)
				cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
				var out, errOut strings.Builder
				cmd.Stdout, cmd.Stderr = &out, &errOut
				code := 0
				var ee *exec.ExitError
				if err := cmd.Run(); errors.As(err, &ee) {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				if want := strings.ReplaceAll(tc.stderr, "%s", envScript); code != tc.code || out.String() != tc.stdout || errOut.String() != want {
					t.Errorf("%s: exit %d stdout %q stderr %q, want exit %d stdout %q stderr %q", shell, code, out.String(), errOut.String(), tc.code, tc.stdout, want)
				}
			}
		})
	}
}

// TestRenderScriptForcesBash: OpenPBS runs a job under the user's login shell unless
// -S names one (the #! line is not read), so every script asks for bash in its
// directive block, before the first command; under sh or tcsh the env-script check
// and the command's bash syntax would break.
func TestRenderScriptForcesBash(t *testing.T) {
	sp := model.JobSpec{Tag: "mosaic-t-1", Name: "t", Partition: "workq", Nodes: 1, Walltime: model.Duration(time.Hour), Command: "true"}
	b, err := RenderScript(sp, dialect.JobFiles{Stdout: "/w/o", Stderr: "/w/e"}, "/opt/site/env.sh", "")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, first := strings.Index(s, "\n#PBS -S /bin/bash\n"), strings.Index(s, "\n#PBS ")
	if i < 0 || !strings.HasPrefix(s, "#!/bin/bash\n") || first < 0 || i != first {
		t.Errorf("want #!/bin/bash, then #PBS -S /bin/bash as the first directive:\n%s", s)
	}
}
