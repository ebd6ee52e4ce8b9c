package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// sacctFields is the field list the benchmark asks sacct for, in order. Times come as
// Unix seconds because the benchmark runs sacct with SLURM_TIME_FORMAT=%s (no time
// zone to guess), the same clock the submitter reads its arrivals from.
const sacctFields = "Cluster,JobIDRaw,JobName,Submit,Start,End,State,AllocTRES"

// SacctRow is one allocation line of `sacct -M alpha,beta -X -n -P -o <sacctFields>`.
type SacctRow struct {
	Cluster string
	JobID   string
	Name    string
	Submit  time.Time
	Start   time.Time // zero: not started (pending, or cancelled while pending)
	End     time.Time // zero: not ended
	State   string    // first word: COMPLETED, CANCELLED, RUNNING, ...
	GPUs    int       // gres/gpu in AllocTRES (0 when none or not allocated yet)
	CPUs    int       // cpu in AllocTRES
}

// Started reports whether the job got its allocation.
func (r SacctRow) Started() bool { return !r.Start.IsZero() }

var (
	jobIDRe   = regexp.MustCompile(`^[0-9]+$`)
	clusterRe = regexp.MustCompile(`^[A-Za-z0-9._-]+$`)
)

// ParseSacct parses sacct's -P output for sacctFields. Blank lines are skipped; any
// other line that is not exactly those 8 fields with a numeric job id and times that
// are Unix seconds, "Unknown" or "None" is an error naming the line, because a wait
// computed from a misread line would be silently wrong.
func ParseSacct(out string) ([]SacctRow, error) {
	var rows []SacctRow
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 8 {
			return nil, fmt.Errorf("sacct line %d: %d fields, want 8 (%s): %q; run sacct with -P -o %s", n, len(f), sacctFields, clip(line), sacctFields)
		}
		r := SacctRow{Cluster: f[0], JobID: f[1], Name: f[2], State: firstWord(f[6])}
		if !clusterRe.MatchString(r.Cluster) {
			return nil, fmt.Errorf("sacct line %d: cluster %q is not a cluster name: %q", n, r.Cluster, clip(line))
		}
		if !jobIDRe.MatchString(r.JobID) {
			return nil, fmt.Errorf("sacct line %d: job id %q is not a number (want JobIDRaw with -X): %q", n, r.JobID, clip(line))
		}
		var err error
		for i, dst := range []*time.Time{&r.Submit, &r.Start, &r.End} {
			if *dst, err = parseEpoch(f[3+i]); err != nil {
				return nil, fmt.Errorf("sacct line %d: %s: %w (run sacct with SLURM_TIME_FORMAT=%%s)", n, []string{"Submit", "Start", "End"}[i], err)
			}
		}
		if r.Submit.IsZero() {
			return nil, fmt.Errorf("sacct line %d: job %s has no submit time: %q", n, r.JobID, clip(line))
		}
		if r.Started() && r.Start.Before(r.Submit) {
			return nil, fmt.Errorf("sacct line %d: job %s starts (%d) before it was submitted (%d)", n, r.JobID, r.Start.Unix(), r.Submit.Unix())
		}
		if r.GPUs, r.CPUs, err = tresCounts(f[7]); err != nil {
			return nil, fmt.Errorf("sacct line %d: AllocTRES: %w", n, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading sacct output: %w", err)
	}
	return rows, nil
}

// parseEpoch reads a SLURM_TIME_FORMAT=%s time: Unix seconds, or Unknown/None (zero).
func parseEpoch(s string) (time.Time, error) {
	switch s {
	case "Unknown", "None", "":
		return time.Time{}, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v <= 0 || v > 1<<40 {
		return time.Time{}, fmt.Errorf("%q is not a Unix time in seconds", clip(s))
	}
	return time.Unix(v, 0), nil
}

// tresCounts reads the gres/gpu and cpu counts from a TRES list such as
// "billing=8,cpu=8,gres/gpu:a100=2,gres/gpu=2,mem=16G,node=1" ("" when not allocated).
func tresCounts(s string) (gpus, cpus int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return 0, 0, fmt.Errorf("%q is not a key=value TRES list", clip(s))
		}
		if k != "gres/gpu" && k != "cpu" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return 0, 0, fmt.Errorf("%s=%q is not a count", k, clip(v))
		}
		if k == "cpu" {
			cpus = n
		} else {
			gpus = n
		}
	}
	return gpus, cpus, nil
}

// ParseSbatchParsable reads `sbatch --parsable -M …`'s answer "JOBID;CLUSTER" (the
// cluster Slurm chose). Without -M it is "JOBID" alone, which here is an error: the
// benchmark must know the cluster.
func ParseSbatchParsable(out string) (jobID, cluster string, err error) {
	s := strings.TrimSpace(out)
	id, cl, ok := strings.Cut(s, ";")
	if !ok {
		return "", "", fmt.Errorf("sbatch --parsable said %q, want JOBID;CLUSTER (was -M given?)", clip(s))
	}
	if !jobIDRe.MatchString(id) || !clusterRe.MatchString(cl) {
		return "", "", fmt.Errorf("sbatch --parsable said %q, want JOBID;CLUSTER", clip(s))
	}
	return id, cl, nil
}

// ParseEnvFile reads the rig's rig.env: KEY=VALUE lines, # comments and blank lines.
func ParseEnvFile(text string) (map[string]string, error) {
	env := map[string]string{}
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || !envKeyRe.MatchString(k) {
			return nil, fmt.Errorf("rig.env line %d: %q is not KEY=VALUE; rewrite it with scripts/testrig/up.sh", i+1, clip(line))
		}
		env[k] = v
	}
	return env, nil
}

var envKeyRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// TaskAttempt is the part of an attempt in `mosaic task ID --json` the benchmark reads.
type TaskAttempt struct {
	N      int    `json:"n"`
	Tag    string `json:"tag"`
	System string `json:"system"`
	JobID  string `json:"job_id"`
	State  string `json:"state"`
}

// TaskView is the part of `mosaic task ID --json` the benchmark reads.
type TaskView struct {
	ID       string        `json:"id"`
	Name     string        `json:"name"`
	State    string        `json:"state"`
	Reason   string        `json:"reason"`
	Attempts []TaskAttempt `json:"attempts"`
}

// ParseTask reads `mosaic task ID --json`: it must name the task and every attempt
// that reached a site must say which site and which job id, or the wait cannot be
// looked up in sacct.
func ParseTask(b []byte) (TaskView, error) {
	var t TaskView
	if err := json.Unmarshal(b, &t); err != nil {
		return TaskView{}, fmt.Errorf("mosaic task --json: %w", err)
	}
	if t.ID == "" {
		return TaskView{}, fmt.Errorf("mosaic task --json: no task id in %q", clip(string(b)))
	}
	for _, a := range t.Attempts {
		if a.JobID == "" {
			continue // never reached a site
		}
		if !jobIDRe.MatchString(a.JobID) || !clusterRe.MatchString(a.System) {
			return TaskView{}, fmt.Errorf("task %s attempt %d: job %q on system %q is not a Slurm job id on a cluster", t.ID, a.N, clip(a.JobID), clip(a.System))
		}
	}
	return t, nil
}

// ParseSubmittedID reads the task id from `mosaic submit --json=task`.
func ParseSubmittedID(b []byte) (string, error) {
	var res struct {
		Task struct {
			ID string `json:"id"`
		} `json:"task"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return "", fmt.Errorf("mosaic submit --json=task: %w", err)
	}
	if res.Task.ID == "" {
		return "", fmt.Errorf("mosaic submit --json=task: no task id in %q", clip(string(b)))
	}
	return res.Task.ID, nil
}

func firstWord(s string) string {
	if f := strings.Fields(s); len(f) > 0 {
		return f[0]
	}
	return ""
}

func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}

// ParseTaskStates reads `mosaic tasks --json=id,state`: task id → state.
func ParseTaskStates(b []byte) (map[string]string, error) {
	var ts []struct {
		ID    string `json:"id"`
		State string `json:"state"`
	}
	if err := json.Unmarshal(b, &ts); err != nil {
		return nil, fmt.Errorf("mosaic tasks --json: %w", err)
	}
	m := make(map[string]string, len(ts))
	for i, t := range ts {
		if t.ID == "" || t.State == "" {
			return nil, fmt.Errorf("mosaic tasks --json: entry %d has no id or state", i)
		}
		m[t.ID] = t.State
	}
	return m, nil
}

// ParseHealth reads `mosaic resources --json`: system → health of its last probe.
func ParseHealth(b []byte) (map[string]string, error) {
	var snap struct {
		Systems []struct {
			System string `json:"system"`
			Health string `json:"health"`
		} `json:"systems"`
	}
	if err := json.Unmarshal(b, &snap); err != nil {
		return nil, fmt.Errorf("mosaic resources --json: %w", err)
	}
	m := map[string]string{}
	for _, s := range snap.Systems {
		if s.System == "" {
			return nil, fmt.Errorf("mosaic resources --json: a system without a name")
		}
		m[s.System] = s.Health
	}
	return m, nil
}

// QueueLines splits `squeue -M … -h -o %j|%b` output into its job lines, dropping the
// "CLUSTER: name" headers -M may print and blank lines.
func QueueLines(out string) []string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "CLUSTER: ") {
			continue
		}
		ls = append(ls, l)
	}
	return ls
}

// GPUJobLine reports whether a "name|gres" queue line asks for GPUs: its %b field
// names gpu ("gres:gpu:a100:2", "gres/gpu:2"); "N/A" or empty does not.
func GPUJobLine(l string) bool {
	i := strings.LastIndexByte(l, '|')
	if i < 0 {
		return false
	}
	return strings.Contains(l[i+1:], "gpu")
}

// ParseBootTime reads slurmctld's start time from `scontrol show config` run with
// SLURM_TIME_FORMAT=%s (the line "BOOT_TIME = 1796131392"): a change between two
// reads means the controller restarted, which sends sbatch -M elsewhere meanwhile.
func ParseBootTime(out string) (int64, error) {
	for _, line := range strings.Split(out, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "BOOT_TIME" {
			continue
		}
		t, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if err != nil || t <= 0 {
			return 0, fmt.Errorf("scontrol show config: BOOT_TIME %q is not a Unix time (run it with SLURM_TIME_FORMAT=%%s)", clip(strings.TrimSpace(v)))
		}
		return t, nil
	}
	return 0, fmt.Errorf("scontrol show config printed no BOOT_TIME line")
}
