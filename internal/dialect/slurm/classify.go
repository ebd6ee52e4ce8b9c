package slurm

import "github.com/mosaic-hpc/mosaic/internal/dialect"

// ScriptExt is ".sbatch".
func (p *Slurm) ScriptExt() string { return ".sbatch" }

// Classify judges a failed Slurm command's message. The controller being unreachable
// ("Unable to contact slurm controller (connect failure)") is transient: nothing was
// done. "Socket timed out on send/recv operation" is the classic ambiguous answer:
// slurmctld may have queued the job before the reply was lost. "Slurm temporarily
// unable to accept job" and the slurm_load_* query errors are transient. Anything else
// (an invalid account, an impossible request) is the scheduler refusing.
func (p *Slurm) Classify(msg string) dialect.Class {
	switch {
	case dialect.ContainsAny(msg, "unable to contact slurm controller", "connect failure"):
		return dialect.Transient
	case dialect.ContainsAny(msg, "socket timed out", "zero bytes were transmitted or received"):
		return dialect.OutcomeUnknown
	case dialect.ContainsAny(msg, "slurm temporarily unable", "slurm_load", "slurmctld is not responding",
		"resource temporarily unavailable", "try again"):
		return dialect.Transient
	}
	c, _ := dialect.ClassifyCommon(msg)
	return c
}
