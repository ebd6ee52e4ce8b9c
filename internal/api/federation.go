package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/danielgtaylor/huma/v2"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/errs"
)

var jsonMarshal = json.Marshal

// toHTTP maps core errors to problem responses with the message intact (the
// classification is core.V1Error's, shared with the in-process MCP backend: a site
// that cannot be reached is 503, one that was reached but failed the request or
// refused Mosaic's credentials 502, core.ErrSiteFailed). A 503 carries Retry-After;
// a 5xx's cause goes to the access log (accesslog.go). When the request's context
// has ended (the client went away) the error is not the core's nor the site's: the
// answer, which nobody reads, is 499 (client closed request), logged at INFO.
func toHTTP(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		noteCause(ctx, err)
		return huma.NewError(StatusClientClosed, "the client closed the request before the answer: "+err.Error())
	}
	e := core.V1Error(err)
	if e.Status >= 500 {
		noteCause(ctx, err)
	}
	he := huma.NewError(e.Status, e.Detail)
	if e.Status == http.StatusServiceUnavailable {
		after := notReadyRetryAfter
		if errors.Is(err, errs.ErrSiteDown) || errors.Is(err, errs.ErrTransient) {
			after = siteRetryAfter
		}
		return huma.ErrorWithHeaders(he, http.Header{"Retry-After": {strconv.Itoa(after)}})
	}
	return he
}

// StatusClientClosed is the status logged for a request whose client went away
// before its answer (nginx's 499; net/http has no name for it).
const StatusClientClosed = 499

// Retry-After (seconds) of a 503: a site that is down is probed again within a
// tick or so; a core that is not ready yet (the first probe round) is ready soon.
const (
	siteRetryAfter     = 30
	notReadyRetryAfter = 5
)

type federationOut struct {
	Body *v1.ResourceSnapshot
}

type historyIn struct {
	System string `query:"system" doc:"Catalog name or machine name; empty = all systems"`
	Since  string `query:"since" doc:"RFC 3339 time, or a duration back from now such as 1h or 30m; default 1h"`
	Limit  int    `query:"limit" minimum:"0" maximum:"100000" doc:"Maximum points (default 10000)"`
}

type historyOut struct {
	Body struct {
		Since  time.Time         `json:"since"`
		Points []v1.HistoryPoint `json:"points"`
	}
}

type statusIn struct {
	Format string `query:"format" enum:"json,text" default:"json" doc:"json, or text for a Markdown table per system"`
}

type statusOut struct {
	Body *v1.Status
}

type resourceIn struct {
	System string `path:"system" doc:"Catalog name (Delta@NCSA) or machine name (delta)"`
}

type resourceOut struct {
	Body *v1.ResourceDetail
}

type idleIn struct {
	GPUs     int    `query:"gpus" minimum:"0" doc:"At least this many free GPUs"`
	GPUMem   int    `query:"gpu_mem" minimum:"0" doc:"At least this much memory per GPU, GB"`
	Cores    int    `query:"cores" minimum:"0" doc:"At least this many free cores"`
	Arch     string `query:"arch" doc:"x86_64 or aarch64"`
	GPUModel string `query:"gpu_model" doc:"GPU model, e.g. A100"`
	MaxQueue int    `query:"max_queue" default:"-1" minimum:"-1" doc:"At most this many pending jobs (-1 = any)"`
	Provider string `query:"provider" enum:"sim,ssh,local,globus," doc:"Provider kind"`
	System   string `query:"system" doc:"Only this system"`
}

type idleOut struct {
	Body struct {
		Partitions []v1.ResourceRecord `json:"partitions"`
		// Explanation says, when partitions is empty, which filter removed the last ones.
		Explanation string `json:"explanation,omitempty" doc:"When nothing matches: the filter that removed the last partitions, e.g. no partition has B200 GPUs (models here: A100, H100)"`
	}
}

type aboutOut struct {
	Body v1.About
}

func (s *Server) registerFederation() {
	huma.Register(s.api, huma.Operation{
		OperationID: "get-federation", Method: http.MethodGet, Path: "/api/federation",
		Summary: "Latest merged snapshot", Tags: []string{"federation"},
		Errors:      apiErrors(503),
		Description: "Every (system, partition, account) record from the latest probe round, with per-system health.",
	}, func(ctx context.Context, _ *struct{}) (*federationOut, error) {
		snap, err := s.core.Federation()
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &federationOut{Body: core.V1Snapshot(snap)}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "get-federation-history", Method: http.MethodGet, Path: "/api/federation/history",
		Summary: "Downsampled partition history", Tags: []string{"federation"},
		Errors:      apiErrors(404, 422, 503),
		Description: "Per (system, partition), points of free and total GPUs and cores and queue depth, downsampled to one a bucket (a minute), oldest first, from the store (so it survives restarts). since is an RFC 3339 time or a duration back from now; system narrows to one system (404 for one not in the catalog).",
	}, func(ctx context.Context, in *historyIn) (*historyOut, error) {
		since, err := core.ParseSince(in.Since, time.Now())
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		pts, err := s.core.History(ctx, in.System, since, in.Limit)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		out := &historyOut{}
		out.Body.Since = since.UTC()
		out.Body.Points = core.V1History(pts)
		if out.Body.Points == nil {
			out.Body.Points = []v1.HistoryPoint{}
		}
		return out, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "get-status", Method: http.MethodGet, Path: "/api/status",
		Summary: "Queue status per partition", Tags: []string{"federation"},
		Errors: apiErrors(422, 503),
		Description: "Per partition: free GPUs/cores, busy %, node states, queue depth, my jobs, wall cap and a wait heuristic. " +
			"`format=text` returns the same as Markdown (text/markdown).",
	}, func(ctx context.Context, in *statusIn) (*statusOut, error) {
		st, err := s.core.Status()
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &statusOut{Body: core.V1Status(st)}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "get-resource", Method: http.MethodGet, Path: "/api/resources/{system}",
		Summary: "One system: health, partitions, how it is reached", Tags: []string{"federation"},
		Errors:      apiErrors(404, 503),
		Description: "The system's probe health (state, last error, latency), its partitions as the latest probe saw them, its accounts and workdir, and how Mosaic reaches it (kind, dialect, host or endpoint). The name is the catalog's (Delta@NCSA) or the machine's (delta); 404 lists the known ones.",
	}, func(ctx context.Context, in *resourceIn) (*resourceOut, error) {
		d, err := s.core.Resource(in.System)
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		return &resourceOut{Body: core.V1ResourceDetail(d)}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "find-idle", Method: http.MethodGet, Path: "/api/idle",
		Summary: "Partitions with free capacity now", Tags: []string{"federation"},
		Errors:      apiErrors(404, 422, 503),
		Description: "Partitions of the latest snapshot with at least the given free GPUs and cores, GPU memory, architecture, GPU model and at most max_queue pending jobs, on healthy systems, most free first. An empty list is an answer, not an error; it comes with an explanation naming the filter that removed the last partitions. A system the catalog does not know is 404, naming the known ones.",
	}, func(ctx context.Context, in *idleIn) (*idleOut, error) {
		q := v1.IdleQuery{GPUs: in.GPUs, GPUMemGB: in.GPUMem, Cores: in.Cores, Arch: in.Arch,
			GPUModel: in.GPUModel, Provider: in.Provider, System: in.System}
		if in.MaxQueue >= 0 {
			q.MaxQueue = &in.MaxQueue
		}
		recs, why, err := s.core.IdleExplained(core.IdleFilterFromV1(q))
		if err != nil {
			return nil, toHTTP(ctx, err)
		}
		out := &idleOut{}
		out.Body.Partitions, out.Body.Explanation = core.V1Records(recs), why
		return out, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "get-about", Method: http.MethodGet, Path: "/api/about",
		Summary: "Version, catalog, tick, store and active ranker", Tags: []string{"meta"},
		Errors:      apiErrors(),
		Description: "The core's version, the site catalog in use, the probe tick, the store, the active ranker and drafter, and (on the simulated federation) the simulated clock. Needs no site.",
	}, func(ctx context.Context, _ *struct{}) (*aboutOut, error) {
		return &aboutOut{Body: core.V1About(s.core.About())}, nil
	})
}

func (s *Server) statusText(w http.ResponseWriter, r *http.Request) {
	st, err := s.core.Status()
	if err != nil {
		code := http.StatusInternalServerError
		if errors.Is(err, core.ErrNotReady) {
			code = http.StatusServiceUnavailable
		}
		noteCause(r.Context(), err)
		writeProblem(w, code, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
	st.Markdown(w)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	body := map[string]any{"ok": true}
	l := s.core.Leadership()
	addLeadership(body, l)
	// A follower does not probe: it is healthy while it can reach the store, which
	// its lease step does every TTL/3 (lease_renew_lag_s says how recently anyone did).
	if l.StoreErr != "" {
		body["ok"] = false
		body["detail"] = "this replica cannot reach the store: " + l.StoreErr
		noteCause(r.Context(), errors.New(l.StoreErr))
		w.WriteHeader(http.StatusServiceUnavailable)
	} else if l.Role != "follower" {
		if snap, err := s.core.Federation(); err == nil {
			body["snapshot_seq"] = snap.Seq
			body["snapshot_age_s"] = int(time.Since(snap.TakenAt).Seconds())
		} else {
			body["ok"] = false
			body["detail"] = err.Error()
			noteCause(r.Context(), err) // the access log says why (DEBUG while starting)
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}
	b, _ := json.Marshal(body)
	w.Write(b)
}
