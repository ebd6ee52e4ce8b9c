package scheduler

import "github.com/mosaic-hpc/mosaic/internal/model"

// ExcludeRule removes systems the caller excludes (a migration away from them) and the
// systems the envelope says to avoid.
type ExcludeRule struct{}

// Name implements Rule.
func (ExcludeRule) Name() string { return "exclude" }

// Check implements Rule.
func (ExcludeRule) Check(r *Request, c *Candidate) Verdict {
	for _, s := range r.Exclude {
		if systemMatches(s, c.System) {
			return Failf(r, func() string { return c.System + " is excluded for this placement (an earlier attempt left it)" })
		}
	}
	for _, s := range r.Envelope.Constraints.AvoidSystems {
		if systemMatches(s, c.System) {
			return Failf(r, func() string { return "the envelope avoids " + s + " (constraints.avoid_systems)" })
		}
	}
	return Pass("not excluded")
}

// Constant implements ConstantRule: nothing excluded passes everywhere.
func (ExcludeRule) Constant(r *Request) (pass, ok bool) {
	return true, len(r.Exclude) == 0 && len(r.Envelope.Constraints.AvoidSystems) == 0
}

// fails is Check's pass/fail without the reason (see quickRule).
func (ExcludeRule) fails(r *Request, rec *model.ResourceRecord, _ model.Health) bool {
	for _, s := range r.Exclude {
		if systemMatches(s, rec.System) {
			return true
		}
	}
	for _, s := range r.Envelope.Constraints.AvoidSystems {
		if systemMatches(s, rec.System) {
			return true
		}
	}
	return false
}
