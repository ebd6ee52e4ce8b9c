// Package skill holds Mosaic's skill document (SKILL.md), which teaches an AI agent the
// workflow, and renders the HTTP API reference from the OpenAPI document as Markdown.
//
// The canonical file is internal/skill/SKILL.md (go:embed cannot reach parent
// directories); the repository root keeps an identical copy for readers, checked by
// TestRootCopyIsIdentical.
package skill

import _ "embed"

//go:embed SKILL.md
var document string

// Document returns SKILL.md.
func Document() string { return document }
