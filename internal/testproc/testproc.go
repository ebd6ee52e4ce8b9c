// Package testproc runs a test of the current test binary as a separate process (to
// be killed -9, or to hold a lock from another PID) and waits for the line it prints
// when it is ready. Tests only (the layering test refuses it elsewhere).
package testproc

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Start runs the test named test in a child process with env added, and returns it
// with the first line of its stdout that starts with want (its "ready" word). A line
// starting with "error" instead, or the child ending or staying silent for 30 s,
// fails the test. The child is killed when the test ends.
func Start(t testing.TB, test string, env []string, want string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			if strings.HasPrefix(s.Text(), want) || strings.HasPrefix(s.Text(), "error") {
				line <- s.Text()
				return
			}
		}
		line <- "helper ended without a word"
	}()
	select {
	case l := <-line:
		if !strings.HasPrefix(l, want) {
			t.Fatalf("helper %s: %s", test, l)
		}
		return cmd, l
	case <-time.After(30 * time.Second):
		t.Fatalf("helper %s did not print %q within 30s", test, want)
	}
	return nil, ""
}
