// Package campaign reads federated campaign files (JSONC), validates them strictly
// (the whole campaign on one machine) or federated (one site's slice), selects
// per-site slices and derives deterministic agent ids.
package campaign

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/tailscale/hujson"
)

// MaxFileBytes bounds the size of a campaign file.
const MaxFileBytes = 4 << 20

// Spec is a parsed campaign file: the campaign plus where each part was written,
// so that validation errors can name the file and line.
type Spec struct {
	model.Campaign
	// Path is the file the spec was read from ("" when parsed from memory).
	Path string

	pos  *positions
	orig []int // index in the file of each agent of a slice; nil = identity
}

// Load reads and parses a campaign file. It does not validate; call Validate.
func Load(path string) (*Spec, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open campaign file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read campaign file %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, fmt.Errorf("campaign file %s is larger than %d bytes; is this the right file?", path, MaxFileBytes)
	}
	return Parse(data, path)
}

// Parse parses campaign JSONC (comments and trailing commas allowed). path is used
// in error messages only. Unknown fields are errors (a misspelt "allowed_peer"
// must not silently drop a policy).
func Parse(data []byte, path string) (*Spec, error) {
	name := path
	if name == "" {
		name = "<campaign>"
	}
	tree, err := hujson.Parse(data)
	if err != nil {
		return nil, &SpecError{File: name, Line: hujsonErrLine(err), Msg: "not valid JSONC: " + stripHujsonPrefix(err.Error()), Err: err}
	}
	if _, ok := tree.Value.(*hujson.Object); !ok {
		return nil, &SpecError{File: name, Line: lineAt(data, tree.StartOffset), Msg: "a campaign file must hold one JSON object"}
	}
	pos := indexPositions(data, &tree)
	tree.Standardize()
	std := tree.Pack() // Standardize keeps byte offsets: comments become spaces

	dec := json.NewDecoder(bytes.NewReader(std))
	dec.DisallowUnknownFields()
	var c model.Campaign
	if err := dec.Decode(&c); err != nil {
		return nil, decodeError(name, data, pos, err)
	}
	return &Spec{Campaign: c, Path: path, pos: pos}, nil
}

func decodeError(file string, data []byte, pos *positions, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &SpecError{File: file, Line: lineAt(data, int(syn.Offset)), Msg: syn.Error(), Err: err}
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "value"
		}
		return &SpecError{File: file, Line: lineAt(data, int(typ.Offset)), Msg: fmt.Sprintf("field %s: expected %s, got JSON %s", field, typ.Type, typ.Value), Err: err}
	}
	msg := err.Error()
	if rest, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		key := strings.Trim(rest, `"`)
		return &SpecError{File: file, Line: pos.keyLine(key), Msg: fmt.Sprintf("unknown field %q (check its spelling; see examples/campaigns/federated-chat.jsonc)", key), Err: err}
	}
	// Errors from custom unmarshalers (e.g. a bad duration) carry no offset.
	return &SpecError{File: file, Msg: strings.TrimPrefix(msg, "json: "), Err: err}
}

// SpecError is a problem in a campaign file. Line is 1-based; 0 means unknown.
type SpecError struct {
	File string
	Line int
	Msg  string
	Err  error
}

// Error implements error as "file:line: message".
func (e *SpecError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return fmt.Sprintf("%s: %s", e.File, e.Msg)
}

// Unwrap returns the underlying error, if any.
func (e *SpecError) Unwrap() error { return e.Err }

// lineAt converts a byte offset into a 1-based line number.
func lineAt(data []byte, off int) int {
	if off < 0 {
		off = 0
	}
	if off > len(data) {
		off = len(data)
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
}

// hujsonErrLine extracts the line from hujson's "hujson: line N, column M: ..."
// errors; 0 when absent.
func hujsonErrLine(err error) int {
	var line, col int
	s := err.Error()
	if i := strings.Index(s, "line "); i >= 0 {
		if _, e := fmt.Sscanf(s[i:], "line %d, column %d", &line, &col); e == nil {
			return line
		}
	}
	return 0
}

func stripHujsonPrefix(s string) string {
	s = strings.TrimPrefix(s, "hujson: ")
	if i := strings.Index(s, "column "); i >= 0 {
		if j := strings.Index(s[i:], ": "); j >= 0 {
			return s[i+j+2:]
		}
	}
	return s
}
