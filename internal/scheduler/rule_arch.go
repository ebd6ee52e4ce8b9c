package scheduler

import (
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ArchRule checks the partition's CPU architecture against constraints.arch, or, when
// that is empty, against the host architecture the requested GPU models imply (a GH200
// request needs an aarch64 Grace host; see model.ImpliedHostArch).
type ArchRule struct{}

var _ builtin = ArchRule{}

// Name implements Rule.
func (ArchRule) Name() string { return "arch" }

// Check implements Rule.
func (x ArchRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

// Constant implements ConstantRule: no arch constraint passes everywhere.
func (ArchRule) Constant(r *Request) (pass, ok bool) {
	return true, len(archAllowed(r)) == 0
}

// archAllowed is constraints.arch, or the host architecture the GPU models imply when
// the task needs GPUs and gives no arch.
func archAllowed(r *Request) []string {
	env := &r.Envelope
	if len(env.Constraints.Arch) > 0 || env.GPUs.Min == 0 {
		return env.Constraints.Arch
	}
	if a := model.ImpliedHostArch(env.Constraints.GPUModels); a != "" {
		return []string{a}
	}
	return nil
}

const (
	archAny = iota
	archMatch
	archUnknown
	archOther
)

func (ArchRule) test(r *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	allowed := archAllowed(r)
	switch {
	case len(allowed) == 0:
		return pass(archAny)
	case rec.Arch == "":
		return fail(archUnknown)
	case !containsFold(allowed, rec.Arch):
		return fail(archOther)
	}
	return pass(archMatch)
}

func (ArchRule) reason(w *words, r *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	allowed := archAllowed(r)
	implied := len(r.Envelope.Constraints.Arch) == 0
	switch o.why() {
	case archUnknown:
		if implied {
			return w.join("partition arch is unknown; ", strings.Join(r.Envelope.Constraints.GPUModels, ","), " needs an ", allowed[0], " host")
		}
		return w.join("partition arch is unknown; constraints.arch asks for ", strings.Join(allowed, ","))
	case archOther:
		if implied {
			return w.join(rec.Arch, " host; ", strings.Join(r.Envelope.Constraints.GPUModels, ","), " needs an ", allowed[0], " host")
		}
		return w.join(rec.Arch, " is not in constraints.arch (", strings.Join(allowed, ","), ")")
	case archMatch:
		return rec.Arch
	}
	return "any arch"
}
