package scheduler

import "github.com/mosaic-hpc/mosaic/internal/model"

// ExcludeRule removes systems the caller excludes (a migration away from them) and the
// systems the envelope says to avoid.
type ExcludeRule struct{}

var _ builtin = ExcludeRule{}

// Name implements Rule.
func (ExcludeRule) Name() string { return "exclude" }

// Check implements Rule.
func (x ExcludeRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

// Constant implements ConstantRule: nothing excluded passes everywhere.
func (ExcludeRule) Constant(r *Request) (pass, ok bool) {
	return true, len(r.Exclude) == 0 && len(r.Envelope.Constraints.AvoidSystems) == 0
}

const (
	excludeNone = iota
	excludeByCaller
	excludeAvoided
)

func (ExcludeRule) test(r *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	for _, s := range r.Exclude {
		if systemMatches(s, rec.System) {
			return fail(excludeByCaller)
		}
	}
	for _, s := range r.Envelope.Constraints.AvoidSystems {
		if systemMatches(s, rec.System) {
			return fail(excludeAvoided)
		}
	}
	return pass(excludeNone)
}

func (ExcludeRule) reason(w *words, r *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	switch o.why() {
	case excludeByCaller:
		return w.join(rec.System, " is excluded for this placement (an earlier attempt left it)")
	case excludeAvoided:
		for _, s := range r.Envelope.Constraints.AvoidSystems {
			if systemMatches(s, rec.System) {
				return w.join("the envelope avoids ", s, " (constraints.avoid_systems)")
			}
		}
	}
	return "not excluded"
}
