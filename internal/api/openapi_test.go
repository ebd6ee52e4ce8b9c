package api

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core"
)

// openAPIDoc fetches /openapi.json from a server built with the given version.
func openAPIDoc(t *testing.T, version string) map[string]any {
	t.Helper()
	old := core.Version
	core.Version = version
	t.Cleanup(func() { core.Version = old })
	hs, _ := coreServer(t, Options{Token: "tok"})
	var doc map[string]any
	if code := apiGet(t, hs, "/openapi.json", nil, &doc); code != 200 {
		t.Fatalf("/openapi.json: HTTP %d", code)
	}
	return doc
}

func obj(v any) map[string]any { m, _ := v.(map[string]any); return m }

// TestOpenAPIDocumentsEveryOperation: every operation has a description and typed
// error answers (401 and 403 at least, as problem documents) besides default;
// info.version is the binary's; TaskDetail.decision is the Decision schema; no
// schema is named after a handler's wrapper (…OutBody, …InBody).
func TestOpenAPIDocumentsEveryOperation(t *testing.T) {
	doc := openAPIDoc(t, "v9.8.7-test")
	if v := obj(doc["info"])["version"]; v != "v9.8.7-test" {
		t.Errorf("info.version = %v, want the binary's version", v)
	}
	n := 0
	for path, item := range obj(doc["paths"]) {
		for method, o := range obj(item) {
			op := obj(o)
			n++
			id := strings.ToUpper(method) + " " + path
			if d, _ := op["description"].(string); len(d) < 20 {
				t.Errorf("%s (%v) has no description", id, op["operationId"])
			}
			resp := obj(op["responses"])
			for _, code := range []string{"401", "403"} {
				r := obj(resp[code])
				if r == nil {
					t.Errorf("%s documents no %s answer", id, code)
					continue
				}
				if obj(obj(r["content"])["application/problem+json"]) == nil {
					t.Errorf("%s: the %s answer is not a problem document: %v", id, code, r)
				}
			}
		}
	}
	if n < 25 {
		t.Errorf("only %d operations in the document", n)
	}
	// Operations that reach a site document 502/503; 404 where a name is looked up.
	for _, c := range []struct {
		method, path string
		codes        []string
	}{
		{"post", "/api/resources/{system}/exec", []string{"400", "404", "502", "503"}},
		{"get", "/api/resources/{system}/env", []string{"404", "502", "503"}},
		{"post", "/api/resources/{system}/files", []string{"404", "409", "413", "502", "503"}},
		{"get", "/api/tasks/{id}/logs", []string{"404", "502", "503"}},
		{"post", "/api/tasks", []string{"422", "503"}},
		{"get", "/api/tasks/{id}", []string{"404"}},
		{"post", "/api/tasks/{id}/cancel", []string{"404", "422"}},
	} {
		resp := obj(obj(obj(obj(doc["paths"])[c.path])[c.method])["responses"])
		for _, code := range c.codes {
			if resp[code] == nil {
				t.Errorf("%s %s documents no %s answer", c.method, c.path, code)
			}
		}
	}
	schemas := obj(obj(doc["components"])["schemas"])
	for name := range schemas {
		if strings.HasSuffix(name, "OutBody") || strings.HasSuffix(name, "InBody") || strings.HasSuffix(name, "Body") {
			t.Errorf("schema %s is named after a handler's wrapper", name)
		}
	}
	for _, name := range []string{"TaskList", "ExecRequest", "PutFileResult", "DraftRequest", "Decision", "Candidate"} {
		if schemas[name] == nil {
			t.Errorf("no schema %s", name)
		}
	}
	dec := obj(obj(obj(schemas["TaskDetail"])["properties"])["decision"])
	if dec["$ref"] != "#/components/schemas/Decision" {
		t.Errorf("TaskDetail.decision is %v, want a $ref to Decision", dec)
	}
	if c := obj(obj(obj(schemas["Decision"])["properties"])["candidates"]); obj(c["items"])["$ref"] != "#/components/schemas/Candidate" {
		t.Errorf("Decision.candidates is %v, want the candidate table (Candidate items)", c)
	}
	b, _ := json.Marshal(doc)
	if strings.Contains(string(b), `"version":"dev"`) {
		t.Error("the document still says version dev")
	}
}

// TestTaskDecisionIsTheDocumentedDecision: the decision a task read returns (the
// stored scheduler trace) decodes as the Decision the document promises with no field
// left over, candidate table included — the typed schema is the data's.
func TestTaskDecisionIsTheDocumentedDecision(t *testing.T) {
	hs, c := coreServer(t, Options{Token: "tok"})
	submitTasks(t, c, 1)
	ts, err := c.Tasks(context.Background(), nil, 1)
	if err != nil || len(ts) != 1 {
		t.Fatalf("tasks: %v %v", ts, err)
	}
	var raw struct {
		Decision json.RawMessage `json:"decision"`
	}
	if code := apiGet(t, hs, "/api/tasks/"+ts[0].ID, nil, &raw); code != 200 {
		t.Fatalf("get task: HTTP %d", code)
	}
	dec := json.NewDecoder(bytes.NewReader(raw.Decision))
	dec.DisallowUnknownFields()
	var d v1.Decision
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("the stored decision is not a v1.Decision: %v\n%s", err, raw.Decision)
	}
	if d.Chosen == "" || len(d.Candidates) == 0 || d.ChosenCandidate() == nil || len(d.Candidates[0].Verdicts) == 0 {
		t.Errorf("decision without its candidate table: %+v", d)
	}
}
