package pbs

import (
	"fmt"
	"strings"
)

// MyJobsCommand lists the login user's jobs, one line each, in the wide alternate format
// (`qstat -a -w -u USER`, the user from `id -un` on the site): the listing with owner,
// queue and state that -f's JSON mode cannot filter by user (`-f` and `-u` conflict).
func MyJobsCommand() []string {
	return []string{"sh", "-c", `exec qstat -a -w -u "$(id -un)"`}
}

// JobCounts is how many of a queue's jobs run and wait.
type JobCounts struct{ Running, Pending int }

// ParseMyJobs counts user's jobs per queue from `qstat -a -w` output:
//
//	vm:
//	                                                          Req'd  Req'd   Elap
//	Job ID          Username        Queue  Jobname  SessID NDS TSK Memory Time  S Time
//	--------------- --------------- ------ -------- ------ --- --- ------ ----- - -----
//	17.vm           mosaicpbs       gpu    STDIN     23395   1   1    --  00:02 R 00:00
//
// qstat cuts a column's value to its width and marks it with '*' ("averyverylongus*"),
// so a cut user or queue name matches by prefix; queues names the queues the probe
// knows (a cut queue name is resolved against them). States R, E (exiting) and B
// (array begun) run; Q, H, W and T wait; any other letter counts as neither.
func ParseMyJobs(out []byte, user string, queues []string) (map[string]JobCounts, error) {
	res := map[string]JobCounts{}
	sawHeader := false
	for n, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 0:
			continue
		case strings.HasPrefix(f[0], "---"):
			sawHeader = true
			continue
		case !sawHeader:
			continue // server line ("vm:") and the column titles
		}
		if len(f) != 11 {
			return nil, fmt.Errorf("qstat -a -w line %d: want 11 columns, got %d: %q", n+1, len(f), strings.TrimSpace(line))
		}
		if !cutMatch(f[1], user) {
			continue
		}
		q := resolveQueue(f[2], queues)
		if q == "" {
			continue
		}
		c := res[q]
		switch f[9] {
		case "R", "E", "B":
			c.Running++
		case "Q", "H", "W", "T":
			c.Pending++
		default: // S, U, X, F, M and letters of later PBS versions: neither running nor waiting
		}
		res[q] = c
	}
	return res, nil
}

// cutMatch reports whether a column value (possibly cut, ending in '*') is name.
func cutMatch(col, name string) bool {
	if name == "" {
		return false
	}
	if p, cut := strings.CutSuffix(col, "*"); cut {
		return p != "" && strings.HasPrefix(name, p)
	}
	return col == name
}

// resolveQueue maps a (possibly cut) queue column to a known queue; "" if none or
// ambiguous.
func resolveQueue(col string, queues []string) string {
	found := ""
	for _, q := range queues {
		if cutMatch(col, q) {
			if found != "" {
				return ""
			}
			found = q
		}
	}
	return found
}
