// Package mcp is Mosaic's Model Context Protocol server: the tools an AI agent uses to
// look at the federation, draft envelopes, submit, track and steer tasks.
//
// The tools never reach into the core directly. They call a [Backend], which in every
// production path is the public Go client (client.Client) talking to a core over HTTP:
// `mosaic mcp` serves stdio with a client found like the CLI finds the core, and the
// core mounts the streamable-HTTP handler at /mcp with a client pointed back at itself
// over loopback. One code path, the same validation and errors as the HTTP API.
//
// Tool errors (bad arguments, unknown tasks, infeasible requests, no core running) come
// back as tool results with IsError set and a message saying what to change, so an
// agent can correct itself instead of seeing a protocol failure.
package mcp
