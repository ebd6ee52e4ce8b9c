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

// mcpTestServer builds a server with the task operations (for the OpenAPI document)
// and the agent routes. No core is needed: the routes under test never call it.
func mcpTestServer(t *testing.T) http.Handler {
	t.Helper()
	s := &Server{opts: Options{Token: "tok"}, mux: http.NewServeMux()}
	s.api = humago.New(s.mux, huma.DefaultConfig("Mosaic", "test"))
	s.registerTasks()
	s.registerMCP()
	return s.guard(s.mux)
}

func TestMCPRoutes(t *testing.T) {
	h := mcpTestServer(t)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	cases := []struct {
		name, method, path, auth, host string
		want                           int
		ctype, body                    string
	}{
		{"mcp without token", "POST", "/mcp", "", "127.0.0.1:8642", 401, "application/problem+json", "Bearer"},
		{"mcp wrong token", "POST", "/mcp", "Bearer nope", "127.0.0.1:8642", 401, "application/problem+json", "token"},
		{"mcp foreign host", "POST", "/mcp", "Bearer tok", "evil.example", 403, "", ""},
		{"mcp initialize", "POST", "/mcp", "Bearer tok", "127.0.0.1:8642", 200, "", `"name":"mosaic"`},
		{"skill", "GET", "/skill", "", "127.0.0.1:8642", 200, "text/markdown", "name: mosaic"},
		{"skill api", "GET", "/skill/api", "", "localhost", 200, "text/markdown", "### POST /api/tasks"},
		{"skill foreign host", "GET", "/skill", "", "evil.example", 403, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r *http.Request
			if c.method == "POST" {
				r = httptest.NewRequest(c.method, c.path, strings.NewReader(init))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set("Accept", "application/json, text/event-stream")
			} else {
				r = httptest.NewRequest(c.method, c.path, nil)
			}
			r.Host = c.host
			if c.auth != "" {
				r.Header.Set("Authorization", c.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != c.want {
				t.Fatalf("got %d, want %d: %s", w.Code, c.want, w.Body.String())
			}
			if c.ctype != "" && !strings.HasPrefix(w.Header().Get("Content-Type"), c.ctype) {
				t.Errorf("Content-Type %q, want %s", w.Header().Get("Content-Type"), c.ctype)
			}
			if !strings.Contains(w.Body.String(), c.body) {
				t.Errorf("body lacks %q: %.300s", c.body, w.Body.String())
			}
		})
	}
}

func TestSkillRoutesServeTheDocuments(t *testing.T) {
	h := mcpTestServer(t)
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

func TestSelfURL(t *testing.T) {
	r := httptest.NewRequest("GET", "/mcp", nil)
	r.Host = "mosaic.lab.internal:8642"
	if got := selfURL(r); got != "http://mosaic.lab.internal:8642" {
		t.Errorf("without a local address: %s", got)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Host = "localhost:1"
		w.Write([]byte(selfURL(r)))
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b := make([]byte, 100)
	n, _ := resp.Body.Read(b)
	if got := string(b[:n]); got != srv.URL {
		t.Errorf("over a loopback connection: %s, want the listener %s", got, srv.URL)
	}
}
