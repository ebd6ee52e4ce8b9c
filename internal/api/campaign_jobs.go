package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"time"

	"github.com/danielgtaylor/huma/v2"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// campaignJobIn carries the request undecoded: its spec.env holds forwarded
// secrets, and huma's own decoding and validation answer a malformed body with
// the whole body as the error's "value". The handler decodes it itself, and its
// errors name fields, never values. (RawBody without a JSON content type: huma
// then neither decodes nor validates it; the OpenAPI document is given the
// wire type's schema after registration.)
type campaignJobIn struct {
	IdempotencyKey string `header:"Idempotency-Key" maxLength:"255" doc:"Makes a retry safe: a second submission with the same key and request returns the task the first stored (200) instead of submitting the job again; the same key with another request is refused (422)"`
	RawBody        []byte
}

// MaxCampaignJobBody bounds a campaign job request's body (bytes).
const MaxCampaignJobBody = 8 << 20

type campaignJobSubmitOut struct {
	Status int
	Body   *v1.CampaignJobSubmitted
}

type campaignJobTaskIn struct {
	Task string `path:"task" maxLength:"64" doc:"Task id"`
}

type campaignJobOut struct{ Body *v1.CampaignJob }

type campaignJobCancelIn struct {
	Task string                       `path:"task" maxLength:"64" doc:"Task id"`
	Body *v1.CampaignJobCancelRequest `required:"false"`
}

// registerCampaignJobs adds the routes a campaign launcher uses to hand its
// submit-mode jobs to this core (when this core owns the store the launcher
// would have used): submit, follow, cancel.
func (s *Server) registerCampaignJobs() {
	huma.Register(s.api, huma.Operation{
		OperationID: "submit-campaign-job", Method: http.MethodPost, Path: "/api/campaign-jobs",
		Summary: "Run a campaign site's slice job as a task of this core", Tags: []string{"campaigns"},
		Errors:        apiErrors(400, 404, 409, 422, 503),
		DefaultStatus: http.StatusCreated, SkipValidateBody: true,
		// A raw body gets no default limits: a script (1 Mi characters) and the
		// environment fit.
		MaxBodyBytes: MaxCampaignJobBody, BodyReadTimeout: 30 * time.Second,
		Description: "Stores the job as a task pinned to spec.system and spec.partition with exactly the given spec " +
			"(no placement; never retried, resized or moved), with an event naming the run, then submits it. " +
			"spec.env is exported in the job and never stored, logged or echoed. 201 names the stored task; when the " +
			"site refused the job the answer also carries error (the task is failed with the site's reason). " +
			"A request refused before any task was stored is a problem answer. With an Idempotency-Key (per user, as on " +
			"POST /api/tasks), a retry of the same request answers 200 with the task the first stored, and the same key " +
			"with another request 422.",
	}, func(ctx context.Context, in *campaignJobIn) (*campaignJobSubmitOut, error) {
		var req v1.CampaignJobRequest
		dec := json.NewDecoder(bytes.NewReader(in.RawBody))
		if err := dec.Decode(&req); err != nil {
			// encoding/json names the field and the type, not the value.
			return nil, huma.NewError(http.StatusBadRequest, "campaign job request: "+err.Error()+"; send a JSON object (run_id, site, agents, spec)")
		}
		id, replayed, err := s.core.SubmitCampaignJobIdempotent(ctx, core.CampaignJobRequestFromV1(req), in.IdempotencyKey)
		if id == "" {
			if err == nil {
				err = errors.New("the core stored no task for the campaign job")
				noteCause(ctx, err)
				return nil, huma.NewError(http.StatusInternalServerError, err.Error())
			}
			return nil, toHTTP(ctx, err)
		}
		st := http.StatusCreated
		if replayed {
			st = http.StatusOK
		}
		out := &campaignJobSubmitOut{Status: st, Body: &v1.CampaignJobSubmitted{TaskID: id, Error: core.V1Error(err)}}
		if v, verr := s.core.CampaignJob(context.WithoutCancel(ctx), id); verr == nil {
			j := core.V1CampaignJob(v)
			out.Body.Job = &j
		}
		return out, nil
	})
	// The request body's schema is the wire type's, though the handler decodes it.
	if p := s.api.OpenAPI().Paths["/api/campaign-jobs"]; p != nil && p.Post != nil && p.Post.RequestBody != nil {
		p.Post.RequestBody.Required = true
		p.Post.RequestBody.Content = map[string]*huma.MediaType{"application/json": {
			Schema: s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(v1.CampaignJobRequest{}), true, "CampaignJobRequest")}}
	}
	huma.Register(s.api, huma.Operation{
		OperationID: "get-campaign-job", Method: http.MethodGet, Path: "/api/campaign-jobs/{task}",
		Summary: "A campaign job's task state and its job's", Tags: []string{"campaigns"},
		Errors:      apiErrors(404),
		Description: "The task that runs a campaign site's slice job: the task's state and the job's at the site (id, state, exit code), as the launcher follows it.",
	}, func(ctx context.Context, in *campaignJobTaskIn) (*campaignJobOut, error) {
		v, err := s.core.CampaignJob(ctx, in.Task)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		j := core.V1CampaignJob(v)
		return &campaignJobOut{Body: &j}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "cancel-campaign-job", Method: http.MethodPost, Path: "/api/campaign-jobs/{task}/cancel",
		Summary: "Cancel a campaign job's task (and its job at the site)", Tags: []string{"campaigns"},
		Errors:      apiErrors(404, 422, 503),
		Description: "A task that already ended is left as it is (not an error). Answers the task as it stands after the cancel.",
	}, func(ctx context.Context, in *campaignJobCancelIn) (*campaignJobOut, error) {
		why := "campaign job cancelled"
		if in.Body != nil && in.Body.Reason != "" {
			if err := model.CheckLine("reason", in.Body.Reason, model.MaxLineChars); err != nil {
				return nil, huma.NewError(http.StatusUnprocessableEntity, err.Error())
			}
			why = in.Body.Reason
		}
		// A cancel the site has not confirmed yet is not a failure of the request:
		// the answer says it is pending (cancel_pending), and the engine keeps asking.
		cerr := s.core.CancelCampaignJob(ctx, in.Task, why)
		if cerr != nil && !errors.Is(cerr, campaign.ErrCancelPending) {
			return nil, toHTTP(ctx, cerr)
		}
		v, err := s.core.CampaignJob(ctx, in.Task)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		j := core.V1CampaignJob(v)
		j.CancelPending = cerr != nil
		return &campaignJobOut{Body: &j}, nil
	})
}
