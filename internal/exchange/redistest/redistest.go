// Package redistest starts a private redis-server for tests (a real one: the Redis
// backend's tests and the agent SDK's reconnect tests need the real wire protocol).
package redistest

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// Start runs redis-server on a free loopback port until the test ends and returns its
// URL (redis://127.0.0.1:PORT/0). Without the binary the test is skipped locally and
// fails in CI (CI=true), where .ci/run installs the Debian redis-server package.
func Start(tb testing.TB) string {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server not installed (apt-get install -y redis-server); Redis backend tests need a real server"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	port := FreePort(tb)
	dir := tb.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "--port", fmt.Sprint(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatalf("start redis-server: %v", err)
	}
	tb.Cleanup(func() { cancel(); _ = cmd.Wait() })
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return "redis://" + addr + "/0"
		}
		time.Sleep(20 * time.Millisecond)
	}
	log, _ := os.ReadFile(filepath.Join(dir, "redis.log"))
	tb.Fatalf("redis-server did not listen on %s within 10s; log:\n%s", addr, log)
	return ""
}

// FreePort returns a loopback TCP port that was free a moment ago.
func FreePort(tb testing.TB) int {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
