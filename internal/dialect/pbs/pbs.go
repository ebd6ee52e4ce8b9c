package pbs

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// PBS implements dialect.Dialect for PBS Professional and OpenPBS.
type PBS struct {
	// Loc is the time zone qstat prints times in (the login node's); nil = time.Local.
	Loc *time.Location
	// EnvScript, if set, is sourced in every job script before the command.
	EnvScript string
	// Filesystems, if set, is requested with `-l filesystems=` (ALCF-style sites).
	Filesystems string
}

var _ dialect.Dialect = (*PBS)(nil)

func (p *PBS) loc() *time.Location {
	if p == nil || p.Loc == nil {
		return time.Local
	}
	return p.Loc
}

// Name returns "pbs".
func (p *PBS) Name() string { return "pbs" }

// VersionCommand is `qstat --version`.
func (p *PBS) VersionCommand() []string { return []string{"qstat", "--version"} }

var versionRe = regexp.MustCompile(`pbs_version\s*=\s*(\S+)`)

// ParseVersion reads "pbs_version = 23.06.06".
func (p *PBS) ParseVersion(out []byte) (string, error) {
	if m := versionRe.FindSubmatch(out); m != nil {
		return string(m[1]), nil
	}
	return "", fmt.Errorf("qstat --version printed %q, not \"pbs_version = X\"", strings.TrimSpace(string(out)))
}

// ProbeCommands are the queue listing, the node listing and the job listing (for the
// user's own running and waiting jobs).
func (p *PBS) ProbeCommands() [][]string {
	return [][]string{{"qstat", "-Q", "-f", "-F", "json"}, {"pbsnodes", "-a", "-F", "json"}, MyJobsCommand()}
}

// ParseProbe builds one record per queue, with the user's own job counts.
func (p *PBS) ParseProbe(outs []dialect.Output, user string) ([]model.ResourceRecord, error) {
	if len(outs) != 3 {
		return nil, fmt.Errorf("pbs probe: want 3 outputs (qstat -Q, pbsnodes, qstat -a), got %d", len(outs))
	}
	if outs[0].ExitCode != 0 {
		return nil, fmt.Errorf("qstat -Q failed: %s", message(outs[0]))
	}
	qs, err := ParseQueues(outs[0].Stdout)
	if err != nil {
		return nil, err
	}
	if outs[1].ExitCode != 0 {
		return nil, fmt.Errorf("pbsnodes failed: %s", message(outs[1]))
	}
	ns, err := ParseNodes(outs[1].Stdout)
	if err != nil {
		return nil, err
	}
	recs := QueueRecords(qs, ns)
	if len(recs) == 0 {
		return nil, errors.New("qstat -Q listed no execution or route queue")
	}
	// The user's own counts are best effort: the queues and nodes stand without them.
	names := make([]string, len(recs))
	for i, r := range recs {
		names[i] = r.Partition
	}
	mine := map[string]JobCounts{}
	if outs[2].ExitCode == 0 {
		if m, err := ParseMyJobs(outs[2].Stdout, user, names); err == nil {
			mine = m
		}
	}
	for i := range recs {
		c := mine[recs[i].Partition]
		recs[i].MyRunningJobs, recs[i].MyPendingJobs = c.Running, c.Pending
	}
	return recs, nil
}

// RenderJob renders a #PBS script.
func (p *PBS) RenderJob(spec model.JobSpec, files dialect.JobFiles) ([]byte, error) {
	return RenderScript(spec, files, p.EnvScript, p.Filesystems)
}

// SubmitCommand is `qsub SCRIPT`.
func (p *PBS) SubmitCommand(scriptPath string) []string { return []string{"qsub", scriptPath} }

var jobIDRe = regexp.MustCompile(`^\d+(\[\d*\])?(\.[A-Za-z0-9._-]+)?$`)

// ParseSubmit reads qsub's output: the job id ("1004.pbs") on the last stdout line.
func (p *PBS) ParseSubmit(out dialect.Output) (string, error) {
	if out.ExitCode != 0 {
		return "", fmt.Errorf("qsub refused the job: %s", message(out))
	}
	ls := nonEmptyLines(out.Stdout)
	if len(ls) == 0 {
		return "", fmt.Errorf("qsub printed no job id (stderr: %q)", strings.TrimSpace(string(out.Stderr)))
	}
	id := strings.TrimSpace(ls[len(ls)-1])
	if !jobIDRe.MatchString(id) {
		return "", fmt.Errorf("qsub printed %q, not a job id", id)
	}
	return id, nil
}

// statusLoop runs one `qstat -x -f -F json ID` per id in one remote call: with several
// ids, qstat's JSON mode prints only the first job (seen on OpenPBS 23.06; see
// ../shared/notes/pbs-from-source.md), and listing every job of the server instead
// costs a large site megabytes per tick. The exit status is the last failing qstat's.
const statusLoop = `rc=0; for j in "$@"; do qstat -x -f -F json -- "$j" || rc=$?; done; exit $rc`

// StatusCommand is `qstat -x -f -F json ID` (finished jobs included); several ids are
// asked one qstat each, within one remote call (statusLoop).
func (p *PBS) StatusCommand(jobIDs []string) []string {
	if len(jobIDs) <= 1 {
		return append([]string{"qstat", "-x", "-f", "-F", "json", "--"}, jobIDs...)
	}
	return append([]string{"sh", "-c", statusLoop, "mosaic-qstat"}, jobIDs...)
}

// ParseStatus reads the job documents (one per qstat). qstat exits non-zero when an id
// is unknown (153, "Unknown Job Id", e.g. history expired) but still prints the others;
// a job missing from the answer is absent from the map, never an error. Any other
// failure (the server unreachable, a usage error) is an error.
func (p *PBS) ParseStatus(jobIDs []string, out dialect.Output) (map[string]model.JobStatus, error) {
	if out.ExitCode != 0 {
		if cannotConnect(out.Stderr) || (len(strings.TrimSpace(string(out.Stdout))) == 0 && !onlyUnknownJobs(out.Stderr)) {
			return nil, fmt.Errorf("qstat failed: %s", message(out))
		}
		if len(strings.TrimSpace(string(out.Stdout))) == 0 {
			return map[string]model.JobStatus{}, nil
		}
	}
	all, err := p.ParseJobs(out.Stdout)
	if err != nil {
		return nil, err
	}
	return matchIDs(all, jobIDs), nil
}

// FallbackStatusCommands: none; qstat -x is the only query.
func (p *PBS) FallbackStatusCommands([]string) [][]string { return nil }

// ParseFallbackStatus is never used for PBS.
func (p *PBS) ParseFallbackStatus([]string, []dialect.Output) (map[string]model.JobStatus, error) {
	return nil, errors.New("pbs has no fallback status query")
}

// CancelCommand is `qdel -- IDS...` (an id is never read as an option).
func (p *PBS) CancelCommand(jobIDs []string) []string {
	return append([]string{"qdel", "--"}, jobIDs...)
}

// ParseCancel accepts unknown and finished jobs ("qdel: Unknown Job Id", "Job has finished").
func (p *PBS) ParseCancel(out dialect.Output) error {
	if out.ExitCode == 0 {
		return nil
	}
	var bad []string
	for _, l := range nonEmptyLines(append(append([]byte{}, out.Stderr...), out.Stdout...)) {
		low := strings.ToLower(l)
		if strings.Contains(low, "unknown job id") || strings.Contains(low, "job has finished") ||
			strings.Contains(low, "request invalid for state of job") || strings.Contains(low, "delete already in progress") {
			continue
		}
		bad = append(bad, strings.TrimSpace(l))
	}
	if len(bad) == 0 {
		return nil
	}
	return fmt.Errorf("qdel failed: %s", strings.Join(bad, "; "))
}

// FindByTagCommand lists all jobs (with history); names are filtered client-side.
func (p *PBS) FindByTagCommand([]string) []string { return []string{"qstat", "-x", "-f", "-F", "json"} }

// ParseFindByTag returns the newest job per wanted Job_Name.
func (p *PBS) ParseFindByTag(tags []string, out dialect.Output) (map[string]model.JobStatus, error) {
	if out.ExitCode != 0 && (cannotConnect(out.Stderr) || len(strings.TrimSpace(string(out.Stdout))) == 0) {
		return nil, fmt.Errorf("qstat failed: %s", message(out))
	}
	all, err := p.ParseJobs(out.Stdout)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, t := range tags {
		want[t] = true
	}
	res := map[string]model.JobStatus{}
	for _, s := range all {
		if !want[s.Name] {
			continue
		}
		if cur, ok := res[s.Name]; !ok || seqLess(cur.JobID, s.JobID) {
			res[s.Name] = s
		}
	}
	return res, nil
}

// FallbackFindByTagCommand: none.
func (p *PBS) FallbackFindByTagCommand([]string) []string { return nil }

// ParseFallbackFindByTag is never used for PBS.
func (p *PBS) ParseFallbackFindByTag([]string, dialect.Output) (map[string]model.JobStatus, error) {
	return nil, errors.New("pbs has no fallback tag query")
}

// EstimateCommand: PBS has no pre-submission estimate; nil.
func (p *PBS) EstimateCommand(string) []string { return nil }

// ParseEstimate is unsupported.
func (p *PBS) ParseEstimate(dialect.Output) (time.Time, error) {
	return time.Time{}, errors.New("pbs cannot estimate a start time before submission")
}

func seqLess(a, b string) bool {
	sa, sb := seq(a), seq(b)
	if len(sa) != len(sb) {
		return len(sa) < len(sb)
	}
	return sa < sb
}

// onlyUnknownJobs reports whether stderr holds only qstat's "Unknown Job Id" lines.
func onlyUnknownJobs(stderr []byte) bool {
	lines := nonEmptyLines(stderr)
	for _, l := range lines {
		if !strings.Contains(strings.ToLower(l), "unknown job id") {
			return false
		}
	}
	return len(lines) > 0
}

func cannotConnect(stderr []byte) bool {
	return strings.Contains(strings.ToLower(string(stderr)), "cannot connect to server")
}

func nonEmptyLines(b []byte) []string {
	var out []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, strings.TrimRight(l, "\r"))
		}
	}
	return out
}

// message is the most useful line of a failed command: PBS prefixes its own errors
// with "qstat: ", "qsub: " or "qdel: ".
func message(out dialect.Output) string {
	ls := nonEmptyLines(out.Stderr)
	for i := len(ls) - 1; i >= 0; i-- {
		if strings.HasPrefix(ls[i], "qstat:") || strings.HasPrefix(ls[i], "qsub:") || strings.HasPrefix(ls[i], "qdel:") || strings.HasPrefix(ls[i], "pbsnodes:") {
			return strings.TrimSpace(ls[i])
		}
	}
	if len(ls) > 0 {
		return strings.TrimSpace(ls[len(ls)-1])
	}
	if ls = nonEmptyLines(out.Stdout); len(ls) > 0 {
		return strings.TrimSpace(ls[len(ls)-1])
	}
	return fmt.Sprintf("exit status %d", out.ExitCode)
}
