package mcp

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// CampaignStatusIn selects a run; empty lists every run.
type CampaignStatusIn struct {
	Run string `json:"run,omitempty" jsonschema:"run id; omit to list every launched run"`
}

// CampaignStatusOut is either the list of runs or one run's per-site status.
type CampaignStatusOut struct {
	Runs []v1.CampaignRunSummary `json:"runs,omitempty" jsonschema:"every run, newest first (when run was omitted)"`
	Run  *v1.CampaignRunDetail   `json:"run,omitempty" jsonschema:"the run: state, per-site agents, job ids and states, message counts per site"`
}

// CampaignTimelineIn selects a run's timeline.
type CampaignTimelineIn struct {
	Run   string `json:"run" jsonschema:"run id (from campaign_status)"`
	Limit int    `json:"limit,omitempty" jsonschema:"at most this many messages, the latest (default 200, at most 5000)"`
}

// CampaignTimelineOut is the merged multi-site timeline.
type CampaignTimelineOut struct {
	Timeline *v1.CampaignTimeline `json:"timeline" jsonschema:"messages in time order, each tagged with its source and destination sites; cross-site ones flagged; counts per site"`
	Omitted  int                  `json:"omitted" jsonschema:"older messages left out by limit"`
}

func (t *tools) registerCampaigns(s *mcp.Server) {
	addTool(s, "campaign_status", "Show federated campaign runs",
		"Without run: every launched campaign run (state, sites). With run: per-site status — agents, "+
			"batch job ids and states — and messages per site.",
		readOnly, t.campaignStatus)
	addTool(s, "campaign_timeline", "Read a campaign's multi-site timeline",
		"The run's agent messages merged across sites in time order, each with its sites; cross-site "+
			"messages are flagged.",
		readOnly, t.campaignTimeline)
}

func (t *tools) campaignStatus(ctx context.Context, _ *mcp.CallToolRequest, in CampaignStatusIn) (*CampaignStatusOut, error) {
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	cb := b
	if strings.TrimSpace(in.Run) == "" {
		runs, err := cb.CampaignRuns(ctx)
		if err != nil {
			return nil, fmt.Errorf("campaign_status: %w", err)
		}
		if runs == nil {
			runs = []v1.CampaignRunSummary{}
		}
		return &CampaignStatusOut{Runs: runs}, nil
	}
	d, err := cb.CampaignRun(ctx, in.Run)
	if err != nil {
		return nil, fmt.Errorf("campaign_status %s: %w (list runs with campaign_status and no run)", in.Run, err)
	}
	return &CampaignStatusOut{Run: d}, nil
}

func (t *tools) campaignTimeline(ctx context.Context, _ *mcp.CallToolRequest, in CampaignTimelineIn) (*CampaignTimelineOut, error) {
	if strings.TrimSpace(in.Run) == "" {
		return nil, invalid("run is empty; find one with campaign_status")
	}
	if in.Limit < 0 || in.Limit > 5000 {
		return nil, invalid("limit %d: want 1 to 5000 (omit for 200)", in.Limit)
	}
	limit := in.Limit
	if limit == 0 {
		limit = 200
	}
	b, err := t.backend(ctx)
	if err != nil {
		return nil, err
	}
	cb := b
	tl, err := cb.CampaignTimeline(ctx, in.Run)
	if err != nil {
		return nil, fmt.Errorf("campaign_timeline %s: %w", in.Run, err)
	}
	out := &CampaignTimelineOut{Timeline: tl}
	if n := len(tl.Messages); n > limit {
		out.Omitted = n - limit
		tl.Messages = tl.Messages[n-limit:]
	}
	return out, nil
}
