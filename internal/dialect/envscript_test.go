package dialect

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// runWithEnvScript runs SourceEnvScript(path) followed by a command with bash and
// returns the exit code, stdout and stderr.
func runWithEnvScript(t testing.TB, path string) (int, string, string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", SourceEnvScript(path)+`echo "command ran MARK=$MARK"`+"\n")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String(), errOut.String()
}

// TestSourceEnvScript: every way an env script can fail — a non-zero status, an exit
// (even exit 0), a `return`, its own `set -e` tripping, a missing file — ends the job
// with status 1 and one "mosaic: env script X failed (exit N)" line on stderr before
// the command runs; a good one's exports reach the command, with its own `set -e`
// still in force. Paths with quotes and spaces are quoted.
func TestSourceEnvScript(t *testing.T) {
	if SourceEnvScript("") != "" {
		t.Errorf("no env script must render nothing, got %q", SourceEnvScript(""))
	}
	for _, tc := range []struct {
		name, body string // "-" = the file does not exist
		code       int
		stdout     string
		stderr     []string
	}{
		{"exports", "export MARK=ok\n", 0, "command ran MARK=ok\n", nil},
		{"set -e kept working", "set -e\nexport MARK=e\n", 0, "command ran MARK=e\n", nil},
		{"exit 3", "echo loading\nexit 3\n", 1, "loading\n", []string{"mosaic: env script %s failed (exit 3)\n"}},
		{"exit 0 ends the job too", "exit 0\n", 1, "", []string{"mosaic: env script %s failed (exit 0)\n"}},
		{"return 2", "return 2\n", 1, "", []string{"mosaic: env script %s failed (exit 2)\n"}},
		{"last command fails", "export MARK=half\nfalse\n", 1, "", []string{"mosaic: env script %s failed (exit 1)\n"}},
		{"its own set -e trips", "set -e\nfalse\necho not reached\n", 1, "", []string{"mosaic: env script %s failed (exit 1)\n"}},
		{"missing", "-", 1, "", []string{"No such file or directory", "mosaic: env script %s failed (exit 1)\n"}},
		// Finding 12: a harmless-looking last line fails the check, and the failure
		// says how to keep it; `true` after it keeps it.
		{"optional last step skipped", "export MARK=x\n[ -n \"$UNSET\" ] && export Y=1\n", 1, "", []string{"mosaic: env script %s failed (exit 1)\n", lastFailedHint(1)}},
		{"optional last step, then true", "export MARK=x\n[ -n \"$UNSET\" ] && export Y=1\ntrue\n", 0, "command ran MARK=x\n", nil},
		// Finding 10: the env script's own EXIT trap neither defeats the check nor is lost.
		{"user trap then exit 0", "trap \"echo cleanup\" EXIT; exit 0\n", 1, "cleanup\n", []string{"mosaic: env script %s failed (exit 0)\n"}},
		{"user trap then a failing last command", "trap 'echo cleanup' EXIT\nfalse\n", 1, "cleanup\n", []string{"mosaic: env script %s failed (exit 1)\n", lastFailedHint(1)}},
		{"user trap kept for the job", "trap 'echo cleanup' EXIT\nexport MARK=t\n", 0, "command ran MARK=t\ncleanup\n", nil},
		{"user trap sees the status", "trap 'echo status=$?' EXIT\nexit 3\n", 1, "status=3\n", []string{"mosaic: env script %s failed (exit 3)\n"}},
		{"user trap reset by the user", "trap 'echo cleanup' EXIT\ntrap - EXIT\nexit 0\n", 1, "", []string{"mosaic: env script %s failed (exit 0)\n"}},
		{"user trap's own exit 0 cannot hide the failure", "trap 'echo cleanup; exit 0' EXIT\nexit 0\n", 1, "cleanup\n", []string{"mosaic: env script %s failed (exit 0)\n"}},
		{"user trap under set -e", "set -e\ntrap 'echo cleanup' EXIT\nexport MARK=e\n", 0, "command ran MARK=e\ncleanup\n", nil},
		{"set -u in the env script", "set -u\nexport MARK=u\n", 0, "command ran MARK=u\n", nil},
		{"user trap on EXIT and a signal", "trap 'echo cleanup' EXIT INT\nexport MARK=s\n", 0, "command ran MARK=s\ncleanup\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), `it's "the" env.sh`)
			if tc.body != "-" {
				if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := runWithEnvScript(t, p)
			if code != tc.code || out != tc.stdout {
				t.Errorf("exit %d stdout %q, want exit %d stdout %q (stderr %q)", code, out, tc.code, tc.stdout, errOut)
			}
			checkOrdered(t, errOut, tc.stderr, p)
		})
	}
}

// FuzzSourceEnvScript: whatever the env script's file name (it comes from the site
// catalog), the rendered lines parse, source exactly that (missing) file, and name it
// in the failure line: no quoting escape runs anything else.
func FuzzSourceEnvScript(f *testing.F) {
	for _, s := range []string{"env.sh", "it's env.sh", `a"b`, "$(id)", "`id`", "x'; echo pwned; '", `\`, "%s%d", "-e", "a b\tc"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, name string) {
		if name == "" || !utf8.ValidString(name) || strings.ContainsAny(name, "/\x00\n\r") || name == "." || name == ".." {
			t.Skip()
		}
		p := filepath.Join(dir, name)
		code, out, errOut := runWithEnvScript(t, p)
		if code != 1 || out != "" || !strings.Contains(errOut, "mosaic: env script "+p+" failed (exit 1)\n") {
			t.Errorf("name %q: exit %d stdout %q stderr %q", name, code, out, errOut)
		}
	})
}

// lastFailedHint is the line that follows "failed (exit n)" when the env script's
// last command, not an exit, failed.
func lastFailedHint(n int) string {
	return fmt.Sprintf("mosaic: its last command returned %d; if that is expected (e.g. a last line `[ -n \"$X\" ] && export Y=1`), end the env script with `true`\n", n)
}

// TestSourceEnvScriptKeepsOtherTraps: while the env script is sourced only its EXIT
// trap is held back; a trap on a signal is installed at once and stays for the job.
func TestSourceEnvScriptKeepsOtherTraps(t *testing.T) {
	p := filepath.Join(t.TempDir(), "env.sh")
	if err := os.WriteFile(p, []byte("trap 'echo got-usr1' USR1\ntrap 'echo bye' EXIT\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("bash", "-c", SourceEnvScript(p)+"kill -USR1 $$\ntrap -p EXIT\necho body\n").CombinedOutput()
	if want := "got-usr1\ntrap -- 'echo bye' EXIT\nbody\nbye\n"; err != nil || string(out) != want {
		t.Errorf("%v, output %q, want %q", err, out, want)
	}
}

// TestSourceEnvScriptUnderSh: the rendered lines are POSIX sh (dash here), for a job
// shell that is not bash: a good env script's exports reach the command, an exit, a
// failing last command and a missing file each end the job with status 1 and the
// failure line, before the command.
func TestSourceEnvScriptUnderSh(t *testing.T) {
	sh, err := exec.LookPath("dash")
	if err != nil {
		sh = "/bin/sh"
	}
	for _, tc := range []struct {
		name, body string // "-" = no such file
		code       int
		stdout     string
		stderr     []string
	}{
		{"exports", "export MARK=sh\n", 0, "command ran MARK=sh\n", nil},
		{"exit 3", "echo loading\nexit 3\n", 1, "loading\n", []string{"mosaic: env script %s failed (exit 3)\n"}},
		{"last command fails", "false\n", 1, "", []string{"mosaic: env script %s failed (exit 1)\n", lastFailedHint(1)}},
		{"return 2", "return 2\n", 1, "", []string{"mosaic: env script %s failed (exit 2)\n", lastFailedHint(2)}},
		{"missing", "-", 1, "", []string{"No such file or directory", "mosaic: env script %s failed (exit 1)\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), `it's env.sh`)
			if tc.body != "-" {
				if err := os.WriteFile(p, []byte(tc.body), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			cmd := exec.Command(sh, "-c", SourceEnvScript(p)+`echo "command ran MARK=$MARK"`+"\n")
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
			if code != tc.code || out.String() != tc.stdout {
				t.Errorf("%s: exit %d stdout %q, want exit %d stdout %q (stderr %q)", sh, code, out.String(), tc.code, tc.stdout, errOut.String())
			}
			checkOrdered(t, errOut.String(), tc.stderr, p)
		})
	}
}

// checkOrdered checks that s holds each of want (%s = path) in order, and nothing
// when want is nil.
func checkOrdered(t *testing.T, s string, want []string, path string) {
	t.Helper()
	last := -1
	for _, w := range want {
		w = strings.ReplaceAll(w, "%s", path)
		i := strings.Index(s, w)
		if i < 0 || i < last {
			t.Errorf("stderr lacks %q (or out of order): %q", w, s)
		}
		last = i
	}
	if want == nil && s != "" {
		t.Errorf("stderr %q, want none", s)
	}
}

// TestSourceEnvScriptRelative: an env script named without a directory is the job
// directory's — the file the existence check reads — not one found on $PATH (where
// `. name` looks first).
func TestSourceEnvScriptRelative(t *testing.T) {
	work, bin := t.TempDir(), t.TempDir()
	for dir, mark := range map[string]string{work: "work", bin: "path"} {
		if err := os.WriteFile(filepath.Join(dir, "env.sh"), []byte("export MARK="+mark+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, sh := range []string{"bash", "sh"} {
		cmd := exec.Command(sh, "-c", SourceEnvScript("env.sh")+`echo "MARK=$MARK"`)
		cmd.Dir, cmd.Env = work, []string{"PATH=" + bin + ":" + os.Getenv("PATH")}
		if out, err := cmd.CombinedOutput(); err != nil || string(out) != "MARK=work\n" {
			t.Errorf("%s: %v, output %q, want MARK=work", sh, err, out)
		}
	}
}
