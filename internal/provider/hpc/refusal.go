package hpc

import (
	"errors"
	"fmt"
)

// RefusalKind says why a look-around request was refused, so surfaces can answer
// with the fitting 4xx status.
type RefusalKind int

const (
	// RefusedInvalid: the request itself is malformed (empty, unknown option, bad name). HTTP 400.
	RefusedInvalid RefusalKind = iota
	// RefusedForbidden: well-formed, but it would read secrets or leave the workdir. HTTP 403.
	RefusedForbidden
	// RefusedConflict: the target exists in a form that cannot be replaced (a directory). HTTP 409.
	RefusedConflict
	// RefusedTooLarge: over a size limit. HTTP 413.
	RefusedTooLarge
)

// ErrRefused matches every *RefusedError with errors.Is.
var ErrRefused = errors.New("refused")

// RefusedError is a look-around request Mosaic or the site's check refused. Reason
// says what was refused and what to do instead.
type RefusedError struct {
	Kind   RefusalKind
	Reason string
}

func (e *RefusedError) Error() string { return "refused: " + e.Reason }

// Is makes errors.Is(err, ErrRefused) true.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

func refuse(kind RefusalKind, format string, args ...any) *RefusedError {
	return &RefusedError{Kind: kind, Reason: fmt.Sprintf(format, args...)}
}
