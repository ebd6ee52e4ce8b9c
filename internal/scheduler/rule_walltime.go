package scheduler

import "github.com/mosaic-hpc/mosaic/internal/model"

// WalltimeRule requires the envelope's minimum walltime to be within the partition's cap.
type WalltimeRule struct{}

// Name implements Rule.
func (WalltimeRule) Name() string { return "walltime" }

// Check implements Rule.
func (WalltimeRule) Check(r *Request, c *Candidate) Verdict {
	capw := c.Record.WalltimeCap
	if capw <= 0 {
		return Pass("no cap known")
	}
	if r.Envelope.Walltime.Min > capw {
		return Failf(r, func() string {
			return "partition allows " + capw.String() + "; walltime.min is " + r.Envelope.Walltime.Min.String() + ". Lower walltime.min or pick another partition"
		})
	}
	return Passf(r, func() string { return "cap " + capw.String() })
}

// fails is Check's pass/fail without the reason (see quickRule).
func (WalltimeRule) fails(r *Request, rec *model.ResourceRecord, _ model.Health) bool {
	capw := rec.WalltimeCap
	return capw > 0 && r.Envelope.Walltime.Min > capw
}
