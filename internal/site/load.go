package site

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Load reads and validates a sites.yaml file. Relative sim trace paths and ssh
// identity_file / config_file names are resolved against the file's directory. Problems are returned as Errors (each naming file, line
// and field); non-fatal ones land in Catalog.Warnings.
func Load(path string) (*Catalog, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read site catalog: %w (copy sites.example.yaml to start one)", err)
	}
	c, err := Parse(path, data)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("site catalog %s: %w", path, err)
	}
	// Relative file names are relative to the catalog, never to the working directory
	// (a stranger's directory could otherwise supply the ssh config or key it names).
	for i := range c.Systems {
		if sc := c.Systems[i].SimConfig; sc != nil {
			sc.Load.Trace = relativeTo(dir, sc.Load.Trace)
		}
		for j := range c.Systems[i].Users {
			u := &c.Systems[i].Users[j]
			u.Identity = relativeTo(dir, u.Identity)
		}
		if ss := c.Systems[i].SSH; ss != nil {
			ss.IdentityFile = relativeTo(dir, ss.IdentityFile)
			if ss.ConfigFile != "none" { // ssh -F none: no config file at all
				ss.ConfigFile = relativeTo(dir, ss.ConfigFile)
			}
		}
	}
	return c, nil
}

// Parse decodes and validates a catalog. name is used in messages ("sites.yaml:14: ...").
// Steps: decode (unknown or duplicate fields are errors), expand `machine:` shapes,
// normalise (dialect default, canonical arch and GPU names), validate every rule.
func Parse(name string, data []byte) (c *Catalog, err error) {
	rep := &reporter{file: name, lines: map[string]int{}}
	root, perr := parseYAML(name, data)
	if perr != nil {
		return nil, perr
	}
	c = &Catalog{Path: name}
	d := &decoder{rep: rep, budget: nodeBudget}
	d.decode(root, reflect.ValueOf(c).Elem(), "")
	if err := rep.err(); err != nil {
		return nil, err
	}
	expand(c, rep)
	if err := rep.err(); err != nil {
		return nil, err
	}
	normalize(c)
	validate(c, rep)
	if err := rep.err(); err != nil {
		return nil, err
	}
	c.Warnings = rep.warns
	return c, nil
}

// parseYAML parses one YAML document into its root node, turning parser errors into
// *Error with the line of the problem.
func parseYAML(name string, data []byte) (*yaml.Node, error) {
	root, extraLine, err := decodeOne(data)
	switch {
	case err != nil:
		return nil, yamlError(name, data, err)
	case extraLine > 0:
		return nil, &Error{File: name, Line: extraLine, Msg: "more than one YAML document (---); put every system in one systems: list"}
	case root == nil:
		return nil, &Error{File: name, Line: 1, Msg: "file is empty; it needs a systems: list (see sites.example.yaml)"}
	}
	return root, nil
}

// decodeOne parses the first YAML document; extraLine > 0 is the line of a second one.
func decodeOne(data []byte) (root *yaml.Node, extraLine int, err error) {
	defer func() {
		if r := recover(); r != nil { // the YAML library must not take the caller down
			root, extraLine, err = nil, 0, fmt.Errorf("yaml: parser failure: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, 0, nil
		}
		return nil, 0, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, max(extra.Line, 1), nil
	} else if !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	if len(doc.Content) == 0 {
		return nil, 0, nil
	}
	return doc.Content[0], 0, nil
}

// maxErrorSearchBytes bounds the search for the line of a YAML syntax error.
const maxErrorSearchBytes = 256 << 10

// yamlError reports a YAML syntax error at the line where it occurs. The parser names
// the line where the enclosing construct starts (often line 1), so this binary-searches
// for the shortest run of whole lines that fails with the same message and reports
// its last line; if that cannot be confirmed it falls back to the parser's line.
func yamlError(name string, data []byte, err error) error {
	line, msg := splitYAMLError(err)
	if l := problemLine(data, msg); l > 0 {
		line = l
	}
	return &Error{File: name, Line: line, Msg: "invalid YAML: " + msg}
}

func problemLine(data []byte, msg string) int {
	if len(data) > maxErrorSearchBytes {
		return 0
	}
	// ends[k] is the length of the first k+1 lines (the last may lack a newline).
	var ends []int
	for i, c := range data {
		if c == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	same := func(k int) bool { // do the first k+1 lines fail with msg?
		_, _, perr := decodeOne(data[:ends[k]])
		if perr == nil {
			return false
		}
		_, m := splitYAMLError(perr)
		return m == msg
	}
	lo, hi := 0, len(ends)-1 // the whole file fails with msg: hi satisfies
	for lo < hi {
		mid := lo + (hi-lo)/2
		if same(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	if !same(lo) || (lo > 0 && same(lo-1)) {
		return 0
	}
	return lo + 1
}

var yamlLineRe = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func splitYAMLError(err error) (int, string) {
	msg := err.Error()
	if m := yamlLineRe.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return line, m[2]
	}
	return 0, strings.TrimPrefix(msg, "yaml: ")
}

// expand replaces each system that names a known machine with the machine's shape,
// overlaid with the fields the file sets. Partition rule: if the file lists partitions,
// the system has exactly those, in the file's order; a listed partition whose name
// matches one of the machine's starts from that partition's shape and the file's fields
// override it. If the file lists none, the system gets all of the machine's partitions.
func expand(c *Catalog, rep *reporter) {
	for i := range c.Systems {
		s := &c.Systems[i]
		path := fmt.Sprintf("systems[%d]", i)
		if s.Machine == "" {
			continue
		}
		base, ok := Known(s.Machine)
		if !ok {
			rep.errf(path+".machine", "unknown machine %q%s; known machines: %s (or leave machine out and describe the partitions)",
				s.Machine, suggest(s.Machine, KnownMachineNames()), strings.Join(KnownMachineNames(), ", "))
			continue
		}
		merged := base
		overlay(reflect.ValueOf(&merged).Elem(), reflect.ValueOf(s).Elem(), path, rep.lines, "partitions")
		if _, set := rep.lines[path+".partitions"]; set {
			merged.Partitions = make([]Partition, len(s.Partitions))
			for j := range s.Partitions {
				fp := &s.Partitions[j]
				kp, ok := base.PartitionByName(fp.Name)
				if !ok {
					merged.Partitions[j] = *fp
					continue
				}
				mp := *kp
				overlay(reflect.ValueOf(&mp).Elem(), reflect.ValueOf(fp).Elem(), fmt.Sprintf("%s.partitions[%d]", path, j), rep.lines)
				mp.Line = fp.Line
				merged.Partitions[j] = mp
			}
		}
		merged.Machine = base.Machine
		merged.Line = s.Line
		*s = merged
	}
}

// overlay copies into dst every field of src whose yaml key the file set at path.
func overlay(dst, src reflect.Value, path string, lines map[string]int, skip ...string) {
	si := infoFor(dst.Type())
	for key, fi := range si.byKey {
		if slices.Contains(skip, key) {
			continue
		}
		if _, set := lines[path+"."+key]; set {
			dst.FieldByIndex(fi.index).Set(src.FieldByIndex(fi.index))
		}
	}
}

// normalize applies defaults and canonical spellings; it is idempotent.
func normalize(c *Catalog) {
	for i := range c.Systems {
		s := &c.Systems[i]
		s.Name = strings.TrimSpace(s.Name)
		s.Kind = strings.ToLower(strings.TrimSpace(s.Kind))
		s.Dialect = strings.ToLower(strings.TrimSpace(s.Dialect))
		if s.Dialect == "" {
			s.Dialect = DialectSlurm
		}
		if a, ok := CanonicalArch(s.Arch); ok {
			s.Arch = a
		}
		for j := range s.Partitions {
			p := &s.Partitions[j]
			if a, ok := CanonicalArch(p.Arch); ok {
				p.Arch = a
			}
			if m, ok := CanonicalGPUModel(p.GPUModel); ok {
				p.GPUModel = m
			}
		}
		for j := range s.ContainerRuntimes {
			s.ContainerRuntimes[j] = strings.ToLower(strings.TrimSpace(s.ContainerRuntimes[j]))
		}
	}
}

// relativeTo makes a relative file name relative to dir; "", absolute and ~ names stay.
func relativeTo(dir, name string) string {
	if name == "" || filepath.IsAbs(name) || strings.HasPrefix(name, "~") {
		return name
	}
	return filepath.Join(dir, name)
}
