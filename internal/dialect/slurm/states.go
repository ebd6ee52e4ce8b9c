package slurm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// stateMap maps every Slurm job state, long and compact form, to Mosaic's state.
var stateMap = map[string]model.JobState{
	"PENDING": model.JobPending, "PD": model.JobPending,
	// CONFIGURING: resources allocated, nodes booting; the job's program has not started.
	"CONFIGURING": model.JobPending, "CF": model.JobPending,
	"RUNNING": model.JobRunning, "R": model.JobRunning,
	// RESIZING: a running job changing its size.
	"RESIZING": model.JobRunning, "RS": model.JobRunning,
	// SIGNALING: a running job being sent a signal.
	"SIGNALING": model.JobRunning, "SI": model.JobRunning,
	"COMPLETING": model.JobCompleting, "CG": model.JobCompleting,
	// STAGE_OUT: burst-buffer stage-out after the program ended.
	"STAGE_OUT": model.JobCompleting, "SO": model.JobCompleting,
	"COMPLETED": model.JobSucceeded, "CD": model.JobSucceeded,
	"FAILED": model.JobFailed, "F": model.JobFailed,
	// SPECIAL_EXIT: the job exited with the site's special exit value and is held.
	"SPECIAL_EXIT": model.JobFailed, "SE": model.JobFailed,
	"TIMEOUT": model.JobTimeout, "TO": model.JobTimeout,
	"OUT_OF_MEMORY": model.JobOOM, "OOM": model.JobOOM,
	"NODE_FAIL": model.JobNodeFail, "NF": model.JobNodeFail,
	"BOOT_FAIL": model.JobBootFail, "BF": model.JobBootFail,
	"CANCELLED": model.JobCancelled, "CA": model.JobCancelled,
	// REVOKED: a federated sibling was revoked because the job started on another cluster.
	"REVOKED": model.JobCancelled, "RV": model.JobCancelled,
	"PREEMPTED": model.JobPreempted, "PR": model.JobPreempted,
	"DEADLINE": model.JobDeadline, "DL": model.JobDeadline,
	"REQUEUED": model.JobRequeued, "RQ": model.JobRequeued,
	"REQUEUE_HOLD": model.JobRequeued, "RH": model.JobRequeued,
	"REQUEUE_FED": model.JobRequeued, "RF": model.JobRequeued,
	"SUSPENDED": model.JobSuspended, "S": model.JobSuspended,
	"STOPPED": model.JobSuspended, "ST": model.JobSuspended,
	// RESV_DEL_HOLD: held because its reservation was deleted; still queued.
	"RESV_DEL_HOLD": model.JobPending, "RD": model.JobPending,
}

// MapState maps a Slurm job state as printed by squeue, sacct or scontrol ("RUNNING",
// "R", "CANCELLED by 1234", "COMPLETED+", "PENDING(Resources)") to Mosaic's state.
// Unknown states map to model.JobUnknown; callers keep the raw text.
func MapState(raw string) model.JobState {
	s := strings.ToUpper(strings.TrimSpace(raw))
	if i := strings.IndexAny(s, " (+"); i >= 0 {
		s = s[:i]
	}
	if st, ok := stateMap[s]; ok {
		return st
	}
	return model.JobUnknown
}

// ParseExitCode reads Slurm's "exit:signal" pair ("3:0" → 3, 0; "0:15" → 0, 15).
// A bare number is an exit code. Empty input is 0, 0.
func ParseExitCode(s string) (exit, signal int, err error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, 0, nil
	}
	a, b, hasSig := strings.Cut(s, ":")
	exit, err = strconv.Atoi(a)
	if err != nil || exit < 0 {
		return 0, 0, fmt.Errorf("exit code %q: want EXIT:SIGNAL", s)
	}
	if hasSig {
		signal, err = strconv.Atoi(b)
		if err != nil || signal < 0 {
			return 0, 0, fmt.Errorf("exit code %q: want EXIT:SIGNAL", s)
		}
	}
	return exit, signal, nil
}
