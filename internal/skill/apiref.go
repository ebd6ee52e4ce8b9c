package skill

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// openAPI is the subset of an OpenAPI 3.x document the reference renders.
type openAPI struct {
	OpenAPI string `json:"openapi"`
	Info    struct {
		Title       string `json:"title"`
		Version     string `json:"version"`
		Description string `json:"description"`
	} `json:"info"`
	Paths      map[string]map[string]json.RawMessage `json:"paths"`
	Components struct {
		Schemas map[string]*schema `json:"schemas"`
	} `json:"components"`
}

type operation struct {
	OperationID string      `json:"operationId"`
	Summary     string      `json:"summary"`
	Description string      `json:"description"`
	Tags        []string    `json:"tags"`
	Parameters  []parameter `json:"parameters"`
	RequestBody *struct {
		Required bool                 `json:"required"`
		Content  map[string]mediaType `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Description string               `json:"description"`
		Content     map[string]mediaType `json:"content"`
	} `json:"responses"`
}

type parameter struct {
	Name        string  `json:"name"`
	In          string  `json:"in"`
	Description string  `json:"description"`
	Required    bool    `json:"required"`
	Schema      *schema `json:"schema"`
}

type mediaType struct {
	Schema *schema `json:"schema"`
}

type schema struct {
	Ref                  string             `json:"$ref"`
	Type                 json.RawMessage    `json:"type"` // "string" or ["null","string"]
	Format               string             `json:"format"`
	Description          string             `json:"description"`
	Enum                 []any              `json:"enum"`
	Items                *schema            `json:"items"`
	OneOf                []*schema          `json:"oneOf"`
	AnyOf                []*schema          `json:"anyOf"`
	Properties           map[string]*schema `json:"properties"`
	Required             []string           `json:"required"`
	AdditionalProperties json.RawMessage    `json:"additionalProperties"`
	Default              any                `json:"default"`
	Minimum              *float64           `json:"minimum"`
	Maximum              *float64           `json:"maximum"`
}

var methods = []string{"get", "put", "post", "patch", "delete"}

// maxDepth bounds how deep type names nest (arrays of arrays of …).
const maxDepth = 8

// APIReference renders an OpenAPI 3.x JSON document as a Markdown reference: every
// operation with its parameters, request body and responses, then every schema's fields.
func APIReference(openapiJSON []byte) (string, error) {
	var doc openAPI
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		return "", fmt.Errorf("OpenAPI document: %w", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		return "", fmt.Errorf("OpenAPI document: version %q is not 3.x", doc.OpenAPI)
	}
	if len(doc.Paths) == 0 {
		return "", errors.New("OpenAPI document: no paths")
	}
	var b strings.Builder
	title := doc.Info.Title
	if title == "" {
		title = "API"
	}
	fmt.Fprintf(&b, "# %s HTTP API reference", oneLine(title))
	if doc.Info.Version != "" {
		fmt.Fprintf(&b, " (%s)", oneLine(doc.Info.Version))
	}
	b.WriteString("\n\n")
	if doc.Info.Description != "" {
		b.WriteString(doc.Info.Description + "\n\n")
	}
	b.WriteString("Generated from the OpenAPI document (`/openapi.json`). Request and response bodies are JSON; " +
		"errors are RFC 9457 problems with `status`, `title` and `detail`.\n\n")

	paths := make([]string, 0, len(doc.Paths))
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	b.WriteString("## Operations\n\n")
	for _, p := range paths {
		for _, m := range methods {
			raw, ok := doc.Paths[p][m]
			if !ok {
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				return "", fmt.Errorf("OpenAPI document: %s %s: %w", strings.ToUpper(m), p, err)
			}
			writeOperation(&b, strings.ToUpper(m), p, &op)
		}
	}
	if len(doc.Components.Schemas) > 0 {
		b.WriteString("## Schemas\n\n")
		names := make([]string, 0, len(doc.Components.Schemas))
		for n := range doc.Components.Schemas {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			writeSchema(&b, n, doc.Components.Schemas[n])
		}
	}
	return b.String(), nil
}

func writeOperation(b *strings.Builder, method, path string, op *operation) {
	fmt.Fprintf(b, "### %s %s\n\n", method, path)
	if op.Summary != "" {
		b.WriteString(oneLine(op.Summary) + ".")
		if op.OperationID != "" {
			fmt.Fprintf(b, " (`%s`)", oneLine(op.OperationID))
		}
		b.WriteString("\n\n")
	}
	if op.Description != "" {
		b.WriteString(op.Description + "\n\n")
	}
	if len(op.Parameters) > 0 {
		b.WriteString("| parameter | in | type | required | description |\n|---|---|---|---|---|\n")
		for _, p := range op.Parameters {
			fmt.Fprintf(b, "| `%s` | %s | %s | %s | %s |\n", cell(p.Name), cell(p.In), cell(typeName(p.Schema, 0)),
				yes(p.Required), cell(describe(p.Description, p.Schema)))
		}
		b.WriteString("\n")
	}
	if rb := op.RequestBody; rb != nil {
		for _, ct := range sortedKeys(rb.Content) {
			fmt.Fprintf(b, "Request body (%s): %s\n\n", oneLine(ct), typeName(rb.Content[ct].Schema, 0))
		}
	}
	if len(op.Responses) > 0 {
		b.WriteString("Responses:\n\n")
		for _, code := range sortedKeys(op.Responses) {
			r := op.Responses[code]
			line := "- " + oneLine(code)
			if r.Description != "" {
				line += " " + oneLine(r.Description)
			}
			for _, ct := range sortedKeys(r.Content) {
				line += fmt.Sprintf(" — %s: %s", oneLine(ct), typeName(r.Content[ct].Schema, 0))
			}
			b.WriteString(line + "\n")
		}
		b.WriteString("\n")
	}
}

func writeSchema(b *strings.Builder, name string, s *schema) {
	fmt.Fprintf(b, "### %s\n\n", oneLine(name))
	if s == nil {
		b.WriteString("(empty schema)\n\n")
		return
	}
	if s.Description != "" {
		b.WriteString(s.Description + "\n\n")
	}
	if len(s.Properties) == 0 {
		fmt.Fprintf(b, "Type: %s\n\n", typeName(s, 0))
		return
	}
	req := map[string]bool{}
	for _, r := range s.Required {
		req[r] = true
	}
	b.WriteString("| field | type | required | description |\n|---|---|---|---|\n")
	for _, f := range sortedKeys(s.Properties) {
		if f == "$schema" {
			continue
		}
		p := s.Properties[f]
		desc := ""
		if p != nil {
			desc = describe(p.Description, p)
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", cell(f), cell(typeName(p, 0)), yes(req[f]), cell(desc))
	}
	b.WriteString("\n")
}

// typeName renders a schema's type briefly: a referenced schema's name, "array of X",
// "string (date-time)", "one of a, b".
func typeName(s *schema, depth int) string {
	if s == nil {
		return "any"
	}
	if depth > maxDepth {
		return "…"
	}
	if s.Ref != "" {
		return s.Ref[strings.LastIndex(s.Ref, "/")+1:]
	}
	if alts := append(append([]*schema(nil), s.OneOf...), s.AnyOf...); len(alts) > 0 {
		names := make([]string, 0, len(alts))
		for _, a := range alts {
			names = append(names, typeName(a, depth+1))
		}
		return "one of " + strings.Join(names, ", ")
	}
	var types []string
	if len(s.Type) > 0 {
		var one string
		if json.Unmarshal(s.Type, &one) == nil {
			types = []string{one}
		} else {
			_ = json.Unmarshal(s.Type, &types)
		}
	}
	var parts []string
	for _, t := range types {
		switch t {
		case "null":
			continue
		case "array":
			parts = append(parts, "array of "+typeName(s.Items, depth+1))
		default:
			if s.Format != "" {
				t += " (" + s.Format + ")"
			}
			parts = append(parts, t)
		}
	}
	if len(parts) == 0 {
		if len(s.Properties) > 0 {
			return "object"
		}
		return "any"
	}
	out := strings.Join(parts, " or ")
	if len(types) > len(parts) {
		out += ", nullable"
	}
	return out
}

// describe adds enum values, bounds and the default to a description.
func describe(desc string, s *schema) string {
	var extra []string
	if s != nil {
		if len(s.Enum) > 0 {
			vals := make([]string, 0, len(s.Enum))
			for _, v := range s.Enum {
				vals = append(vals, fmt.Sprint(v))
			}
			extra = append(extra, "one of: "+strings.Join(vals, ", "))
		}
		if s.Minimum != nil {
			extra = append(extra, fmt.Sprintf("min %g", *s.Minimum))
		}
		if s.Maximum != nil {
			extra = append(extra, fmt.Sprintf("max %g", *s.Maximum))
		}
		if s.Default != nil {
			extra = append(extra, fmt.Sprintf("default %v", s.Default))
		}
	}
	if len(extra) == 0 {
		return desc
	}
	if desc != "" {
		desc += " "
	}
	return desc + "(" + strings.Join(extra, "; ") + ")"
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

// oneLine keeps a value on one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// cell makes a value safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(oneLine(s), "|", `\|`)
}
