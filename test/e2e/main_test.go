// Package e2e runs the built mosaic binary the way a user does.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "mosaic-e2e-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "mosaic")
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	build := exec.Command("go", "build", "-o", binary, "./cmd/mosaic")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building mosaic: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// env is an isolated user: own XDG dirs, so tokens and databases never touch the real ones.
type env struct {
	t    *testing.T
	home string
	addr string
	vars []string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	home := t.TempDir()
	e := &env{t: t, home: home, addr: freeAddr(t)}
	e.vars = append(os.Environ(),
		"HOME="+home,
		"XDG_CONFIG_HOME="+filepath.Join(home, "config"),
		"XDG_STATE_HOME="+filepath.Join(home, "state"),
		"MOSAIC_URL=http://"+e.addr,
		"NO_COLOR=1",
	)
	return e
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (e *env) tokenPath() string { return filepath.Join(e.home, "config", "mosaic", "token") }

func (e *env) token() string {
	b, err := os.ReadFile(e.tokenPath())
	if err != nil {
		e.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// serve starts `mosaic serve` and waits until /healthz answers ok.
func (e *env) serve(args ...string) *exec.Cmd {
	e.t.Helper()
	cmd := exec.Command(binary, append([]string{"serve", "--addr", e.addr}, args...)...)
	cmd.Env = e.vars
	cmd.Dir = e.home
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if e.t.Failed() {
			e.t.Logf("serve output:\n%s", out.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if code, _ := httpGet("http://"+e.addr+"/healthz", ""); code == 200 {
			return cmd
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("core did not become healthy within 20s:\n%s", out.String())
	return nil
}

// run runs a CLI command and returns stdout, stderr and the exit code.
func (e *env) run(args ...string) (string, string, int) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = e.vars
	cmd.Dir = e.home
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			e.t.Fatalf("run %v: %v", args, err)
		}
	}
	return out.String(), errb.String(), code
}
