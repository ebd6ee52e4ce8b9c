package simprov

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// procStat is what the provider needs from /proc/<pid>/stat (proc(5)).
type procStat struct {
	state byte   // field 3: R, S, D, Z, T, X, ...
	pgrp  int    // field 5
	start uint64 // field 22: start time in clock ticks after boot
}

// errNoProcFS says the system has no /proc to read (not Linux).
var errNoProcFS = errors.New("no /proc file system")

// parseProcStat parses a /proc/<pid>/stat line. The command name (field 2) is in
// parentheses and may itself hold spaces and parentheses, so the fields are counted
// from the last ')'.
func parseProcStat(b []byte) (procStat, error) {
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 || !strings.Contains(s[:i], "(") {
		return procStat{}, fmt.Errorf("proc stat: no (comm) field")
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state), f[2] field 5 (pgrp), f[19] field 22 (starttime).
	if len(f) < 20 {
		return procStat{}, fmt.Errorf("proc stat: %d fields after the command name, want at least 20", len(f))
	}
	if len(f[0]) != 1 || !(f[0][0] >= 'A' && f[0][0] <= 'Z' || f[0][0] >= 'a' && f[0][0] <= 'z') {
		return procStat{}, fmt.Errorf("proc stat: state %q", f[0])
	}
	pgrp, err := strconv.Atoi(f[2])
	if err != nil || pgrp < 0 {
		return procStat{}, fmt.Errorf("proc stat: process group %q", f[2])
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("proc stat: start time %q", f[19])
	}
	return procStat{state: f[0][0], pgrp: pgrp, start: start}, nil
}

// readProcStat reads and parses /proc/<pid>/stat.
func readProcStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		if _, serr := os.Stat("/proc/self/stat"); serr != nil {
			return procStat{}, errNoProcFS
		}
		return procStat{}, err
	}
	return parseProcStat(b)
}

// procStartTime is the process's start time (clock ticks after boot); false if unknown.
func procStartTime(pid int) (uint64, bool) {
	st, err := readProcStat(pid)
	if err != nil {
		return 0, false
	}
	return st.start, true
}

// clockTicks is USER_HZ, the unit of the start time in /proc/<pid>/stat: the kernel
// fixes it at 100 on every architecture Go runs on Linux (sysconf(_SC_CLK_TCK)
// would need cgo).
const clockTicks = 100

// parseBootTime finds the btime line (boot time, seconds since the epoch) of
// /proc/stat.
func parseBootTime(b []byte) (time.Time, bool) {
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "btime "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil || n <= 0 {
				return time.Time{}, false
			}
			return time.Unix(n, 0), true
		}
	}
	return time.Time{}, false
}

// procStartWall converts a process start time (clock ticks after boot) to the wall
// clock: boot time + ticks/USER_HZ, to the second (btime's precision).
func procStartWall(ticks uint64) (time.Time, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	bt, ok := parseBootTime(b)
	if !ok {
		return time.Time{}, false
	}
	return bt.Add(time.Duration(ticks) * (time.Second / clockTicks)), true
}

// killGroupIfOrphaned kills process group pgid only when no live process holds pgid
// as its pid (the leader is gone or a zombie): then the group's id cannot have been
// reused, so its members are the job's. A live process with that pid is left alone,
// it may be a stranger that got the number.
func killGroupIfOrphaned(pgid int) {
	if pgid <= 1 {
		return
	}
	st, err := readProcStat(pgid)
	if err == nil && st.state != 'Z' && st.state != 'X' {
		return
	}
	if errors.Is(err, errNoProcFS) && pidAlive(pgid) {
		return
	}
	killGroup(pgid)
}
