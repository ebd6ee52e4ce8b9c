package client

import (
	"context"
	"net/http"
	"net/url"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// Campaign types (aliases of the api/v1 wire types).
type (
	CampaignRunSummary    = v1.CampaignRunSummary
	CampaignRunDetail     = v1.CampaignRunDetail
	CampaignTimeline      = v1.CampaignTimeline
	Campaign              = v1.Campaign
	CampaignTokenResponse = v1.CampaignTokenResponse
)

// CampaignRuns lists launched campaign runs, newest first.
func (c *Client) CampaignRuns(ctx context.Context) ([]CampaignRunSummary, error) {
	var out struct {
		Runs []CampaignRunSummary `json:"runs"`
	}
	return out.Runs, c.do(ctx, http.MethodGet, "/api/campaigns", nil, nil, &out)
}

// CampaignRun returns one run with per-site status and message counts.
func (c *Client) CampaignRun(ctx context.Context, run string) (*CampaignRunDetail, error) {
	var d CampaignRunDetail
	return &d, c.do(ctx, http.MethodGet, "/api/campaigns/"+url.PathEscape(run), nil, nil, &d)
}

// CampaignTimeline returns a run's messages merged across sites in time order.
func (c *Client) CampaignTimeline(ctx context.Context, run string) (*CampaignTimeline, error) {
	var t CampaignTimeline
	return &t, c.do(ctx, http.MethodGet, "/api/campaigns/"+url.PathEscape(run)+"/timeline", nil, nil, &t)
}

// CampaignToken issues the run (operator) token of the core's exchange for run. With
// camp the exchange enforces the campaign for the run: each declared agent gets its
// own token (derived from this one) that opens only its mailbox and sends only to its
// allowed peers. The token is shown once.
func (c *Client) CampaignToken(ctx context.Context, run string, camp *Campaign) (*CampaignTokenResponse, error) {
	var out CampaignTokenResponse
	err := c.do(ctx, http.MethodPost, "/api/campaigns/"+url.PathEscape(run)+"/token", nil,
		v1.CampaignTokenRequest{Campaign: camp}, &out)
	return &out, err
}
