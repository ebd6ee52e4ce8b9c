package transport

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestChildDiesWithKilledParent: a command run by a process that is then killed with
// -9 (a team-mode leader) dies with it (Pdeathsig), instead of running on — an ssh
// whose sbatch could land after the new leader's claim grace.
func TestChildDiesWithKilledParent(t *testing.T) {
	if pidFile := os.Getenv("MOSAIC_PDEATH_HELPER"); pidFile != "" {
		// The helper: run a long command through runProcess; the parent kills us.
		_, _ = runProcess(context.Background(), Limits{Timeout: time.Minute}, "sh", []string{"-c", "echo $$ > " + pidFile + "; exec sleep 60"}, os.Environ(), "", nil)
		return
	}
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	helper := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithKilledParent$", "-test.count=1")
	helper.Env = append(os.Environ(), "MOSAIC_PDEATH_HELPER="+pidFile)
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	for range 200 { // 10 s
		if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if pid == 0 {
		helper.Process.Kill()
		helper.Wait()
		t.Fatal("the helper's command never started")
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	_ = helper.Process.Signal(syscall.SIGKILL)
	_ = helper.Wait()
	for range 100 { // 5 s
		if !alive(pid) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("the command (pid %d) still runs after its parent was killed with -9", pid)
}

// alive: the process exists and is not a zombie waiting for a reaper.
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}
