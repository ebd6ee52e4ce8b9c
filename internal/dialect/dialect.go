// Package dialect defines what Mosaic needs from a batch system's command-line tools:
// which commands to run and how to read their output. Implementations (slurm, pbs) are
// pure: they build argument vectors and parse bytes, and never run anything themselves.
// internal/provider/hpc runs their commands through a transport.
package dialect

import (
	"errors"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ErrFallback is returned by ParseStatus when the primary status query cannot work on
// this site (e.g. Slurm without accounting) and FallbackStatusCommands must be used.
var ErrFallback = errors.New("status query unavailable on this site; use the fallback commands")

// Output is one command's result as a dialect sees it.
type Output struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int
}

// JobFiles are the paths a rendered job uses on the site.
type JobFiles struct {
	Script string // where the script is uploaded
	Stdout string // the job's standard output
	Stderr string // the job's standard error
}

// Dialect is one batch system's command language.
type Dialect interface {
	// Name is "slurm" or "pbs".
	Name() string
	// VersionCommand prints the scheduler's version.
	VersionCommand() []string
	// ParseVersion reads VersionCommand's output.
	ParseVersion(out []byte) (string, error)

	// ProbeCommands are run in order; their outputs go to ParseProbe.
	ProbeCommands() [][]string
	// ParseProbe turns the probe outputs into one record per partition/queue (Account
	// empty); user is the login user, for the My* counters.
	ParseProbe(outputs []Output, user string) ([]model.ResourceRecord, error)

	// RenderJob writes the batch script for spec.
	RenderJob(spec model.JobSpec, files JobFiles) ([]byte, error)
	// SubmitCommand submits the uploaded script.
	SubmitCommand(scriptPath string) []string
	// ParseSubmit reads the job id from a submission's output; a non-zero exit is an error
	// carrying the scheduler's message.
	ParseSubmit(out Output) (jobID string, err error)

	// StatusCommand asks for many jobs in one call.
	StatusCommand(jobIDs []string) []string
	// ParseStatus reads StatusCommand's output; ids the site does not know are absent.
	ParseStatus(jobIDs []string, out Output) (map[string]model.JobStatus, error)
	// FallbackStatusCommands are used after ParseStatus returned ErrFallback; nil if none.
	FallbackStatusCommands(jobIDs []string) [][]string
	// ParseFallbackStatus reads the fallback outputs.
	ParseFallbackStatus(jobIDs []string, outs []Output) (map[string]model.JobStatus, error)

	// CancelCommand cancels jobs.
	CancelCommand(jobIDs []string) []string
	// ParseCancel judges a cancel's output; unknown or finished ids are not errors.
	ParseCancel(out Output) error

	// FindByTagCommand lists jobs whose name is one of tags.
	FindByTagCommand(tags []string) []string
	// ParseFindByTag returns the newest job per tag (or ErrFallback).
	ParseFindByTag(tags []string, out Output) (map[string]model.JobStatus, error)
	// FallbackFindByTagCommand is used after ParseFindByTag returned ErrFallback; nil if none.
	FallbackFindByTagCommand(tags []string) []string
	// ParseFallbackFindByTag reads FallbackFindByTagCommand's output.
	ParseFallbackFindByTag(tags []string, out Output) (map[string]model.JobStatus, error)

	// EstimateCommand asks when the uploaded script would start; nil if unsupported.
	EstimateCommand(scriptPath string) []string
	// ParseEstimate reads EstimateCommand's output.
	ParseEstimate(out Output) (time.Time, error)
}
