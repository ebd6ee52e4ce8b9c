package site

import (
	"encoding"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"
)

// nodeBudget bounds how many YAML nodes one document may expand to (aliases can make
// a small file expand exponentially).
const nodeBudget = 200_000

// decoder walks a yaml.Node tree into Go structs using their yaml tags, reporting
// every problem with its line and field path, and recording the line of every field
// it sets (lines[path]); presence in lines is how machine-shape overlays know which
// fields a file set.
type decoder struct {
	rep    *reporter
	budget int
	spent  bool
}

type fieldInfo struct {
	index []int
	key   string
}

type structInfo struct {
	byKey map[string]fieldInfo
	keys  []string // sorted, for suggestions
	line  []int    // index of an int field "Line" tagged yaml:"-", or nil
}

var structCache sync.Map // reflect.Type → *structInfo

func infoFor(t reflect.Type) *structInfo {
	if v, ok := structCache.Load(t); ok {
		return v.(*structInfo)
	}
	si := &structInfo{byKey: map[string]fieldInfo{}}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("yaml")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			if f.Name == "Line" && f.Type.Kind() == reflect.Int {
				si.line = f.Index
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		si.byKey[name] = fieldInfo{index: f.Index, key: name}
		si.keys = append(si.keys, name)
	}
	sort.Strings(si.keys)
	structCache.Store(t, si)
	return si
}

type pair struct{ key, val *yaml.Node }

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

func (d *decoder) take() bool {
	if d.budget <= 0 {
		if !d.spent {
			d.spent = true
			d.rep.errAt(0, "", "document too large or too deeply aliased (more than %d nodes after expanding aliases)", nodeBudget)
		}
		return false
	}
	d.budget--
	return true
}

// resolve follows aliases (bounded).
func (d *decoder) resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 64; i++ {
		n = n.Alias
	}
	if n != nil && n.Kind == yaml.AliasNode {
		return nil
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.Tag == "!!null")
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("%q", n.Value)
	case yaml.DocumentNode:
		return "a document"
	}
	return "an alias"
}

// decode fills v (addressable) from n. path names v for messages.
func (d *decoder) decode(n *yaml.Node, v reflect.Value, path string) {
	if !d.take() {
		return
	}
	n = d.resolve(n)
	if n == nil {
		d.rep.errf(path, "unresolvable alias")
		return
	}
	if isNull(n) {
		return // leave the zero value
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem(), path)
	case reflect.Struct:
		d.decodeStruct(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			d.rep.errAt(n.Line, path, "want a list, got %s", kindName(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, el := range n.Content {
			p := fmt.Sprintf("%s[%d]", path, i)
			d.rep.lines[p] = el.Line
			d.decode(el, s.Index(i), p)
		}
		v.Set(s)
	default:
		d.decodeScalar(n, v, path)
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.rep.errAt(n.Line, path, "want a mapping of fields, got %s", kindName(n))
		return
	}
	si := infoFor(v.Type())
	if si.line != nil {
		v.FieldByIndex(si.line).SetInt(int64(n.Line))
	}
	for _, p := range d.pairs(n, path, 0) {
		key := p.key.Value
		fpath := key
		if path != "" {
			fpath = path + "." + key
		}
		fi, ok := si.byKey[key]
		if !ok {
			d.rep.errAt(p.key.Line, fpath, "unknown field%s; known fields here: %s",
				suggest(key, si.keys), strings.Join(si.keys, ", "))
			continue
		}
		d.rep.lines[fpath] = p.key.Line
		d.decode(p.val, v.FieldByIndex(fi.index), fpath)
	}
}

// pairs lists a mapping's key/value pairs, expanding YAML merge keys ("<<: *anchor").
// Explicit keys win over merged ones; duplicate explicit keys are errors.
func (d *decoder) pairs(n *yaml.Node, path string, depth int) []pair {
	var explicit, merged []pair
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.rep.errAt(k.Line, path, "field names must be plain words, got %s", kindName(k))
			continue
		}
		if k.Tag == "!!merge" || (k.Value == "<<" && k.Style == 0) {
			if depth > 8 {
				d.rep.errAt(k.Line, path, "merge keys nested too deeply")
				continue
			}
			src := d.resolve(val)
			var maps []*yaml.Node
			switch {
			case src == nil:
			case src.Kind == yaml.MappingNode:
				maps = append(maps, src)
			case src.Kind == yaml.SequenceNode:
				for _, m := range src.Content {
					if m = d.resolve(m); m != nil && m.Kind == yaml.MappingNode {
						maps = append(maps, m)
					}
				}
			}
			if len(maps) == 0 {
				d.rep.errAt(k.Line, path, "merge key (<<) must refer to a mapping")
				continue
			}
			for _, m := range maps {
				if !d.take() {
					return explicit
				}
				merged = append(merged, d.pairs(m, path, depth+1)...)
			}
			continue
		}
		if prev, dup := seen[k.Value]; dup {
			fpath := k.Value
			if path != "" {
				fpath = path + "." + k.Value
			}
			d.rep.errAt(k.Line, fpath, "duplicate field (first given on line %d)", prev)
			continue
		}
		seen[k.Value] = k.Line
		explicit = append(explicit, pair{k, val})
	}
	for _, p := range merged {
		if _, ok := seen[p.key.Value]; ok {
			continue
		}
		seen[p.key.Value] = p.key.Line
		explicit = append(explicit, p)
	}
	return explicit
}

func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.rep.errAt(n.Line, path, "want a single value, got %s", kindName(n))
		return
	}
	if v.CanAddr() && v.Addr().Type().Implements(textUnmarshaler) {
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			d.rep.errAt(n.Line, path, "%v", err)
		}
		return
	}
	var want string
	switch v.Kind() {
	case reflect.String:
		v.SetString(n.Value)
		return
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		want = "a whole number"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.Bool:
		want = "true or false"
	default:
		d.rep.errAt(n.Line, path, "cannot decode into %s", v.Type())
		return
	}
	tmp := reflect.New(v.Type())
	if err := n.Decode(tmp.Interface()); err != nil {
		d.rep.errAt(n.Line, path, "want %s, got %q", want, n.Value)
		return
	}
	v.Set(tmp.Elem())
}

// infoForValue is infoFor on a value's type (for tests and tooling).
func infoForValue(v any) *structInfo { return infoFor(reflect.TypeOf(v)) }
