// Package dialect defines what Mosaic needs from a batch system's command-line tools:
// which commands to run and how to read their output. Implementations (slurm, pbs) are
// pure: they build argument vectors and parse bytes, and never run anything themselves.
// internal/provider/hpc runs their commands through a transport.
package dialect

import (
	"errors"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/errs"
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

// Class is a dialect's verdict on a failed command's message.
type Class int

const (
	// Permanent: the scheduler refused the request; the same request fails again.
	Permanent Class = iota
	// Transient: the scheduler was busy or could not be reached, and did nothing; the
	// same request may succeed later.
	Transient
	// OutcomeUnknown: the command gave up (a timeout, a connection cut) while the
	// scheduler may have acted; a submit may have queued the job. It is transient too.
	OutcomeUnknown
)

func (c Class) String() string {
	switch c {
	case Transient:
		return "transient"
	case OutcomeUnknown:
		return "outcome unknown"
	}
	return "permanent"
}

// Dialect is one batch system's command language.
type Dialect interface {
	// Name is "slurm" or "pbs".
	Name() string
	// ScriptExt is the batch script's file extension, with its dot (".sbatch", ".pbs").
	ScriptExt() string
	// Classify judges a failed command's message (stderr and stdout, as the site
	// printed them): whether the scheduler refused, was busy or unreachable, or may
	// have acted although the command failed. Each dialect knows its own texts.
	Classify(msg string) Class
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

// PendingCanceller is implemented by dialects whose cancel can be limited to jobs still
// queued, atomically at the scheduler (the controller itself skips a job that has
// started). ParseCancel judges its output.
type PendingCanceller interface {
	CancelPendingCommand(jobIDs []string) []string
}

// QueuedStarter is implemented by dialects whose scheduler says when a job already in
// its queue is expected to start, in its own place in line (Slurm's squeue --start,
// PBS's estimated.start_time) — unlike EstimateCommand, which asks about a new job
// that would queue behind it. ParseQueuedStart returns the zero time and no error when
// the scheduler has no estimate for the job (not planned yet, or no longer queued).
type QueuedStarter interface {
	QueuedStartCommand(jobID string) []string
	ParseQueuedStart(jobID string, out Output) (time.Time, error)
}

// QueuePlanner is implemented by dialects whose EstimateCommand plans a new job
// against the running jobs only, ignoring the jobs queued ahead of it (Slurm's
// will-run test). PlanCommands run on the login node in the same remote command as a
// batch of estimates (or a queued job's start); PlanStarts reads their outputs (in
// order) and plans each spec behind the queue, PlanQueued a queued job in its own
// place in line. The provider takes the later of the limits' plan and the scheduler's
// own answer, and moves that earlier by what the predicted runtimes gain.
type QueuePlanner interface {
	// PlanCommands are the commands and the most bytes each may print (the provider
	// cuts the output there; PlanStarts refuses a listing that reached it).
	PlanCommands() (cmds [][]string, maxOutput int)
	// PlanStarts plans specs behind the listed queue and, ahead of them, the jobs in
	// submitted (this core's own submissions the listing may predate) that it does
	// not list.
	PlanStarts(outs []Output, specs []model.JobSpec, submitted []Submitted, now time.Time) ([]PlannedStart, error)
	PlanQueued(outs []Output, jobID string, now time.Time) (PlannedStart, error)
}

// Submitted is a job this core submitted to the site whose submission may not show
// in a plan's listing yet: still in flight (JobID empty), or accepted after the listing
// was taken. Two placements a moment apart would otherwise both see the same idle
// GPUs. Own: submitted as the identity the plan is made for (its runtime predicted as
// that user's).
type Submitted struct {
	JobID string
	Spec  model.JobSpec
	Own   bool
}

// PlannedStart is a queue plan's answer for one job (zero times: not planned).
type PlannedStart struct {
	// Limits: every job planned for its time limit, as the site's scheduler plans.
	Limits time.Time
	// Predicted: the user's own jobs planned for their predicted runtimes (their
	// history of used against asked time); zero when the history is too short.
	Predicted time.Time
	// QueueAllowance is the part of the scheduler's own estimate for a new job that is
	// its rough allowance for the queue ahead, not a fit of the queue (Slurm's will-run
	// test adds the pending jobs' CPU-time in the partition spread over its CPUs); the
	// plan counts that queue itself, so the caller takes this off the scheduler's
	// answer before it takes the later of the two. Zero when Limits is not planned or
	// the allowance cannot be worked out.
	QueueAllowance time.Duration
}

// Gain is how much earlier the predicted runtimes put the job than the limits do
// (0 when either is not planned, or the prediction is not earlier).
func (s PlannedStart) Gain() time.Duration {
	if s.Limits.IsZero() || s.Predicted.IsZero() || !s.Predicted.Before(s.Limits) {
		return 0
	}
	return s.Limits.Sub(s.Predicted)
}

// Mark returns err marked with the sentinels of d's verdict on out: errs.ErrTransient
// for Transient; errs.ErrTransient and errs.ErrOutcomeUnknown for OutcomeUnknown; err
// unchanged for Permanent. The message stays the site's own.
func Mark(d Dialect, out Output, err error) error {
	if err == nil {
		return nil
	}
	switch d.Classify(string(out.Stderr) + "\n" + string(out.Stdout)) {
	case Transient:
		return errs.Mark(err, errs.ErrTransient)
	case OutcomeUnknown:
		return errs.Mark(err, errs.ErrTransient, errs.ErrOutcomeUnknown)
	}
	return err
}

// ClassifyCommon judges the texts every login node's tools print, whatever the
// scheduler: the operating system's EAGAIN ("Resource temporarily unavailable", e.g.
// fork on a loaded login node), "try again", and a network timeout or reset while a
// request was in flight. Dialects call it after their own texts; ok is false when
// none matched.
func ClassifyCommon(msg string) (c Class, ok bool) {
	low := strings.ToLower(msg)
	switch {
	case containsAny(low, "could not resolve", "no route to host", "connection refused", "connect to host"):
		return Transient, true // never reached the service: nothing was done
	case containsAny(low, "timed out", "connection reset", "broken pipe"):
		return OutcomeUnknown, true
	case containsAny(low, "temporarily", "try again"):
		return Transient, true
	}
	return Permanent, false
}

func containsAny(s string, subs ...string) bool {
	for _, w := range subs {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

// ContainsAny reports whether the lower-cased msg contains any of subs (lower case).
func ContainsAny(msg string, subs ...string) bool { return containsAny(strings.ToLower(msg), subs...) }
