package slurm

import (
	"fmt"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// QueueCommand lists every active job on the cluster: id, partition(s), user, state.
func QueueCommand() []string {
	return []string{"squeue", "--noheader", "--all", "--format=%i|%P|%u|%T"}
}

// QueueJob is one line of QueueCommand's output.
type QueueJob struct {
	ID         string
	Partitions string // comma-separated when the job may run in several
	User       string
	State      string
}

// ParseQueue reads QueueCommand's output.
func ParseQueue(out []byte) ([]QueueJob, error) {
	s := string(out)
	jobs := make([]QueueJob, 0, strings.Count(s, "\n")+1)
	n := 0
	for len(s) > 0 {
		var l string
		if i := strings.IndexByte(s, '\n'); i >= 0 {
			l, s = s[:i], s[i+1:]
		} else {
			l, s = s, ""
		}
		n++
		l = strings.TrimRight(l, "\r")
		if l == "" {
			continue
		}
		// Four fields, no free text: cut three times instead of allocating a slice.
		id, rest, ok1 := strings.Cut(l, "|")
		part, rest, ok2 := strings.Cut(rest, "|")
		user, state, ok3 := strings.Cut(rest, "|")
		if !ok1 || !ok2 || !ok3 || strings.IndexByte(state, '|') >= 0 || id == "" || state == "" {
			return nil, fmt.Errorf("squeue line %d: want JOBID|PARTITION|USER|STATE, got %q", n, truncate(l))
		}
		jobs = append(jobs, QueueJob{ID: id, Partitions: part, User: user, State: state})
	}
	return jobs, nil
}

// ApplyQueue adds queue depth and the user's own jobs to partition records. A pending
// job that may run in several partitions counts in each.
func ApplyQueue(recs []model.ResourceRecord, jobs []QueueJob, user string) {
	idx := make(map[string]int, len(recs))
	for i := range recs {
		idx[recs[i].Partition] = i
	}
	for _, j := range jobs {
		st := MapState(j.State)
		for rest := j.Partitions; rest != ""; {
			var p string
			p, rest, _ = strings.Cut(rest, ",")
			i, ok := idx[p]
			if !ok {
				continue
			}
			r := &recs[i]
			mine := user != "" && j.User == user
			switch st {
			case model.JobPending, model.JobRequeued:
				r.PendingJobs++
				if mine {
					r.MyPendingJobs++
				}
			case model.JobRunning, model.JobCompleting, model.JobSuspended:
				r.RunningJobs++
				if mine {
					r.MyRunningJobs++
				}
			}
		}
	}
}

// jobFormat is the squeue format for per-job status (fallback and tag lookups).
const jobFormat = "%i|%j|%T|%r|%M|%S|%e|%N|%V|%P|%u"

const jobFields = 11

// SqueueJobsCommand reports the given jobs, finished ones included while the controller
// still remembers them (MinJobAge).
func SqueueJobsCommand(jobIDs []string) []string {
	return []string{"squeue", "--noheader", "--states=all", "--jobs=" + strings.Join(jobIDs, ","), "--format=" + jobFormat}
}

// SqueueNamesCommand reports jobs by name.
func SqueueNamesCommand(names []string) []string {
	return []string{"squeue", "--noheader", "--states=all", "--name=" + strings.Join(names, ","), "--format=" + jobFormat}
}

// ParseSqueueJobs reads SqueueJobsCommand or SqueueNamesCommand output. Exit codes are
// not in squeue's output; finished jobs get them from scontrol (see MergeScontrol).
func ParseSqueueJobs(out []byte, p *Slurm) (map[string]model.JobStatus, error) {
	res := map[string]model.JobStatus{}
	for n, l := range lines(out) {
		f, ok := splitDelimited(l, jobFields, 1)
		if !ok || f[0] == "" {
			return nil, fmt.Errorf("squeue line %d: want %d '|'-separated fields (%s), got %q", n+1, jobFields, jobFormat, truncate(l))
		}
		el, _ := parseLimit(f[4])
		st := model.JobStatus{
			JobID: f[0], Name: f[1], RawState: f[2], State: MapState(f[2]), Reason: cleanNull(f[3]),
			Elapsed: el, Start: parseTime(f[5], p.loc()), End: parseTime(f[6], p.loc()),
			NodeList: cleanNull(f[7]), Submit: parseTime(f[8], p.loc()),
		}
		if !st.State.Final() {
			st.End = time.Time{}
		}
		if st.State == model.JobPending {
			st.Start = time.Time{} // squeue prints the expected start for pending jobs
		}
		res[f[0]] = st
	}
	return res, nil
}
