package pbs

import (
	"fmt"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
)

var _ dialect.QueuedStarter = (*PBS)(nil)

// QueuedStartCommand is `qstat -f -F json -- ID`: the job's document, whose
// estimated.start_time the scheduler sets for a queued job it has planned (backfill
// or calendaring on).
func (p *PBS) QueuedStartCommand(jobID string) []string {
	return []string{"qstat", "-f", "-F", "json", "--", jobID}
}

// ParseQueuedStart reads estimated.start_time ("Tue Dec  1 15:04:05 2026", in the
// time zone of the machine running qstat) of the job's document; a job without one (not
// planned, or its server does not estimate) or that is not queued gives the zero time.
// A failed qstat, malformed JSON or an unreadable time is an error.
func (p *PBS) ParseQueuedStart(jobID string, out dialect.Output) (time.Time, error) {
	if out.ExitCode != 0 {
		return time.Time{}, fmt.Errorf("qstat -f %s failed: %s", jobID, message(out))
	}
	doc, err := decode(out.Stdout, "qstat -f -F json")
	if err != nil {
		return time.Time{}, err
	}
	jobs := obj(doc["Jobs"])
	if len(jobs) == 0 {
		return time.Time{}, fmt.Errorf("qstat -f %s: no job in the answer", jobID)
	}
	var job map[string]any
	for id, v := range jobs {
		if id == jobID || strings.SplitN(id, ".", 2)[0] == strings.SplitN(jobID, ".", 2)[0] {
			job = obj(v)
		}
	}
	if job == nil {
		return time.Time{}, fmt.Errorf("qstat -f %s answered about another job", jobID)
	}
	if s := str(job["job_state"]); s != "" && s != "Q" {
		return time.Time{}, nil // not queued: no start to wait for
	}
	raw := strings.TrimSpace(str(obj(job["estimated"])["start_time"]))
	if raw == "" {
		return time.Time{}, nil
	}
	loc := p.Loc
	if loc == nil {
		loc = time.Local
	}
	t, err := time.ParseInLocation(time.ANSIC, raw, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("qstat -f %s: estimated.start_time %q is not a time like \"Tue Dec  1 15:04:05 2026\"", jobID, raw)
	}
	return t, nil
}
