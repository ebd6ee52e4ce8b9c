package api

import (
	"context"
	"encoding/base64"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
)

type envOut struct{ Body *v1.SiteEnv }

type execIn struct {
	System string `path:"system"`
	Body   struct {
		Command string `json:"command" minLength:"1" maxLength:"4096" doc:"An allowlisted read-only command, e.g. \"sinfo -s\" or \"ls /scratch\"; no shell metacharacters"`
	}
}

type execOut struct{ Body *v1.ExecResult }

type filesIn struct {
	System string `path:"system"`
	Body   struct {
		Path          string `json:"path" minLength:"1" maxLength:"1024" doc:"Destination, relative to the system's workdir (or absolute inside it)"`
		Content       string `json:"content,omitempty" doc:"File content as text"`
		ContentBase64 string `json:"content_base64,omitempty" doc:"File content, base64 (for binary files)"`
	}
}

type filesOut struct {
	Body struct {
		Path  string `json:"path"`
		Bytes int    `json:"bytes"`
	}
}

func (s *Server) registerLookAround() {
	huma.Register(s.api, huma.Operation{
		OperationID: "get-system-env", Method: http.MethodGet, Path: "/api/resources/{system}/env",
		Summary: "Probe a login node: host, workdir, python/torch, modules, containers, accounts", Tags: []string{"look-around"},
		Errors:      apiErrors(404, 502, 503),
		Description: "Runs a fixed set of read-only commands on the system's login node (hostname, the workdir, python3 and torch versions, module avail, container runtimes, the user's accounts) and answers what it found. 503: the site cannot be reached now (Retry-After); 502: it answered but not usably.",
	}, func(ctx context.Context, in *resourceIn) (*envOut, error) {
		env, err := s.core.SystemEnv(ctx, in.System)
		if err != nil {
			return nil, siteHTTP(ctx, in.System, err)
		}
		e := core.V1SiteEnv(*env)
		return &envOut{Body: &e}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "exec-on-system", Method: http.MethodPost, Path: "/api/resources/{system}/exec",
		Summary: "Run one read-only look-around command on a login node (bounded)", Tags: []string{"look-around"},
		Errors:      apiErrors(400, 404, 409, 413, 422, 502, 503),
		Description: "Runs one allowlisted read-only program (sinfo, squeue, qstat, ls, cat of files in the workdir, ...) without a shell, with a time and output bound, and answers its exit code, stdout and stderr. A refused command is 400 (malformed) or 403 (secrets, outside the workdir) with the reason; 503 when the site cannot be reached, 502 when its answer is unusable.",
	}, func(ctx context.Context, in *execIn) (*execOut, error) {
		res, err := s.core.Exec(ctx, in.System, in.Body.Command)
		if err != nil {
			return nil, siteHTTP(ctx, in.System, err)
		}
		r := core.V1ExecResult(*res)
		return &execOut{Body: &r}, nil
	})
	huma.Register(s.api, huma.Operation{
		OperationID: "put-file", Method: http.MethodPost, Path: "/api/resources/{system}/files",
		Summary: "Stage a small file (≤ 2 MiB) into the system's workdir", Tags: []string{"look-around"},
		Errors:       apiErrors(400, 404, 409, 413, 422, 502, 503),
		Description:  "Writes content (text, or content_base64 for binary) to path inside the system's workdir, through the same transport jobs use, refusing paths that leave the workdir (also through symlinks, 403), a directory in the way (409) and more than 2 MiB (413). Answers the absolute path written and the byte count.",
		MaxBodyBytes: 4 << 20, // 2 MiB of content, base64-encoded, plus JSON
	}, func(ctx context.Context, in *filesIn) (*filesOut, error) {
		data := []byte(in.Body.Content)
		if in.Body.ContentBase64 != "" {
			if in.Body.Content != "" {
				return nil, huma.Error422UnprocessableEntity("give content or content_base64, not both")
			}
			b, err := base64.StdEncoding.DecodeString(in.Body.ContentBase64)
			if err != nil {
				return nil, huma.Error422UnprocessableEntity("content_base64: " + err.Error())
			}
			data = b
		}
		p, err := s.core.PutFile(ctx, in.System, in.Body.Path, data)
		if err != nil {
			return nil, siteHTTP(ctx, in.System, err)
		}
		out := &filesOut{}
		out.Body.Path, out.Body.Bytes = p, len(data)
		return out, nil
	})
}
