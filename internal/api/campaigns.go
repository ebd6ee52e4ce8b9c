package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// ExchangePrefix is where the core's agent exchange is mounted. Its routes use
// the exchange's own per-run tokens, not the API token.
const ExchangePrefix = "/exchange"

type campaignRunsOut struct {
	Body struct {
		Runs []v1.CampaignRunSummary `json:"runs"`
	}
}

type campaignRunIn struct {
	Run string `path:"run" maxLength:"128" doc:"Run id"`
}

type campaignRunOut struct{ Body *v1.CampaignRunDetail }

type campaignTimelineOut struct{ Body *v1.CampaignTimeline }

// campaignTokenIn decodes the body of v1.CampaignTokenRequest with the core's own
// campaign type, which reads more duration forms than v1's.
type campaignTokenIn struct {
	Run  string             `path:"run" maxLength:"128" doc:"Run id"`
	Body *campaignTokenBody `required:"false"`
}

type campaignTokenBody struct {
	Campaign *model.Campaign `json:"campaign,omitempty" doc:"Campaign whose allowed_peers the exchange enforces for the run"`
}

type campaignTokenOut struct{ Body v1.CampaignTokenResponse }

// registerCampaigns adds the campaign routes and mounts the core's exchange
// under ExchangePrefix.
func (s *Server) registerCampaigns() {
	huma.Register(s.api, huma.Operation{
		OperationID: "list-campaign-runs", Method: http.MethodGet, Path: "/api/campaigns",
		Summary: "Launched campaign runs, newest first", Tags: []string{"campaigns"},
		Errors:      apiErrors(),
		Description: "Runs launched from this machine (the campaigns directory), newest first: run id, campaign name, sites, launch time and state.",
	}, func(ctx context.Context, _ *struct{}) (*campaignRunsOut, error) {
		runs, err := s.core.CampaignRuns(ctx)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		out := &campaignRunsOut{}
		out.Body.Runs = core.V1CampaignRuns(runs)
		return out, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "get-campaign-run", Method: http.MethodGet, Path: "/api/campaigns/{run}",
		Summary: "One run: per-site agents, job ids and states, message counts per site", Tags: []string{"campaigns"},
		Errors:      apiErrors(404),
		Description: "A launched run: per site the mode, agents, allocation or job id and its state, and the exchange's message counts per site.",
	}, func(ctx context.Context, in *campaignRunIn) (*campaignRunOut, error) {
		d, err := s.core.CampaignRun(ctx, in.Run)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &campaignRunOut{Body: core.V1CampaignRun(d)}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "get-campaign-timeline", Method: http.MethodGet, Path: "/api/campaigns/{run}/timeline",
		Summary: "A run's messages merged across sites in time order, tagged with sites", Tags: []string{"campaigns"},
		Errors: apiErrors(404),
		Description: "Each message carries src_site and dest_site; cross_site marks those that crossed a site " +
			"boundary. counts summarises messages per site.",
	}, func(ctx context.Context, in *campaignRunIn) (*campaignTimelineOut, error) {
		tl, err := s.core.CampaignTimeline(ctx, in.Run)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &campaignTimelineOut{Body: core.V1CampaignTimeline(tl)}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "issue-campaign-token", Method: http.MethodPost, Path: "/api/campaigns/{run}/token",
		Summary: "Issue a token of the core's exchange for a run", Tags: []string{"campaigns"},
		Errors:        apiErrors(404, 409, 422),
		DefaultStatus: http.StatusCreated,
		Description: "Agents then use MOSAIC_EXCHANGE_URL=http://HOST:PORT/exchange with the token. " +
			"With a campaign in the body the exchange enforces it for the run: each declared agent has its own token " +
			"(derived from this one) that opens only its own mailbox and sends only to its allowed_peers; this token " +
			"opens user mailboxes, status and teardown. Without a campaign the token acts for every mailbox of the run.",
	}, func(ctx context.Context, in *campaignTokenIn) (*campaignTokenOut, error) {
		var c *model.Campaign
		if in.Body != nil {
			c = in.Body.Campaign
		}
		tok, err := s.core.CampaignToken(ctx, in.Run, c)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &campaignTokenOut{Body: v1.CampaignTokenResponse{RunID: in.Run, ExchangePath: ExchangePrefix, Token: tok}}, nil
	})
	// The exchange is created on first use, not at registration.
	s.mux.Handle(ExchangePrefix+"/", http.StripPrefix(ExchangePrefix, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		x := s.core.Exchange()
		route := "unmatched"
		if _, p, ok := strings.Cut(x.Route(r), " "); ok {
			route = ExchangePrefix + p // the exchange's own route, not "/exchange/"
		}
		noteRoute(r.Context(), route)
		x.ServeHTTP(w, r)
	})))
}
