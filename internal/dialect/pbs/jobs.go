package pbs

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Exit_status codes of PBS itself (OpenPBS job.h JOB_EXEC_*), the ones Mosaic treats
// specially.
const (
	execKillMem      = -27
	execKillVmem     = -26
	execKillWalltime = -29
)

// substates of finished jobs (OpenPBS job.h).
const (
	substateTerminated = 91 // deleted by qdel, queued or running
	substateFinished   = 92
	substateFailed     = 93
)

// MapJob derives Mosaic's state, exit code and signal from a job's job_state,
// Exit_status (may be absent: hasExit false) and substate.
func MapJob(state string, exit int, hasExit bool, substate int) (model.JobState, int, int) {
	switch strings.ToUpper(strings.TrimSpace(state)) {
	case "Q", "H", "W", "T":
		return model.JobPending, 0, 0
	case "R", "B":
		return model.JobRunning, 0, 0
	case "E":
		return model.JobCompleting, 0, 0
	case "S", "U":
		return model.JobSuspended, 0, 0
	case "M":
		return model.JobLost, 0, 0 // moved to another server: gone from this one
	case "F", "X":
		return finished(exit, hasExit, substate)
	}
	return model.JobUnknown, 0, 0
}

func finished(exit int, hasExit bool, substate int) (model.JobState, int, int) {
	if !hasExit {
		if substate == substateTerminated {
			return model.JobCancelled, 0, 0
		}
		if substate == substateFinished {
			return model.JobSucceeded, 0, 0
		}
		return model.JobFailed, 0, 0
	}
	switch {
	case exit == 0:
		return model.JobSucceeded, 0, 0
	case exit == execKillWalltime:
		return model.JobTimeout, exit, 0
	case exit == execKillMem || exit == execKillVmem:
		return model.JobOOM, exit, 0
	case exit < 0:
		return model.JobFailed, exit, 0
	case exit > 256:
		sig := exit - 256
		if substate == substateTerminated {
			return model.JobCancelled, 0, sig
		}
		return model.JobFailed, 0, sig
	}
	if substate == substateTerminated {
		return model.JobCancelled, exit, 0
	}
	return model.JobFailed, exit, 0
}

// ParseJobs reads `qstat [-x] -f -F json` output into statuses keyed by the full job
// id: one document, or several one after another (one qstat per id, statusLoop). A
// document without "Jobs" means no job matched (json-quirks Q9).
func (p *PBS) ParseJobs(out []byte) (map[string]model.JobStatus, error) {
	docs, err := decodeAll(out, "qstat -f -F json")
	if err != nil {
		return nil, err
	}
	res := map[string]model.JobStatus{}
	for _, doc := range docs {
		jobsV, ok := doc["Jobs"]
		if !ok {
			continue
		}
		jobs, ok := jobsV.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("qstat -f -F json: \"Jobs\" is not an object")
		}
		if err := p.parseJobMap(jobs, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// parseJobMap adds the jobs of one document's "Jobs" object to res.
func (p *PBS) parseJobMap(jobs map[string]any, res map[string]model.JobStatus) error {
	for id, v := range jobs {
		j := obj(v)
		if j == nil {
			return fmt.Errorf("qstat -f -F json: job %s is not an object", id)
		}
		raw := str(j["job_state"])
		if raw == "" {
			return fmt.Errorf("qstat -f -F json: job %s has no job_state", id)
		}
		exitV, hasExit := j["Exit_status"]
		exit := num(exitV)
		sub := num(j["substate"])
		st, code, sig := MapJob(raw, exit, hasExit, sub)
		s := model.JobStatus{
			JobID: id, Name: str(j["Job_Name"]), State: st, RawState: raw + "/" + strconv.Itoa(sub),
			ExitCode: code, Signal: sig, Reason: str(j["comment"]),
			Submit: parseCTime(str(j["ctime"]), p.loc()), Start: parseCTime(str(j["stime"]), p.loc()),
			NodeList: execHosts(str(j["exec_host"])),
		}
		if st.Final() {
			s.End = parseCTime(str(j["obittime"]), p.loc())
			if s.End.IsZero() {
				s.End = parseCTime(str(j["mtime"]), p.loc())
			}
		}
		if used := obj(j["resources_used"]); used != nil {
			if d, err := ParseWalltime(str(used["walltime"])); err == nil {
				s.Elapsed = d
			}
		}
		res[id] = s
	}
	return nil
}

// execHosts turns "n1/0*8+n2/0*8" into "n1,n2".
func execHosts(s string) string {
	if s == "" {
		return ""
	}
	var hosts []string
	for _, part := range strings.Split(s, "+") {
		h, _, _ := strings.Cut(part, "/")
		if h != "" && (len(hosts) == 0 || hosts[len(hosts)-1] != h) {
			hosts = append(hosts, h)
		}
	}
	return strings.Join(hosts, ",")
}

// seq returns a job id's sequence part ("1004" of "1004.pbs", "12[].srv" → "12[]").
func seq(id string) string {
	s, _, _ := strings.Cut(id, ".")
	return s
}

// matchIDs keys results by the ids the caller asked for, matching full ids first and
// then sequence numbers (qsub may print a shorter server name than qstat).
func matchIDs(all map[string]model.JobStatus, ids []string) map[string]model.JobStatus {
	bySeq := map[string]model.JobStatus{}
	for id, s := range all {
		bySeq[seq(id)] = s
	}
	res := map[string]model.JobStatus{}
	for _, id := range ids {
		if s, ok := all[id]; ok {
			res[id] = s
		} else if s, ok := bySeq[seq(id)]; ok {
			s.JobID = id
			res[id] = s
		}
	}
	return res
}
