package hpc

import (
	"context"
	"fmt"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
)

// LiveStatus reports jobs as the scheduler's controller sees them now (Slurm: squeue
// for the ids and scontrol for exit codes, the dialect's fallback status query), not
// as accounting (sacct) has recorded them: a job scancel has just cancelled shows
// CANCELLED here at once, while sacct can still list it PENDING for seconds. A job the
// controller no longer remembers (ended longer ago than MinJobAge) is absent. An error
// wrapping provider.ErrUnsupported when the dialect has no controller-side listing
// (PBS, whose Status is qstat, the server's own view, already). Routed per owner like
// Status, with a *provider.PartialError naming the jobs not asked about.
func (p *Provider) LiveStatus(ctx context.Context, jobIDs []string) (map[string]model.JobStatus, error) {
	if p.d.FallbackStatusCommands([]string{"0"}) == nil {
		return nil, fmt.Errorf("%s: %s has no live job listing beside its accounting: %w", p.sys.Name, p.d.Name(), provider.ErrUnsupported)
	}
	return p.routedStatus(ctx, jobIDs, (*Provider).fallbackStatus)
}
