package scheduler

import (
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// PinRule keeps only the pinned system (and partition) when the task has a Target.
type PinRule struct{}

// Name implements Rule.
func (PinRule) Name() string { return "pin" }

// Check implements Rule.
func (PinRule) Check(r *Request, c *Candidate) Verdict {
	t := r.Target
	if t == nil || t.System == "" {
		return Pass("not pinned")
	}
	if !systemMatches(t.System, c.System) {
		return Failf(r, func() string { return "task is pinned to " + t.System })
	}
	if t.Partition != "" && !strings.EqualFold(t.Partition, c.Partition) {
		return Failf(r, func() string { return "task is pinned to partition " + t.Partition })
	}
	return Pass("pinned target")
}

// Constant implements ConstantRule: an unpinned task passes everywhere.
func (PinRule) Constant(r *Request) (pass, ok bool) {
	return true, r.Target == nil || r.Target.System == ""
}

// fails is Check's pass/fail without the reason (see quickRule).
func (PinRule) fails(r *Request, rec *model.ResourceRecord, _ model.Health) bool {
	t := r.Target
	if t == nil || t.System == "" {
		return false
	}
	return !systemMatches(t.System, rec.System) || (t.Partition != "" && !strings.EqualFold(t.Partition, rec.Partition))
}
