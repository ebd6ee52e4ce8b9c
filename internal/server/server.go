// Package server composes the core's HTTP server from its surfaces: the HTTP API
// (internal/api) with the web UI (internal/web) and the MCP server (internal/mcp)
// mounted on it. It sits above the surfaces so that none of them imports another:
// the API knows only that it serves extra routes (api.Options.Routes, TokenRoutes),
// the UI and /mcp know nothing of the API's code, and /mcp calls the core in process
// (mcp.CoreBackend), never the API over loopback HTTP.
//
// Adding a surface that is served over HTTP: build its handler here and mount it
// through Routes (behind the guard) or TokenRoutes (bearer token only).
package server

import (
	"net/http"

	"github.com/mosaic-hpc/mosaic/internal/api"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/mcp"
	"github.com/mosaic-hpc/mosaic/internal/session"
	"github.com/mosaic-hpc/mosaic/internal/web"
)

// Server is the composed HTTP server (the API's, with the other surfaces mounted).
type Server = api.Server

// MCPPath is where the MCP server (streamable HTTP) is mounted.
const MCPPath = "/mcp"

// Options are the API server's options plus which surfaces to mount.
type Options struct {
	api.Options
	// Headless serves the API only: no web UI at /.
	Headless bool
}

// New builds the core's HTTP server: the API, the web UI (unless headless) sharing
// the API's session store, and /mcp over the core in process, behind the API token.
func New(c *core.Core, o Options) (*Server, error) {
	if o.Sessions == nil {
		o.Sessions = session.NewSessions(nil)
	}
	if !o.Headless {
		ui := web.New(o.Sessions, api.NewLogins(c, o.Token))
		o.Routes = append(o.Routes, ui.Register)
	}
	routes := make(map[string]http.Handler, len(o.TokenRoutes)+1)
	for p, h := range o.TokenRoutes {
		routes[p] = h
	}
	routes[MCPPath] = mcp.HTTPHandler(mcp.Static(mcp.CoreBackend(c)), mcp.Options{Logger: o.Logger})
	o.TokenRoutes = routes
	return api.New(c, o.Options)
}
