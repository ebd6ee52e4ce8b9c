// Package rigenv lets tests find Mosaic's Slurm test rig (scripts/testrig/up.sh), which
// writes a KEY=VALUE env file when it is ready. Tests skip when the rig is not running,
// except under CI=true, where a missing rig is a failure.
package rigenv

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// DefaultPath is where scripts/testrig/up.sh writes the env file.
const DefaultPath = "/tmp/mosaic-rig/rig.env"

// Path returns $MOSAIC_RIG_ENV or DefaultPath.
func Path() string {
	if p := os.Getenv("MOSAIC_RIG_ENV"); p != "" {
		return p
	}
	return DefaultPath
}

// Env is the rig's settings (SLURM_CONF_ALPHA, RIG_SSH_CONFIG, ...).
type Env map[string]string

// Get returns a key or fails the test when it is missing.
func (e Env) Get(t testing.TB, key string) string {
	t.Helper()
	v, ok := e[key]
	if !ok || v == "" {
		t.Fatalf("rig env %s has no %s; re-run scripts/testrig/up.sh", Path(), key)
	}
	return v
}

// Read parses an env file of KEY=VALUE lines ('#' comments and blank lines ignored).
func Read(path string) (Env, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := Env{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want KEY=VALUE, got %q", path, n, line)
		}
		env[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return env, sc.Err()
}

// Require returns the rig's env, skipping the test when the rig is not running
// (failing instead when CI=true).
func Require(t testing.TB) Env {
	t.Helper()
	env, err := Read(Path())
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Slurm test rig not running (CI=true, so this is a failure): %v; start it with scripts/testrig/up.sh", err)
			return nil
		}
		t.Skip("Slurm test rig not running: start it with scripts/testrig/up.sh")
	}
	return env
}

// Missing skips a test whose dependency (a program, a data file) is absent, except
// under CI=true, where .ci/run installs every dependency and a missing one is a
// failure rather than a silently skipped test.
func Missing(t testing.TB, msg string) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true, so this is a failure)", msg)
	}
	t.Skip(msg)
}

// NeedTool returns the path of program name, or calls Missing with how to install it.
func NeedTool(t testing.TB, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, fmt.Sprintf("%s is not installed; install it with %s to run this test", name, install))
	}
	return p
}
