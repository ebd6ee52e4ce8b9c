// Package v1 holds the wire types of Mosaic's HTTP API, version 1: what the core's
// /api routes answer, what the Go client (package client) returns, what the MCP tools
// speak and what the web UI reads. It imports only the standard library, so a program
// outside this module can name every value the API sends without pulling in the core.
//
// The JSON of every type is the API's contract: field names, omitempty and the
// duration form are exactly what the core writes. The core maps its internal types
// onto these in one place (internal/core/v1.go); a test there fails when a field of
// an internal type has no counterpart here.
//
// Request bodies (SubmitRequest, CampaignTokenRequest, ...) are what the client sends.
// The core decodes them with its own, more lenient types: a duration may also be
// written as Slurm's "D-HH:MM:SS", "2d" or plain minutes, and the core refuses with
// a 422 whose Error.Errors say which field is wrong. Every value these types encode
// is accepted; the core answers only in the forms here.
//
// Adding a field: add it to the internal type and here, with the same JSON tag and a
// doc comment; the mapping test names any you forget.
package v1
