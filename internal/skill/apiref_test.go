package skill

import (
	"strings"
	"testing"
)

const sampleDoc = `{
  "openapi": "3.1.0",
  "info": {"title": "Mosaic", "version": "0.1.0", "description": "Use allocations as one machine."},
  "paths": {
    "/api/tasks/{id}": {
      "get": {"operationId": "get-task", "summary": "One task", "tags": ["tasks"],
        "parameters": [{"name": "id", "in": "path", "required": true, "schema": {"type": "string", "maxLength": 64}}],
        "responses": {"200": {"description": "OK", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TaskDetail"}}}},
                      "default": {"description": "Error", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/ErrorModel"}}}}}}
    },
    "/api/tasks": {
      "post": {"operationId": "submit-task", "summary": "Submit a task", "description": "Places and submits.",
        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/SubmitRequest"}}}},
        "responses": {"201": {"description": "Created"}}},
      "get": {"operationId": "list-tasks", "summary": "List tasks",
        "parameters": [{"name": "limit", "in": "query", "description": "At most | this many", "schema": {"type": "integer", "minimum": 0, "maximum": 10000, "default": 1000}},
                       {"name": "state", "in": "query", "schema": {"type": "string", "enum": ["queued", "running"]}}],
        "responses": {"200": {"description": "OK"}}}
    }
  },
  "components": {"schemas": {
    "SubmitRequest": {"type": "object", "required": ["name"], "properties": {
      "$schema": {"type": "string"},
      "name": {"type": "string", "description": "Short task name"},
      "dry_run": {"type": "boolean"},
      "envelope": {"$ref": "#/components/schemas/Envelope"},
      "tags": {"type": ["array", "null"], "items": {"type": "string"}},
      "created": {"type": "string", "format": "date-time"},
      "msg": {"oneOf": [{"$ref": "#/components/schemas/Envelope"}, {"type": "string"}]}}},
    "Envelope": {"type": "object", "properties": {"gpus": {"type": "object", "properties": {"min": {"type": "integer"}}}}},
    "Duration": {"type": "string", "description": "2h or 1:30:00"}
  }}
}`

func TestAPIReference(t *testing.T) {
	md, err := APIReference([]byte(sampleDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# Mosaic HTTP API reference (0.1.0)",
		"### GET /api/tasks\n",
		"### POST /api/tasks\n",
		"### GET /api/tasks/{id}\n",
		"Submit a task. (`submit-task`)",
		"Request body (application/json): SubmitRequest",
		"- 200 OK — application/json: TaskDetail",
		"| `id` | path | string | yes |",
		`| ` + "`limit`" + ` | query | integer |  | At most \| this many (min 0; max 10000; default 1000) |`,
		"(one of: queued, running)",
		"### SubmitRequest",
		"| `name` | string | yes | Short task name |",
		"| `envelope` | Envelope |",
		"| `tags` | array of string, nullable |",
		"| `created` | string (date-time) |",
		"Type: string",
		"| `msg` | one of Envelope, string |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("reference lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "`$schema`") {
		t.Error("the $schema property is noise and must be left out")
	}
	// Operations are ordered by path, then method.
	if i, j := strings.Index(md, "### GET /api/tasks\n"), strings.Index(md, "### POST /api/tasks\n"); i > j {
		t.Error("GET must come before POST on the same path")
	}
	if i, j := strings.Index(md, "### POST /api/tasks\n"), strings.Index(md, "### GET /api/tasks/{id}"); i > j {
		t.Error("paths must be sorted")
	}
}

func TestAPIReferenceMalformed(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"empty", ``, "OpenAPI document"},
		{"not json", `openapi: 3.1.0`, "OpenAPI document"},
		{"array", `[]`, "OpenAPI document"},
		{"swagger 2", `{"swagger": "2.0", "paths": {"/a": {}}}`, "is not 3.x"},
		{"no version", `{"paths": {"/a": {"get": {}}}}`, "is not 3.x"},
		{"no paths", `{"openapi": "3.1.0"}`, "no paths"},
		{"paths not object", `{"openapi": "3.1.0", "paths": []}`, "OpenAPI document"},
		{"operation not object", `{"openapi": "3.1.0", "paths": {"/a": {"get": 5}}}`, "GET /a"},
		{"parameters not array", `{"openapi": "3.1.0", "paths": {"/a": {"get": {"parameters": {}}}}}`, "GET /a"},
		{"schema wrong type", `{"openapi": "3.1.0", "paths": {"/a": {"get": {}}}, "components": {"schemas": {"X": 3}}}`, "OpenAPI document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := APIReference([]byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestAPIReferenceOddButValid(t *testing.T) {
	// Nulls, missing pieces, deep nesting and newlines in names must not break the output.
	doc := `{"openapi": "3.0.3", "info": {}, "paths": {"/x": {"get": null, "post": {"summary": "a\nb",
	  "parameters": [{"name": "p|q", "schema": null}],
	  "requestBody": {"content": {"application/json": {}}},
	  "responses": {"200": {}}}, "parameters": []}},
	  "components": {"schemas": {"Nil": null, "Deep": {"type": "array", "items": {"type": "array", "items": {"type": "array",
	  "items": {"type": "array", "items": {"type": "array", "items": {"type": "array", "items": {"type": "array", "items":
	  {"type": "array", "items": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}}}}}}}}}}}}`
	md, err := APIReference([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# API HTTP API reference", "### POST /x", "a b.", "`p\\|q`", "(empty schema)", "…"} {
		if !strings.Contains(md, want) {
			t.Errorf("lacks %q:\n%s", want, md)
		}
	}
}

func FuzzAPIReference(f *testing.F) {
	f.Add([]byte(sampleDoc))
	f.Add([]byte(`{"openapi":"3.1.0","paths":{"/a":{"get":{"parameters":[{"schema":{"type":["null"]}}]}}}}`))
	f.Add([]byte(`{"openapi":"3.1.0","paths":{"/a":{"get":{}}},"components":{"schemas":{"A":{"items":{"items":{}}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		md, err := APIReference(data)
		if err != nil {
			if md != "" {
				t.Fatal("an error must come with no output")
			}
			return
		}
		if !strings.HasPrefix(md, "# ") || !strings.Contains(md, "## Operations") {
			t.Fatalf("valid input must render a titled reference:\n%s", md)
		}
	})
}
