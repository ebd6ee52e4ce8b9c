package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/errs"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// serveJobs runs a launch's submit-mode jobs as tasks of a running `mosaic
// serve` (the core that owns the user's store), over its API: they are that
// serve's tasks, in its `mosaic tasks`, events and UI, monitored by it.
type serveJobs struct{ c *client.Client }

var _ campaign.Jobs = serveJobs{}

// SubmitCampaignJob implements campaign.Jobs. The serve stores the task before it
// calls the site, but its id reaches the launcher only with the answer, so
// req.Stored is called after the answer (the core's own implementation calls it
// before the site is called). In the window between — the request sent, the
// answer lost (the launcher killed, the connection cut, the client's timeout) —
// the run directory has no task id; the serve owns the task and monitors it
// whatever happens to the launcher, and `mosaic tasks` on that serve lists it
// under the run's name ("campaign RUN on SITE") for `mosaic cancel`.
func (j serveJobs) SubmitCampaignJob(ctx context.Context, req campaign.JobRequest) (string, error) {
	// The serve bounds its own submit (the site's command timeout, then a lookup by
	// tag); the request outlives that, whatever the launcher's own submit bound, so
	// the answer — with the task id — is not cut off while the job is being queued.
	hctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), client.RequestTimeout)
	defer cancel()
	id, err := j.c.SubmitCampaignJob(hctx, core.V1CampaignJobRequest(req))
	if id != "" && req.Stored != nil {
		req.Stored(id)
	}
	if err != nil {
		if id != "" {
			return id, fmt.Errorf("task %s of the core at %s: %w", id, j.c.URL(), err)
		}
		var ae *client.APIError
		if errors.As(err, &ae) && ae.Status == http.StatusNotFound {
			return "", fmt.Errorf("hand the job of site %s to the core at %s: %w (start that `mosaic serve` with the launch's sites catalog, --sites)", req.Site, j.c.URL(), err)
		}
		if !errors.As(err, &ae) {
			// No answer: the serve may have stored the task and queued its job.
			return "", errs.Mark(fmt.Errorf("hand the job of site %s to the core at %s: no answer (%w); its job may be queued under %s", req.Site, j.c.URL(), err, req.Spec.Tag), errs.ErrOutcomeUnknown)
		}
		return "", fmt.Errorf("hand the job of site %s to the core at %s: %w", req.Site, j.c.URL(), err)
	}
	return id, nil
}

// CampaignJob implements campaign.Jobs.
func (j serveJobs) CampaignJob(ctx context.Context, taskID string) (campaign.JobView, error) {
	v, err := j.c.CampaignJob(ctx, taskID)
	if err != nil {
		return campaign.JobView{}, fmt.Errorf("task %s of the core at %s: %w", taskID, j.c.URL(), err)
	}
	return core.CampaignJobFromV1(*v), nil
}

// CancelCampaignJob implements campaign.Jobs: the serve cancels the task and its
// job at the site; its monitor confirms it.
func (j serveJobs) CancelCampaignJob(ctx context.Context, taskID, why string) error {
	v, err := j.c.CancelCampaignJob(ctx, taskID, why)
	if err != nil {
		return fmt.Errorf("cancel task %s through the core at %s: %w", taskID, j.c.URL(), err)
	}
	if v.CancelPending {
		// As the core in process says it (campaign.Jobs): the site has not confirmed,
		// so `campaign stop` cancels at the site directly as well.
		return fmt.Errorf("task %s: the cancel of job %s is not confirmed by the site yet: %w", taskID, v.JobID, campaign.ErrCancelPending)
	}
	return nil
}

// serveOwning returns the jobs of the `mosaic serve` answering on the configured
// URL with the configured token (newClient) when that serve's store is dbPath;
// why says what answered otherwise.
func serveOwning(ctx context.Context, dbPath string) (jobs campaign.Jobs, url string, why error) {
	c, err := newClient()
	if err != nil {
		return nil, "", err
	}
	actx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	a, err := c.About(actx)
	if err != nil {
		return nil, c.URL(), err
	}
	if !sameFile(a.Store, dbPath) {
		return nil, c.URL(), fmt.Errorf("the core at %s runs on the store %q, not %s", c.URL(), a.Store, store.RedactDSN(dbPath))
	}
	return serveJobs{c}, c.URL(), nil
}

// sameFile reports whether two paths name one existing file.
func sameFile(a, b string) bool {
	if a == "" || b == "" {
		return false
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return errors.Join(err1, err2) == nil && os.SameFile(fa, fb)
}
