// Package mcp is Mosaic's Model Context Protocol server: the tools an AI agent uses to
// look at the federation, draft envelopes, submit, track and steer tasks.
//
// The tools call a [Backend], in the API's wire types (api/v1), never the core's
// internal types. It has two implementations with the same answers and errors:
//
//   - [CoreBackend], the core in process: the core's own HTTP server mounts the
//     streamable-HTTP handler at /mcp over it (internal/server), so a tool call is a
//     function call, not a loopback request to the API. Its errors are classified as
//     the HTTP API classifies them (core.V1Error).
//   - the public Go client (client.Client), for `mosaic mcp` over stdio, which reaches
//     a core running elsewhere over HTTP; it finds the core as the CLI does and
//     re-discovers it on each call until one answers (a [Connect]).
//
// Tests run the tools over both (forEachBackend) so they stay the same.
//
// Tool errors (bad arguments, unknown tasks, infeasible requests, no core running) come
// back as tool results with IsError set and a message saying what to change, so an
// agent can correct itself instead of seeing a protocol failure.
package mcp
