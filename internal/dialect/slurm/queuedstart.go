package slurm

import (
	"fmt"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
)

var _ dialect.QueuedStarter = (*Slurm)(nil)

// QueuedStartCommand is `squeue --start -h -o %S -j ID`: the backfill scheduler's
// expected start of a job already queued, in its own place in line.
func (p *Slurm) QueuedStartCommand(jobID string) []string {
	return []string{"squeue", "--start", "-h", "-o", "%S", "-j", jobID}
}

// ParseQueuedStart reads squeue --start's one line: a timestamp in the cluster's zone
// ("2026-12-01T15:04:05"), or "N/A" (not planned yet); no line means the job is no
// longer pending (squeue --start lists pending jobs only). Both give the zero time.
// squeue's failure ("Invalid job id specified") and anything else are errors.
func (p *Slurm) ParseQueuedStart(jobID string, out dialect.Output) (time.Time, error) {
	if out.ExitCode != 0 {
		return time.Time{}, fmt.Errorf("squeue --start -j %s failed: %s", jobID, lastLine(out))
	}
	var ls []string
	for _, l := range strings.Split(string(out.Stdout), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ls = append(ls, l)
		}
	}
	switch {
	case len(ls) == 0:
		return time.Time{}, nil
	case len(ls) > 1:
		return time.Time{}, fmt.Errorf("squeue --start -j %s printed %d lines, want one start time: %q", jobID, len(ls), truncate(string(out.Stdout)))
	}
	switch ls[0] {
	case "N/A", "n/a", "Unknown", "None":
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", ls[0], p.loc())
	if err != nil {
		return time.Time{}, fmt.Errorf("squeue --start -j %s printed %q, not a start time like 2026-12-01T15:04:05", jobID, truncate(ls[0]))
	}
	return t, nil
}
