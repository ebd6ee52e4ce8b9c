package scheduler

import (
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ContainerRule requires a container runtime when the envelope names an image. Apptainer
// and Singularity are interchangeable (sites alias one to the other).
type ContainerRule struct{}

var _ builtin = ContainerRule{}

// Name implements Rule.
func (ContainerRule) Name() string { return "container" }

// Check implements Rule.
func (x ContainerRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

// Constant implements ConstantRule: no container passes everywhere.
func (ContainerRule) Constant(r *Request) (pass, ok bool) {
	return true, r.Envelope.Constraints.Container == nil
}

const (
	containerRuntime = iota // the first compatible runtime (any, when none is asked for)
	containerNone
	containerNoRuntimes
	containerUnavailable
)

func (ContainerRule) test(r *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	ct := r.Envelope.Constraints.Container
	switch {
	case ct == nil:
		return pass(containerNone)
	case len(rec.ContainerRuntimes) == 0:
		return fail(containerNoRuntimes)
	case compatibleRuntime(ct.Runtime, rec.ContainerRuntimes) < 0:
		return fail(containerUnavailable)
	}
	return pass(containerRuntime)
}

func (ContainerRule) reason(w *words, r *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	ct, have := r.Envelope.Constraints.Container, rec.ContainerRuntimes
	switch o.why() {
	case containerNone:
		return "no container"
	case containerNoRuntimes:
		return w.join("no container runtime reported here; the task runs in ", ct.Image)
	case containerUnavailable:
		return w.join("runtime ", ct.Runtime, " is not available (have ", strings.Join(have, ","), ")")
	}
	return have[compatibleRuntime(ct.Runtime, have)]
}

// compatibleRuntime is the index of the first runtime of have that can run want (any,
// when want is ""), or -1.
func compatibleRuntime(want string, have []string) int {
	if want == "" && len(have) > 0 {
		return 0
	}
	for i, h := range have {
		if runtimeCompatible(want, h) {
			return i
		}
	}
	return -1
}

func runtimeCompatible(want, have string) bool {
	if strings.EqualFold(want, have) {
		return true
	}
	isApp := func(s string) bool { return strings.EqualFold(s, "apptainer") || strings.EqualFold(s, "singularity") }
	return isApp(want) && isApp(have)
}
