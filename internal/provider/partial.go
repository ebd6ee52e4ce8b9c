package provider

import (
	"errors"
	"fmt"
	"sort"
	"strings"
)

// PartialError reports a batch call (status, cancel, find by tag) that was made for
// some of its keys (job ids or tags) and not for others: Failed says why per key (on
// a system with per-user identities, a job whose owner has none there). The call's
// answer holds the keys it was made for, so one such job does not stop the others.
type PartialError struct {
	System string
	Failed map[string]error
}

func (e *PartialError) Error() string {
	keys := make([]string, 0, len(e.Failed))
	for k := range e.Failed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, min(len(keys), 5))
	for _, k := range keys[:min(len(keys), 5)] {
		parts = append(parts, k+": "+e.Failed[k].Error())
	}
	more := ""
	if len(keys) > 5 {
		more = fmt.Sprintf(" (and %d more)", len(keys)-5)
	}
	return fmt.Sprintf("%s: %d of the batch not asked: %s%s", e.System, len(keys), strings.Join(parts, "; "), more)
}

// Unwrap returns the per-key errors (so errors.Is finds their causes).
func (e *PartialError) Unwrap() []error {
	out := make([]error, 0, len(e.Failed))
	for _, err := range e.Failed {
		out = append(out, err)
	}
	return out
}

// Partial returns the per-key errors of a PartialError in err's chain.
func Partial(err error) (map[string]error, bool) {
	var pe *PartialError
	if errors.As(err, &pe) {
		return pe.Failed, true
	}
	return nil, false
}
