package client

import (
	"context"
	"net/http"
	"net/url"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// Campaign job types (aliases of the api/v1 wire types).
type (
	CampaignJobRequest   = v1.CampaignJobRequest
	CampaignJob          = v1.CampaignJob
	CampaignJobSubmitted = v1.CampaignJobSubmitted
)

// SubmitCampaignJob hands a campaign site's slice job to the core, which stores
// it as a task pinned to req.Spec's system and partition and submits it. It
// returns the stored task's id; when the site refused the job it returns the
// task id AND an error (*APIError) saying why. A request refused before any task
// was stored returns "" and the error. req.Spec.Env is exported in the job and
// never stored by the core.
//
// Each call sends its own Idempotency-Key, so the retries of one call (across
// replicas during a leader change, see New) queue the job at most once.
func (c *Client) SubmitCampaignJob(ctx context.Context, req CampaignJobRequest) (string, error) {
	return c.SubmitCampaignJobIdempotent(ctx, req, NewIdempotencyKey())
}

// SubmitCampaignJobIdempotent is SubmitCampaignJob with the caller's
// idempotency key: the same key with the same request returns the task the
// first try that reached the core stored (and the site's refusal of it, if it
// refused); the same key with another request is refused (an *APIError, 422).
func (c *Client) SubmitCampaignJobIdempotent(ctx context.Context, req CampaignJobRequest, key string) (string, error) {
	var out CampaignJobSubmitted
	if err := c.doWith(ctx, http.MethodPost, "/api/campaign-jobs", nil, req, &out, http.Header{"Idempotency-Key": {key}}); err != nil {
		return "", err
	}
	if out.Error != nil {
		return out.TaskID, out.Error
	}
	return out.TaskID, nil
}

// CampaignJob returns a campaign job's task state and its job's.
func (c *Client) CampaignJob(ctx context.Context, taskID string) (*CampaignJob, error) {
	var j CampaignJob
	return &j, c.do(ctx, http.MethodGet, "/api/campaign-jobs/"+url.PathEscape(taskID), nil, nil, &j)
}

// CancelCampaignJob cancels a campaign job's task and its job at the site (a task
// that already ended is left as it is) and returns the task as it then stands.
func (c *Client) CancelCampaignJob(ctx context.Context, taskID, why string) (*CampaignJob, error) {
	var j CampaignJob
	return &j, c.do(ctx, http.MethodPost, "/api/campaign-jobs/"+url.PathEscape(taskID)+"/cancel", nil,
		v1.CampaignJobCancelRequest{Reason: why}, &j)
}
