package campaign

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"
)

func TestParseProcStat(t *testing.T) {
	cases := []struct {
		in    string
		state string
		pgrp  int
		ok    bool
	}{
		{"123 (sleep) S 1 120 120 0 -1 4194304", "S", 120, true},
		{"7 (a) b) c) Z 1 7 7 0", "Z", 7, true}, // comm with spaces and ')'
		{"9 ((sd-pam)) R 8 9", "R", 9, true},
		{"", "", 0, false},
		{"123 sleep S 1 120", "", 0, false}, // no ')'
		{"123 (sleep) S 1", "", 0, false},   // too short
		{"123 (sleep) S 1 x 120", "", 0, false},
		{"123 (sleep)", "", 0, false},
	}
	for _, c := range cases {
		st, pg, ok := parseProcStat(c.in)
		if st != c.state || pg != c.pgrp || ok != c.ok {
			t.Errorf("parseProcStat(%q) = %q %d %v, want %q %d %v", c.in, st, pg, ok, c.state, c.pgrp, c.ok)
		}
	}
}

func FuzzParseProcStat(f *testing.F) {
	f.Add("123 (sleep) S 1 120 120 0")
	f.Add("7 (a) b) Z 1 7")
	f.Add(")))")
	f.Fuzz(func(t *testing.T, s string) {
		st, pg, ok := parseProcStat(s)
		if !ok && (st != "" || pg != 0) {
			t.Errorf("not ok but %q %d", st, pg)
		}
	})
}

// TestStopGroupTreatsZombiesAsGone: a group whose only member is a zombie (killed,
// not yet reaped: what an orphaned grandchild is until init gets to it) is gone.
// kill(-pgid, 0) still succeeds on it, which kept every agent's stop waiting out
// its whole grace (spawn-site took seconds to exit on Ctrl-C).
func TestStopGroupTreatsZombiesAsGone(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	reaped := false
	defer func() {
		if !reaped {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}()
	if !groupAlive(pid) {
		t.Fatal("a running group is not alive")
	}
	_ = syscall.Kill(pid, syscall.SIGKILL)
	for i := 0; ; i++ { // not reaped: it stays a zombie
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if st, _, ok := parseProcStat(string(b)); err == nil && ok && st == "Z" {
			break
		}
		if i == 200 {
			t.Fatalf("pid %d never became a zombie", pid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if syscall.Kill(-pid, 0) != nil {
		t.Fatal("kill(-pgid, 0) fails on the zombie group; the test would prove nothing")
	}
	if groupAlive(pid) {
		t.Error("a group of zombies is alive")
	}
	start := time.Now()
	stopGroup(pid, 3*time.Second)
	if d := time.Since(start); d > time.Second {
		t.Errorf("stopGroup waited %s on a group of zombies", d)
	}
	_ = cmd.Wait()
	reaped = true
	if groupAlive(pid) {
		t.Error("a reaped group is alive")
	}
}
