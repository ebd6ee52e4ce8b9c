package scheduler

import "github.com/mosaic-hpc/mosaic/internal/model"

// AuthRule requires an account (allocation) on the candidate's system and partition.
// Records carry the account the probe found usable there; an empty one means none.
type AuthRule struct{}

var _ builtin = AuthRule{}

// Name implements Rule.
func (AuthRule) Name() string { return "authorization" }

// Check implements Rule.
func (x AuthRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

const (
	authAccount = iota
	authNone
)

func (AuthRule) test(_ *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	if rec.Account == "" {
		return fail(authNone)
	}
	return pass(authAccount)
}

func (AuthRule) reason(w *words, _ *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	if o.why() == authNone {
		return w.join("no account on ", rec.System, " may use partition ", rec.Partition, "; add one to sites.yaml")
	}
	return w.join("account ", rec.Account)
}
