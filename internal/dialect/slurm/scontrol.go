package slurm

import (
	"fmt"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ScontrolJobsCommand prints every job the controller remembers, one per line.
func ScontrolJobsCommand() []string { return []string{"scontrol", "--oneliner", "show", "job"} }

// ParseScontrolRecords splits `scontrol show job` output (one-line or multi-line form)
// into key/value maps. A token without '=' continues the previous value (values such
// as JobName or Command may contain spaces).
func ParseScontrolRecords(out []byte) ([]map[string]string, error) {
	text := strings.TrimSpace(string(out))
	if text == "" || text == "No jobs in the system" {
		return nil, nil
	}
	var recs []map[string]string
	var cur map[string]string
	lastKey := ""
	for _, l := range strings.Split(text, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		for _, tok := range strings.Fields(l) {
			k, v, ok := strings.Cut(tok, "=")
			if ok && isScontrolKey(k) {
				if k == "JobId" {
					cur = map[string]string{}
					recs = append(recs, cur)
				}
				if cur == nil {
					return nil, fmt.Errorf("scontrol output does not start with JobId=: %q", truncate(l))
				}
				cur[k] = v
				lastKey = k
				continue
			}
			if cur == nil || lastKey == "" {
				return nil, fmt.Errorf("scontrol output: stray text %q before any Key=Value", truncate(tok))
			}
			cur[lastKey] += " " + tok
		}
	}
	return recs, nil
}

func isScontrolKey(k string) bool {
	if k == "" || !(k[0] >= 'A' && k[0] <= 'Z' || k[0] >= 'a' && k[0] <= 'z') {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == ':' || c == '/') {
			return false
		}
	}
	return true
}

// ParseScontrolJobs reads `scontrol show job` into statuses keyed by job id.
func ParseScontrolJobs(out []byte, p *Slurm) (map[string]model.JobStatus, error) {
	recs, err := ParseScontrolRecords(out)
	if err != nil {
		return nil, err
	}
	res := map[string]model.JobStatus{}
	for _, r := range recs {
		id := r["JobId"]
		if id == "" {
			return nil, fmt.Errorf("scontrol record without JobId")
		}
		if r["ArrayJobId"] != "" && r["ArrayTaskId"] != "" && !strings.ContainsAny(r["ArrayTaskId"], "-,%") {
			id = r["ArrayJobId"] + "_" + r["ArrayTaskId"]
		}
		exit, sig, err := ParseExitCode(r["ExitCode"])
		if err != nil {
			return nil, fmt.Errorf("scontrol job %s: %w", id, err)
		}
		el, _ := parseLimit(r["RunTime"])
		st := model.JobStatus{
			JobID: id, Name: r["JobName"], RawState: r["JobState"], State: MapState(r["JobState"]),
			ExitCode: exit, Signal: sig, Reason: cleanNull(r["Reason"]), Elapsed: el,
			Submit: parseTime(r["SubmitTime"], p.loc()), NodeList: cleanNull(r["NodeList"]),
		}
		if st.State != model.JobPending {
			st.Start = parseTime(r["StartTime"], p.loc())
		}
		if st.State.Final() {
			st.End = parseTime(r["EndTime"], p.loc())
		}
		res[id] = st
	}
	return res, nil
}
