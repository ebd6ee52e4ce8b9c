package api

import (
	"encoding/json"
	"net/http"
	"sync"

	"github.com/mosaic-hpc/mosaic/internal/skill"
)

// registerSkill mounts the agents' documents:
//
//   - /skill: SKILL.md, the workflow guide for agents (text/markdown, no token).
//   - /skill/api: the API reference rendered from the OpenAPI document as Markdown.
//
// /mcp itself is another surface (internal/mcp), mounted by internal/server through
// Options.TokenRoutes.
func (s *Server) registerSkill() {
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
			noteCause(r.Context(), refErr)
			writeProblem(w, http.StatusInternalServerError, "rendering the API reference: "+refErr.Error())
			return
		}
		w.Header().Set("Content-Type", "text/markdown; charset=utf-8")
		w.Write([]byte(ref))
	})
}
