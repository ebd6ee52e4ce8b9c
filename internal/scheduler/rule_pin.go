package scheduler

import (
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// PinRule keeps only the pinned system (and partition) when the task has a Target.
type PinRule struct{}

var _ builtin = PinRule{}

// Name implements Rule.
func (PinRule) Name() string { return "pin" }

// Check implements Rule.
func (x PinRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

// Constant implements ConstantRule: an unpinned task passes everywhere.
func (PinRule) Constant(r *Request) (pass, ok bool) {
	return true, r.Target == nil || r.Target.System == ""
}

const (
	pinNone = iota
	pinTarget
	pinOtherSystem
	pinOtherPartition
)

func (PinRule) test(r *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	t := r.Target
	switch {
	case t == nil || t.System == "":
		return pass(pinNone)
	case !systemMatches(t.System, rec.System):
		return fail(pinOtherSystem)
	case t.Partition != "" && !strings.EqualFold(t.Partition, rec.Partition):
		return fail(pinOtherPartition)
	}
	return pass(pinTarget)
}

func (PinRule) reason(w *words, r *Request, _ *model.ResourceRecord, _ model.Health, o outcome) string {
	switch o.why() {
	case pinOtherSystem:
		return w.join("task is pinned to ", r.Target.System)
	case pinOtherPartition:
		return w.join("task is pinned to partition ", r.Target.Partition)
	case pinTarget:
		return "pinned target"
	}
	return "not pinned"
}
