package slurm

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/dialect"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Slurm implements dialect.Dialect.
type Slurm struct {
	// Loc is the cluster's time zone for its timestamps; nil means time.Local.
	Loc *time.Location
	// EnvScript, if set, is sourced in every job script before the command.
	EnvScript string
}

var _ dialect.Dialect = (*Slurm)(nil)

func (p *Slurm) loc() *time.Location {
	if p == nil || p.Loc == nil {
		return time.Local
	}
	return p.Loc
}

// Name returns "slurm".
func (p *Slurm) Name() string { return "slurm" }

// VersionCommand is `sinfo --version`.
func (p *Slurm) VersionCommand() []string { return []string{"sinfo", "--version"} }

var versionRe = regexp.MustCompile(`^slurm(?:-wlm)?\s+(\d+\.\d+(?:\.\d+)?\S*)`)

// ParseVersion reads "slurm 23.02.6" or "slurm-wlm 22.05.8".
func (p *Slurm) ParseVersion(out []byte) (string, error) {
	s := strings.TrimSpace(string(out))
	if m := versionRe.FindStringSubmatch(s); m != nil {
		return m[1], nil
	}
	return "", fmt.Errorf("sinfo --version printed %q, not \"slurm X.Y.Z\"", truncate(s))
}

// ProbeCommands are the sinfo node listing and the squeue queue listing.
func (p *Slurm) ProbeCommands() [][]string { return [][]string{SinfoCommand(), QueueCommand()} }

// ParseProbe turns sinfo and squeue output into one record per partition.
func (p *Slurm) ParseProbe(outs []dialect.Output, user string) ([]model.ResourceRecord, error) {
	if len(outs) != 2 {
		return nil, fmt.Errorf("slurm probe: want 2 outputs (sinfo, squeue), got %d", len(outs))
	}
	if outs[0].ExitCode != 0 {
		return nil, fmt.Errorf("sinfo failed: %s", lastLine(outs[0]))
	}
	nodes, err := ParseSinfo(outs[0].Stdout)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, errors.New("sinfo listed no nodes: the account may not see any partition")
	}
	recs := PartitionRecords(nodes)
	if outs[1].ExitCode != 0 {
		return nil, fmt.Errorf("squeue failed: %s", lastLine(outs[1]))
	}
	jobs, err := ParseQueue(outs[1].Stdout)
	if err != nil {
		return nil, err
	}
	ApplyQueue(recs, jobs, user)
	return recs, nil
}

// RenderJob renders an sbatch script.
func (p *Slurm) RenderJob(spec model.JobSpec, files dialect.JobFiles) ([]byte, error) {
	return RenderScript(spec, files, p.EnvScript)
}

// SubmitCommand is `sbatch --parsable SCRIPT`.
func (p *Slurm) SubmitCommand(scriptPath string) []string { return SubmitCommand(scriptPath) }

// ParseSubmit reads the job id.
func (p *Slurm) ParseSubmit(out dialect.Output) (string, error) { return ParseSubmit(out) }

// StatusCommand is one sacct call for all ids.
func (p *Slurm) StatusCommand(jobIDs []string) []string { return SacctJobsCommand(jobIDs) }

// ParseStatus reads sacct output, or returns dialect.ErrFallback when accounting is off.
func (p *Slurm) ParseStatus(jobIDs []string, out dialect.Output) (map[string]model.JobStatus, error) {
	if out.ExitCode != 0 {
		if NoAccounting(out.Stderr) {
			return nil, fmt.Errorf("job accounting unavailable (%s): %w", lastLine(out), dialect.ErrFallback)
		}
		return nil, fmt.Errorf("sacct failed: %s", lastLine(out))
	}
	all, err := ParseSacct(out.Stdout, p)
	if err != nil {
		return nil, err
	}
	return only(all, jobIDs), nil
}

// FallbackStatusCommands are squeue for the ids and scontrol for exit codes.
func (p *Slurm) FallbackStatusCommands(jobIDs []string) [][]string {
	return [][]string{SqueueJobsCommand(jobIDs), ScontrolJobsCommand()}
}

// ParseFallbackStatus merges squeue states with scontrol's exit codes.
func (p *Slurm) ParseFallbackStatus(jobIDs []string, outs []dialect.Output) (map[string]model.JobStatus, error) {
	if len(outs) != 2 {
		return nil, fmt.Errorf("slurm fallback status: want 2 outputs (squeue, scontrol), got %d", len(outs))
	}
	sq := map[string]model.JobStatus{}
	if outs[0].ExitCode != 0 {
		// squeue exits 1 with "Invalid job id specified" when none of the ids is known.
		if !strings.Contains(strings.ToLower(string(outs[0].Stderr)), "invalid job id") {
			return nil, fmt.Errorf("squeue failed: %s", lastLine(outs[0]))
		}
	} else {
		var err error
		if sq, err = ParseSqueueJobs(outs[0].Stdout, p); err != nil {
			return nil, err
		}
	}
	sc := map[string]model.JobStatus{}
	if outs[1].ExitCode == 0 {
		var err error
		if sc, err = ParseScontrolJobs(outs[1].Stdout, p); err != nil {
			return nil, err
		}
	}
	res := map[string]model.JobStatus{}
	for _, id := range jobIDs {
		s, ok := sq[id]
		c, okc := sc[id]
		switch {
		case ok && okc:
			s.ExitCode, s.Signal = c.ExitCode, c.Signal
			res[id] = s
		case ok:
			res[id] = s
		case okc:
			res[id] = c
		}
	}
	return res, nil
}

// CancelCommand is scancel.
func (p *Slurm) CancelCommand(jobIDs []string) []string { return CancelCommand(jobIDs) }

// CancelPendingCommand is `scancel --state=PENDING IDS...`: slurmctld cancels only the
// jobs still pending and leaves one that has started alone (exit 0).
func (p *Slurm) CancelPendingCommand(jobIDs []string) []string {
	return append([]string{"scancel", "--state=PENDING"}, jobIDs...)
}

var _ dialect.PendingCanceller = (*Slurm)(nil)

// ParseCancel accepts unknown and finished ids.
func (p *Slurm) ParseCancel(out dialect.Output) error { return ParseCancel(out) }

// FindByTagCommand is sacct --name (last 30 days).
func (p *Slurm) FindByTagCommand(tags []string) []string { return SacctNamesCommand(tags) }

// FallbackFindByTagCommand is squeue --name, for sites without accounting.
func (p *Slurm) FallbackFindByTagCommand(tags []string) []string { return SqueueNamesCommand(tags) }

// ParseFindByTag reads sacct --name output (or dialect.ErrFallback), newest job per tag.
func (p *Slurm) ParseFindByTag(tags []string, out dialect.Output) (map[string]model.JobStatus, error) {
	if out.ExitCode != 0 {
		if NoAccounting(out.Stderr) {
			return nil, fmt.Errorf("job accounting unavailable (%s): %w", lastLine(out), dialect.ErrFallback)
		}
		return nil, fmt.Errorf("sacct failed: %s", lastLine(out))
	}
	all, err := ParseSacct(out.Stdout, p)
	if err != nil {
		return nil, err
	}
	return newestByName(all, tags), nil
}

// ParseFallbackFindByTag reads squeue --name output, newest job per tag.
func (p *Slurm) ParseFallbackFindByTag(tags []string, out dialect.Output) (map[string]model.JobStatus, error) {
	if out.ExitCode != 0 {
		return nil, fmt.Errorf("squeue failed: %s", lastLine(out))
	}
	all, err := ParseSqueueJobs(out.Stdout, p)
	if err != nil {
		return nil, err
	}
	return newestByName(all, tags), nil
}

// EstimateCommand is `sbatch --test-only SCRIPT`.
func (p *Slurm) EstimateCommand(scriptPath string) []string { return EstimateCommand(scriptPath) }

// ParseEstimate reads the start estimate.
func (p *Slurm) ParseEstimate(out dialect.Output) (time.Time, error) {
	return ParseEstimate(out, p.loc())
}

func only(all map[string]model.JobStatus, ids []string) map[string]model.JobStatus {
	res := make(map[string]model.JobStatus, len(ids))
	for _, id := range ids {
		if s, ok := all[id]; ok {
			res[id] = s
		}
	}
	return res
}

// newestByName keeps, per wanted name, the job with the highest numeric id.
func newestByName(all map[string]model.JobStatus, names []string) map[string]model.JobStatus {
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	res := map[string]model.JobStatus{}
	for _, s := range all {
		if !want[s.Name] {
			continue
		}
		if cur, ok := res[s.Name]; !ok || idLess(cur.JobID, s.JobID) {
			res[s.Name] = s
		}
	}
	return res
}

func idLess(a, b string) bool {
	if len(a) != len(b) {
		return len(a) < len(b)
	}
	return a < b
}
