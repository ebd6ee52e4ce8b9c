// Package errs holds the sentinel errors every layer shares: a site that cannot be
// reached, credentials that are missing, an operation a site cannot do, and the two
// classes of a failed request the execution layer acts on (transient; outcome
// unknown). It imports nothing of Mosaic's, so the lowest layers (transport, auth,
// dialect) can wrap them without importing the provider contract above them;
// internal/provider re-exports the first three, so errors.Is works with either name.
package errs

import "errors"

// ErrUnsupported is returned by optional operations a provider cannot perform
// (for example a start-time estimate on a scheduler without one).
var ErrUnsupported = errors.New("not supported by this provider")

// ErrSiteDown is wrapped by errors that mean the site cannot be reached at all
// (as opposed to refusing one request). The collector marks the system down.
var ErrSiteDown = errors.New("site unreachable")

// ErrNeedsLogin is wrapped by errors that mean credentials are missing or expired.
var ErrNeedsLogin = errors.New("credentials missing or expired")

// ErrTransient marks a refusal that may go away by itself: the scheduler was busy or
// briefly unreachable (Slurm's "Resource temporarily unavailable", PBS's "cannot
// connect to server"). The same request may succeed if tried again later.
var ErrTransient = errors.New("transient: the site was unreachable or busy")

// ErrOutcomeUnknown marks a failure that leaves open whether the site acted on the
// request: the command timed out, or the connection broke while it ran (Slurm's
// "Socket timed out on send/recv operation" after sbatch may have queued the job).
// A submit so marked must be looked up by its tag before it is tried again.
var ErrOutcomeUnknown = errors.New("the site may have acted on the request")

// Mark returns an error with err's message whose chain also holds marks, so that
// errors.Is(Mark(err, ErrTransient), ErrTransient) is true while users still read the
// site's own words. Mark(nil, ...) is nil; with no marks it returns err.
func Mark(err error, marks ...error) error {
	if err == nil || len(marks) == 0 {
		return err
	}
	return &marked{err: err, marks: marks}
}

type marked struct {
	err   error
	marks []error
}

func (m *marked) Error() string { return m.err.Error() }

func (m *marked) Unwrap() []error { return append([]error{m.err}, m.marks...) }
