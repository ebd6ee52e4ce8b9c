package provider

import (
	"context"
	"errors"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ErrNoOutput is wrapped by OutputReader errors when neither output file exists: the
// job has not started yet, or its files were deleted (a scratch purge, a cleanup).
var ErrNoOutput = errors.New("no output files")

// OutputLocator is implemented by providers that know where a job writes its stdout
// and stderr without asking the site (the paths follow from the catalog, the tag and
// the job id). The dispatcher records the location with the attempt when the site
// accepts the job.
type OutputLocator interface {
	Output(spec model.JobSpec, jobID string) (model.JobOutput, error)
}

// OutputReader is implemented by providers that can read a recorded output location
// back without holding the job in memory, so logs survive a restart of the core.
type OutputReader interface {
	// ReadOutput returns the last tail bytes of both files. A missing file reads as
	// empty; when both are missing the error wraps ErrNoOutput (the returned Logs
	// still name the paths).
	ReadOutput(ctx context.Context, out model.JobOutput, tail int) (model.Logs, error)
}

// OutputOf is where p says the job writes its output, or nil when p cannot tell
// (what the dispatcher stores with an accepted attempt).
func OutputOf(p Provider, spec model.JobSpec, jobID string) *model.JobOutput {
	l, ok := p.(OutputLocator)
	if !ok {
		return nil
	}
	out, err := l.Output(spec, jobID)
	if err != nil {
		return nil
	}
	return &out
}
