package scheduler

import "github.com/mosaic-hpc/mosaic/internal/model"

// AuthRule requires an account (allocation) on the candidate's system and partition.
// Records carry the account the probe found usable there; an empty one means none.
type AuthRule struct{}

// Name implements Rule.
func (AuthRule) Name() string { return "authorization" }

// Check implements Rule.
func (AuthRule) Check(r *Request, c *Candidate) Verdict {
	if c.Account == "" {
		return Failf(r, func() string {
			return "no account on " + c.System + " may use partition " + c.Partition + "; add one to sites.yaml"
		})
	}
	return Passf(r, func() string { return "account " + c.Account })
}

// fails is Check's pass/fail without the reason (see quickRule).
func (AuthRule) fails(_ *Request, rec *model.ResourceRecord, _ model.Health) bool {
	return rec.Account == ""
}
