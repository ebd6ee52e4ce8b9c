package slurm

import (
	"fmt"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// sacctFormat is the field list of the accounting queries. -P output is used because
// `sacct --json` reports wrong exit codes on 22.05.
const sacctFormat = "JobID,JobName,State,ExitCode,Elapsed,Start,End,NodeList,Reason,Submit"

const sacctFields = 10

// SacctJobsCommand reports many jobs (allocations only, no steps) in one call.
func SacctJobsCommand(jobIDs []string) []string {
	return []string{"sacct", "--jobs=" + strings.Join(jobIDs, ","), "--allocations", "--parsable2", "--noheader",
		"--format=" + sacctFormat}
}

// SacctNamesCommand reports jobs by name submitted in the last 30 days.
func SacctNamesCommand(names []string) []string {
	return []string{"sacct", "--name=" + strings.Join(names, ","), "--starttime=now-30days", "--allocations",
		"--parsable2", "--noheader", "--format=" + sacctFormat}
}

// NoAccounting reports whether sacct's stderr says accounting is unavailable, in which
// case squeue/scontrol must be used instead.
func NoAccounting(stderr []byte) bool {
	s := strings.ToLower(string(stderr))
	return strings.Contains(s, "accounting storage is disabled") ||
		strings.Contains(s, "problem talking to the database") ||
		strings.Contains(s, "slurmdbd") && strings.Contains(s, "error")
}

// ParseSacct reads SacctJobsCommand/SacctNamesCommand output. When a job id appears more
// than once (requeued jobs), the last line wins.
func ParseSacct(out []byte, p *Slurm) (map[string]model.JobStatus, error) {
	res := map[string]model.JobStatus{}
	for n, l := range lines(out) {
		f, ok := splitDelimited(l, sacctFields, 1)
		if !ok || f[0] == "" {
			return nil, fmt.Errorf("sacct line %d: want %d '|'-separated fields (%s), got %q", n+1, sacctFields, sacctFormat, truncate(l))
		}
		exit, sig, err := ParseExitCode(f[3])
		if err != nil {
			return nil, fmt.Errorf("sacct line %d: %w", n+1, err)
		}
		el, ok := parseLimit(f[4])
		if !ok {
			return nil, fmt.Errorf("sacct line %d: elapsed %q is not [D-]HH:MM:SS", n+1, f[4])
		}
		st := model.JobStatus{
			JobID: f[0], Name: f[1], RawState: f[2], State: MapState(f[2]), ExitCode: exit, Signal: sig,
			Elapsed: el, Start: parseTime(f[5], p.loc()), End: parseTime(f[6], p.loc()),
			NodeList: cleanNull(f[7]), Reason: cleanNull(f[8]), Submit: parseTime(f[9], p.loc()),
		}
		if st.Name == allocationPlaceholder {
			st.Name = ""
		}
		res[f[0]] = st
	}
	return res, nil
}

// allocationPlaceholder is the job name slurmdbd shows for a few seconds after a very
// short job ends, before the job's start record (with the real name) is stored. It is
// reported as an empty name: unknown, not wrong.
const allocationPlaceholder = "allocation"
