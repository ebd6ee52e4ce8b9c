package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
)

var jsonMarshal = json.Marshal

// toHTTP maps core errors to problem responses with the message intact (the
// classification is core.V1Error's, shared with the in-process MCP backend).
func toHTTP(err error) error {
	if err == nil {
		return nil
	}
	e := core.V1Error(err)
	return huma.NewError(e.Status, e.Detail)
}

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
	}
}

type aboutOut struct {
	Body v1.About
}

func (s *Server) registerFederation() {
	huma.Register(s.api, huma.Operation{
		OperationID: "get-federation", Method: http.MethodGet, Path: "/api/federation",
		Summary: "Latest merged snapshot", Tags: []string{"federation"},
		Description: "Every (system, partition, account) record from the latest probe round, with per-system health.",
	}, func(ctx context.Context, _ *struct{}) (*federationOut, error) {
		snap, err := s.core.Federation()
		if err != nil {
			return nil, toHTTP(err)
		}
		return &federationOut{Body: core.V1Snapshot(snap)}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "get-federation-history", Method: http.MethodGet, Path: "/api/federation/history",
		Summary: "Downsampled partition history", Tags: []string{"federation"},
	}, func(ctx context.Context, in *historyIn) (*historyOut, error) {
		since, err := core.ParseSince(in.Since, time.Now())
		if err != nil {
			return nil, toHTTP(err)
		}
		pts, err := s.core.History(ctx, in.System, since, in.Limit)
		if err != nil {
			return nil, toHTTP(err)
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
		Description: "Per partition: free GPUs/cores, busy %, node states, queue depth, my jobs, wall cap and a wait heuristic. " +
			"`format=text` returns the same as Markdown (text/markdown).",
	}, func(ctx context.Context, in *statusIn) (*statusOut, error) {
		st, err := s.core.Status()
		if err != nil {
			return nil, toHTTP(err)
		}
		return &statusOut{Body: core.V1Status(st)}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "get-resource", Method: http.MethodGet, Path: "/api/resources/{system}",
		Summary: "One system: health, partitions, how it is reached", Tags: []string{"federation"},
	}, func(ctx context.Context, in *resourceIn) (*resourceOut, error) {
		d, err := s.core.Resource(in.System)
		if err != nil {
			return nil, toHTTP(err)
		}
		return &resourceOut{Body: core.V1ResourceDetail(d)}, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "find-idle", Method: http.MethodGet, Path: "/api/idle",
		Summary: "Partitions with free capacity now", Tags: []string{"federation"},
	}, func(ctx context.Context, in *idleIn) (*idleOut, error) {
		q := v1.IdleQuery{GPUs: in.GPUs, GPUMemGB: in.GPUMem, Cores: in.Cores, Arch: in.Arch,
			GPUModel: in.GPUModel, Provider: in.Provider, System: in.System}
		if in.MaxQueue >= 0 {
			q.MaxQueue = &in.MaxQueue
		}
		recs, err := s.core.Idle(core.IdleFilterFromV1(q))
		if err != nil {
			return nil, toHTTP(err)
		}
		out := &idleOut{}
		out.Body.Partitions = core.V1Records(recs)
		return out, nil
	})

	huma.Register(s.api, huma.Operation{
		OperationID: "get-about", Method: http.MethodGet, Path: "/api/about",
		Summary: "Version, catalog, tick, store and active ranker", Tags: []string{"meta"},
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
		w.WriteHeader(http.StatusServiceUnavailable)
	} else if l.Role != "follower" {
		if snap, err := s.core.Federation(); err == nil {
			body["snapshot_seq"] = snap.Seq
			body["snapshot_age_s"] = int(time.Since(snap.TakenAt).Seconds())
		} else {
			body["ok"] = false
			body["detail"] = err.Error()
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}
	b, _ := json.Marshal(body)
	w.Write(b)
}
