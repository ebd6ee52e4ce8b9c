package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/mosaic-hpc/mosaic/internal/skill"
)

// skillTestServer builds a server with the task operations (for the OpenAPI
// document) and the agent documents. No core is needed: the routes under test never
// call it.
func skillTestServer(t *testing.T) http.Handler {
	t.Helper()
	s := &Server{opts: Options{Token: "tok"}, mux: http.NewServeMux()}
	cfg := huma.DefaultConfig("Mosaic", "test")
	cfg.Components.Schemas = huma.NewMapRegistry("#/components/schemas/", schemaName)
	s.api = humago.New(s.mux, cfg)
	s.registerTasks()
	s.registerSkill()
	return s.guard(s.mux)
}

func TestSkillRoutesServeTheDocuments(t *testing.T) {
	h := skillTestServer(t)
	get := func(path string) string {
		r := httptest.NewRequest("GET", path, nil)
		r.Host = "127.0.0.1"
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Body.String()
	}
	if get("/skill") != skill.Document() {
		t.Error("/skill must serve SKILL.md verbatim")
	}
	ref := get("/skill/api")
	for _, want := range []string{"# Mosaic HTTP API reference", "### GET /api/tasks/{id}", "### POST /api/tasks/{id}/replan",
		"| `limit` | query | integer", "## Schemas", "### SubmitRequest"} {
		if !strings.Contains(ref, want) {
			t.Errorf("/skill/api lacks %q", want)
		}
	}
}
