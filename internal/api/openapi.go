package api

import (
	"net/http"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
)

// apiErrors lists the problem answers an /api operation documents: 401 (no or a wrong
// token) and 403 (a Host, Origin or CSRF refusal) for every one — the guard answers
// them before any route — then the operation's own (400 malformed, 404 unknown, 409
// conflict, 413 too large, 422 refused, 502 a site answered unusably, 503 not ready
// or a site unreachable). No /api route answers 429: the rate limits are the
// exchange's (under /exchange, outside this document).
func apiErrors(codes ...int) []int {
	return append([]int{http.StatusUnauthorized, http.StatusForbidden}, codes...)
}

// wrapperNames name the anonymous request and response bodies of the handlers (huma
// would call them TasksOutBody, ExecInBody, ...): each becomes a name a client
// generator can use.
var wrapperNames = map[string]string{
	"TasksOutBody":        "TaskList",
	"HistoryOutBody":      "HistoryPage",
	"IdleOutBody":         "IdlePartitions",
	"CampaignRunsOutBody": "CampaignRunList",
	"EnvelopeInBody":      "DraftRequest",
	"ExecInBody":          "ExecRequest",
	"FilesInBody":         "PutFileRequest",
	"FilesOutBody":        "PutFileResult",
	"ReplanInBody":        "ReplanRequest",
	"CampaignTokenBody":   "CampaignTokenRequest",
}

// cleanWrapperName renames a handler's body schema; a new anonymous body without an
// entry still loses the wrapper suffix (XOutBody -> XResponse, XInBody -> XRequest).
func cleanWrapperName(name string) string {
	if n, ok := wrapperNames[name]; ok {
		return n
	}
	switch {
	case strings.HasSuffix(name, "OutBody"):
		return strings.TrimSuffix(name, "OutBody") + "Response"
	case strings.HasSuffix(name, "InBody"):
		return strings.TrimSuffix(name, "InBody") + "Request"
	}
	return name
}

// typeDecision documents TaskDetail.decision as the Decision it holds: the wire type
// keeps the trace as raw JSON (a task read decodes nothing), which huma would
// document as an untyped value.
func (s *Server) typeDecision() {
	reg := s.api.OpenAPI().Components.Schemas
	dec := reg.Schema(reflect.TypeOf(v1.Decision{}), true, "Decision")
	td := reg.SchemaFromRef("#/components/schemas/TaskDetail")
	if td == nil || td.Properties == nil {
		return
	}
	if p := td.Properties["decision"]; p != nil {
		td.Properties["decision"] = &huma.Schema{Ref: dec.Ref, Description: p.Description}
	}
}
