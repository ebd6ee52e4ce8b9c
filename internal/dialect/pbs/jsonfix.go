package pbs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// memberRe matches one `"key": value` member line of the PBS JSON writers (one member
// per line in every release up to 23.06 and in the cJSON layout).
var memberRe = regexp.MustCompile(`^(\s*"[^"]*"\s*:\s*)(.*?)(,?)\s*$`)

var numberRe = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// Repair fixes the invalid JSON PBS is known to print (json-quirks Q1, Q2): bare values
// that are not JSON numbers (leading zeros, inf, nan, empty), invalid backslash escapes,
// unescaped quotes and raw control characters inside strings. Valid input is returned
// unchanged.
func Repair(b []byte) []byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if json.Valid(b) {
		return b
	}
	var out bytes.Buffer
	out.Grow(len(b) + 64)
	for _, line := range strings.Split(string(b), "\n") {
		m := memberRe.FindStringSubmatch(line)
		if m == nil {
			out.WriteString(repairBareString(line))
			out.WriteByte('\n')
			continue
		}
		prefix, val, comma := m[1], m[2], m[3]
		switch {
		case val == "":
			val = `""`
		case val == "{" || val == "[" || val == "{}" || val == "[]" || val == "true" || val == "false" || val == "null":
		case strings.HasPrefix(val, `"`):
			val = quote(strings.TrimPrefix(strings.TrimSuffix(val, `"`), `"`), true)
		case numberRe.MatchString(val):
			if len(val) > 17 && !strings.ContainsAny(val, ".eE") {
				val = `"` + val + `"` // beyond float64 precision: keep the text
			}
		default:
			val = quote(val, false)
		}
		out.WriteString(prefix)
		out.WriteString(val)
		out.WriteString(comma)
		out.WriteByte('\n')
	}
	return out.Bytes()
}

// repairBareString fixes array items (a line holding only a string).
func repairBareString(line string) string {
	t := strings.TrimSpace(line)
	comma := ""
	if strings.HasSuffix(t, ",") {
		t, comma = strings.TrimSuffix(t, ","), ","
	}
	if len(t) >= 2 && t[0] == '"' && t[len(t)-1] == '"' {
		return quote(t[1:len(t)-1], true) + comma
	}
	return line
}

// quote builds a JSON string from PBS's raw text. When escaped is true the text came
// from inside quotes and its valid escapes are kept.
func quote(s string, escaped bool) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && escaped && i+1 < len(s) && strings.IndexByte(`"\/bfnrt`, s[i+1]) >= 0:
			b.WriteByte(c)
			b.WriteByte(s[i+1])
			i++
		case c == '\\' && escaped && i+5 < len(s) && s[i+1] == 'u' && isHex4(s[i+2:i+6]):
			b.WriteString(s[i : i+6])
			i += 5
		case c == '\\':
			b.WriteString(`\\`)
		case c == '"':
			b.WriteString(`\"`)
		case c < 0x20:
			fmt.Fprintf(&b, `\u%04x`, c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

func isHex4(s string) bool {
	for i := 0; i < 4; i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// decode repairs and decodes a PBS JSON document into generic values (numbers kept as
// json.Number).
func decode(b []byte, what string) (map[string]any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%s: empty output", what)
	}
	dec := json.NewDecoder(bytes.NewReader(Repair(b)))
	dec.UseNumber()
	var doc map[string]any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("%s: invalid JSON even after repair: %w", what, err)
	}
	return doc, nil
}

// decodeAll is decode for output holding several documents one after another (as a
// loop of qstat calls prints them); at least one is required, trailing garbage is an
// error.
func decodeAll(b []byte, what string) ([]map[string]any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, fmt.Errorf("%s: empty output", what)
	}
	// Valid documents are read as they are (Repair's line rewriting is for PBS's broken
	// JSON, and json.Valid is false for several documents in a row).
	if docs, err := decodeDocs(b, what); err == nil {
		return docs, nil
	}
	return decodeDocs(Repair(b), what)
}

func decodeDocs(b []byte, what string) ([]map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var docs []map[string]any
	for {
		var doc map[string]any
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) && len(docs) > 0 {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: invalid JSON even after repair (document %d): %w", what, len(docs)+1, err)
		}
		docs = append(docs, doc)
	}
}

// str renders a scalar as text: strings as is, numbers in their original text,
// booleans as PBS writes them ("True"/"False"); nil and objects give "".
func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		if x {
			return "True"
		}
		return "False"
	}
	return ""
}

func obj(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func num(v any) int {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return int(n)
		}
		if f, err := x.Float64(); err == nil {
			return int(f)
		}
	case string:
		var n int
		if _, err := fmt.Sscan(strings.TrimSpace(x), &n); err == nil {
			return n
		}
	}
	return 0
}
