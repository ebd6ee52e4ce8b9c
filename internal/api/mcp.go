package api

import (
	"encoding/json"
	"net"
	"net/http"
	"sync"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/mcp"
	"github.com/mosaic-hpc/mosaic/internal/skill"
)

// registerMCP mounts the agent surfaces:
//
//   - /mcp: the MCP server over streamable HTTP, behind the same bearer token as /api.
//     Its tools call this core through the public Go client pointed back at the core
//     itself (the local address the first /mcp request arrived on, which the process
//     is listening on, plus the core's token), so MCP and the HTTP API share one code
//     path, one validation and one set of errors.
//   - /skill: SKILL.md, the workflow guide for agents (text/markdown, no token).
//   - /skill/api: the API reference rendered from the OpenAPI document as Markdown.
func (s *Server) registerMCP() {
	// The handler is built on the first request, when the core's own address is known.
	var (
		mcpOnce sync.Once
		mcpH    http.Handler
		mcpErr  error
	)
	s.mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="mosaic"`)
			writeProblem(w, http.StatusUnauthorized, "missing or wrong token: send Authorization: Bearer <token> "+
				"(the token is in $XDG_CONFIG_HOME/mosaic/token, printed by `mosaic serve`)")
			return
		}
		mcpOnce.Do(func() {
			var c *client.Client
			if c, mcpErr = client.New(selfURL(r), s.opts.Token); mcpErr == nil {
				mcpH = mcp.HTTPHandler(mcp.Static(c), mcp.Options{Logger: s.opts.Logger})
			}
		})
		if mcpErr != nil {
			writeProblem(w, http.StatusInternalServerError, "MCP: the core cannot reach itself: "+mcpErr.Error()+
				"; use `mosaic mcp` (stdio) instead")
			return
		}
		mcpH.ServeHTTP(w, r)
	}))
	s.mux.HandleFunc("GET /skill", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Write([]byte(skill.Document()))
	})
	var once sync.Once
	var ref string
	var refErr error
	s.mux.HandleFunc("GET /skill/api", func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() {
			b, err := json.Marshal(s.api.OpenAPI())
			if err != nil {
				refErr = err
				return
			}
			ref, refErr = skill.APIReference(b)
		})
		if refErr != nil {
			writeProblem(w, http.StatusInternalServerError, "rendering the API reference: "+refErr.Error())
			return
		}
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Write([]byte(ref))
	})
}

// selfURL is the core's own base URL as seen by a request: the local address of the
// connection when it is a loopback address (always reachable from inside the process
// and accepted by the guard), else the Host header, which the guard has already
// checked against the allow-list.
func selfURL(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr); ok && a != nil && a.IP.IsLoopback() {
		return "http://" + a.String()
	}
	return "http://" + r.Host
}
