package campaign

import (
	"strconv"

	"github.com/tailscale/hujson"
)

// positions maps JSON paths ("agents.1.allowed_peers.0") and member names to the
// 1-based line where they were written, so that errors can point into the file.
type positions struct {
	paths map[string]int
	keys  map[string]int // first line of each member name, for unknown fields
}

func indexPositions(data []byte, v *hujson.Value) *positions {
	p := &positions{paths: map[string]int{}, keys: map[string]int{}}
	p.walk(data, v, "", 0)
	return p
}

// walk records the position of v and its children. depth bounds recursion on
// hostile input (hujson itself accepts arbitrary nesting).
func (p *positions) walk(data []byte, v *hujson.Value, path string, depth int) {
	if depth > 64 {
		return
	}
	p.paths[path] = lineAt(data, v.StartOffset)
	switch t := v.Value.(type) {
	case *hujson.Object:
		for i := range t.Members {
			m := &t.Members[i]
			name := ""
			if lit, ok := m.Name.Value.(hujson.Literal); ok {
				name = lit.String()
			}
			line := lineAt(data, m.Name.StartOffset)
			if _, seen := p.keys[name]; !seen {
				p.keys[name] = line
			}
			child := join(path, name)
			p.walk(data, &m.Value, child, depth+1)
			p.paths[child] = line // the key's line is the most useful one
		}
	case *hujson.Array:
		for i := range t.Elements {
			p.walk(data, &t.Elements[i], join(path, strconv.Itoa(i)), depth+1)
		}
	}
}

func join(path, elem string) string {
	if path == "" {
		return elem
	}
	return path + "." + elem
}

// line returns the line of path, falling back to its closest recorded parent; 0
// when nothing is known (e.g. a Spec built in memory).
func (p *positions) line(path string) int {
	if p == nil {
		return 0
	}
	for {
		if l, ok := p.paths[path]; ok {
			return l
		}
		i := lastDot(path)
		if i < 0 {
			return p.paths[""]
		}
		path = path[:i]
	}
}

func (p *positions) keyLine(key string) int {
	if p == nil {
		return 0
	}
	return p.keys[key]
}

func lastDot(s string) int {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' {
			return i
		}
	}
	return -1
}
