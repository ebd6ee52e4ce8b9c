package dialect

import (
	"errors"
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
		{"missing", "-", 1, "", []string{"No such file or directory\n", "mosaic: env script %s failed (exit 1)\n"}},
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
			last := -1
			for _, w := range tc.stderr {
				w = strings.ReplaceAll(w, "%s", p)
				i := strings.Index(errOut, w)
				if i < 0 || i < last {
					t.Errorf("stderr lacks %q (or out of order): %q", w, errOut)
				}
				last = i
			}
			if tc.stderr == nil && errOut != "" {
				t.Errorf("stderr %q, want none", errOut)
			}
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
