package scheduler

import "github.com/mosaic-hpc/mosaic/internal/model"

// WalltimeRule requires the envelope's minimum walltime to be within the partition's cap.
type WalltimeRule struct{}

var _ builtin = WalltimeRule{}

// Name implements Rule.
func (WalltimeRule) Name() string { return "walltime" }

// Check implements Rule.
func (x WalltimeRule) Check(r *Request, c *Candidate) Verdict { return verdict(x, r, c) }

const (
	walltimeWithinCap = iota
	walltimeNoCap
	walltimeOverCap
)

func (WalltimeRule) test(r *Request, rec *model.ResourceRecord, _ model.Health) outcome {
	switch capw := rec.WalltimeCap; {
	case capw <= 0:
		return pass(walltimeNoCap)
	case r.Envelope.Walltime.Min > capw:
		return fail(walltimeOverCap)
	}
	return pass(walltimeWithinCap)
}

func (WalltimeRule) reason(w *words, r *Request, rec *model.ResourceRecord, _ model.Health, o outcome) string {
	capw := rec.WalltimeCap
	switch o.why() {
	case walltimeNoCap:
		return "no cap known"
	case walltimeOverCap:
		return w.join("partition allows ", w.duration(capw), "; walltime.min is ", w.duration(r.Envelope.Walltime.Min), ". Lower walltime.min or pick another partition")
	}
	return w.join("cap ", w.duration(capw))
}
