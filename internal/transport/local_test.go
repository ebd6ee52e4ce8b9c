package transport

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLocalExitCodeIsResult(t *testing.T) {
	l := &Local{}
	res, err := l.Run(context.Background(), []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 3 || string(res.Stdout) != "out\n" || string(res.Stderr) != "err\n" {
		t.Fatalf("got %+v", res)
	}
	if res.Message() != "err" {
		t.Errorf("Message() = %q", res.Message())
	}
}

func TestLocalStdinAndEnv(t *testing.T) {
	dir := t.TempDir()
	l := &Local{Env: []string{"MOSAIC_T=42"}, Dir: dir}
	res, err := l.Run(context.Background(), []string{"sh", "-c", `cat > f; echo "$MOSAIC_T"`}, strings.NewReader("payload"))
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v %+v", err, res)
	}
	if strings.TrimSpace(string(res.Stdout)) != "42" {
		t.Errorf("env not passed: %q", res.Stdout)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "f"))
	if string(b) != "payload" {
		t.Errorf("stdin not passed: %q", b)
	}
}

func TestLocalTimeoutKillsProcessGroup(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pid")
	l := &Local{Limits: Limits{Timeout: 300 * time.Millisecond}}
	// The grandchild writes its pid, then sleeps; the group kill must take it too.
	_, err := l.Run(context.Background(), []string{"sh", "-c", "sh -c 'echo $$ > " + marker + "; exec sleep 30' & wait"}, nil)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("want ErrTimeout, got %v", err)
	}
	b, rerr := os.ReadFile(marker)
	if rerr != nil {
		t.Fatalf("grandchild never started: %v", rerr)
	}
	pid := strings.TrimSpace(string(b))
	deadline := time.Now().Add(3 * time.Second)
	for {
		st, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil || strings.Contains(string(st), ") Z ") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %s still alive after timeout", pid)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestLocalContextCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := (&Local{}).Run(ctx, []string{"sleep", "30"}, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
}

func TestLocalOutputCap(t *testing.T) {
	l := &Local{Limits: Limits{MaxOutput: 1000}}
	res, err := l.Run(context.Background(), []string{"sh", "-c", "yes"}, nil)
	if !errors.Is(err, ErrOutputTooLarge) {
		t.Fatalf("want ErrOutputTooLarge, got %v", err)
	}
	if len(res.Stdout) != 1000 {
		t.Errorf("kept %d bytes, want the cap 1000", len(res.Stdout))
	}
	// Exactly at the cap is fine.
	res, err = l.Run(context.Background(), []string{"sh", "-c", "head -c 1000 /dev/zero"}, nil)
	if err != nil || len(res.Stdout) != 1000 {
		t.Fatalf("at cap: %v, %d bytes", err, len(res.Stdout))
	}
}

func TestLocalMissingProgram(t *testing.T) {
	_, err := (&Local{}).Run(context.Background(), []string{"/nonexistent/mosaic-nope"}, nil)
	if err == nil {
		t.Fatal("want an error for a missing program")
	}
	if _, err := (&Local{}).Run(context.Background(), nil, nil); err == nil {
		t.Fatal("want an error for an empty argv")
	}
}

// TestLocalCleanEnvironment: local commands (look-around, sbatch, which exports its
// caller's environment into the job) never see Mosaic's keys; the login basics and
// scheduler configuration pass, and so does what the site explicitly sets.
func TestLocalCleanEnvironment(t *testing.T) {
	t.Setenv("MOSAIC_LLM_API_KEY", "sk-test-secret")
	t.Setenv("GLOBUS_CLIENT_SECRET", "globus-test-secret")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
	t.Setenv("MOSAIC_TOKEN", "api-test-secret")
	t.Setenv("SLURM_CONF", "/etc/slurm/test.conf")
	t.Setenv("LANG", "C.UTF-8")
	l := &Local{Env: []string{"SITE_SET=1"}}
	for _, argv := range [][]string{{"env"}, {"cat", "/proc/self/environ"}} {
		res, err := l.Run(context.Background(), argv, nil)
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("%v: %v %+v", argv, err, res)
		}
		out := strings.ReplaceAll(string(res.Stdout), "\x00", "\n")
		for _, secret := range []string{"sk-test-secret", "globus-test-secret", "sk-ant-test-secret", "api-test-secret", "MOSAIC_LLM_API_KEY"} {
			if strings.Contains(out, secret) {
				t.Errorf("%v printed %s:\n%s", argv, secret, out)
			}
		}
		for _, want := range []string{"PATH=", "HOME=", "LANG=C.UTF-8", "SLURM_CONF=/etc/slurm/test.conf", "SITE_SET=1"} {
			if !strings.Contains(out, want) {
				t.Errorf("%v lacks %s:\n%s", argv, want, out)
			}
		}
	}
	got := CleanEnv([]string{"PATH=/bin", "SECRET=x", "SLURM_CONF=/a", "junk"}, []string{"SLURM_CONF=/b"})
	if strings.Join(got, " ") != "PATH=/bin SLURM_CONF=/a SLURM_CONF=/b" {
		t.Errorf("CleanEnv = %q", got)
	}
}
