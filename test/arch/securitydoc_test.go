package arch

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// A citation is one test a docs page names as the proof of a claim: "pkg `TestName`"
// in a table cell, where pkg is the last element of the package's directory (e2e for
// test/e2e, cmd/mosaic for the binary), carried over to the names after it in the cell.
type citation struct {
	pkg, name, sub string // sub: a subtest ("TestX/Sub", or "…/Sub" of the last test)
}

var (
	citeRE   = regexp.MustCompile("(?:([a-z0-9/]+) )?`([^`]+)`")
	braceRE  = regexp.MustCompile(`^(.*)\{([^}]*)\}(.*)$`)
	testFunc = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark)\w*)\(`)
	quoted   = regexp.MustCompile(`"([A-Za-z0-9_]+)"`)
)

// citations reads the last cell of every table row of a docs page.
func citations(doc string) []citation {
	var out []citation
	for _, line := range strings.Split(doc, "\n") {
		cells := strings.Split(line, "|")
		if !strings.HasPrefix(line, "|") || len(cells) < 3 {
			continue
		}
		pkg := ""
		for _, m := range citeRE.FindAllStringSubmatch(cells[len(cells)-2], -1) {
			if m[1] != "" {
				pkg = m[1]
			}
			name, sub, _ := strings.Cut(m[2], "/")
			if pkg == "" || !(strings.HasPrefix(name, "Test") || name == "…") {
				continue
			}
			names := []string{name}
			if b := braceRE.FindStringSubmatch(name); b != nil {
				names = nil
				for _, v := range strings.Split(b[2], ",") {
					names = append(names, b[1]+v+b[3])
				}
			}
			for _, n := range names {
				out = append(out, citation{pkg: pkg, name: n, sub: sub})
			}
		}
	}
	return out
}

// testIndex maps a package label to its test functions and the quoted names in its
// test files (subtest names).
type testIndex map[string]struct{ funcs, strs map[string]bool }

func indexTests(t *testing.T, root string) testIndex {
	t.Helper()
	idx := testIndex{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "node_modules" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		for _, label := range []string{filepath.Base(dir), filepath.ToSlash(dir)} {
			e, ok := idx[label]
			if !ok {
				e = struct{ funcs, strs map[string]bool }{map[string]bool{}, map[string]bool{}}
				idx[label] = e
			}
			for _, m := range testFunc.FindAllStringSubmatch(string(b), -1) {
				e.funcs[m[1]] = true
			}
			for _, m := range quoted.FindAllStringSubmatch(string(b), -1) {
				e.strs[m[1]] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return idx
}

// missing lists the citations with no such test in the cited package.
func (idx testIndex) missing(cs []citation) []string {
	var out []string
	for _, c := range cs {
		e, ok := idx[c.pkg]
		found := ok
		if ok && c.name != "…" {
			if prefix, wild := strings.CutSuffix(c.name, "*"); wild {
				found = false
				for f := range e.funcs {
					found = found || strings.HasPrefix(f, prefix)
				}
			} else {
				found = e.funcs[c.name]
			}
		}
		if found && c.sub != "" {
			found = e.strs[c.sub]
		}
		if !found {
			name := c.name
			if c.sub != "" {
				name += "/" + c.sub
			}
			out = append(out, c.pkg+" "+name)
		}
	}
	return out
}

// TestSecurityDocCitesRealTests: every test docs/SECURITY.md names as the proof of a
// defence exists in the package it names, so a renamed or moved test cannot leave a
// claim without its proof (as "web TestSession*" did when the session code moved to
// internal/session).
func TestSecurityDocCitesRealTests(t *testing.T) {
	doc, err := os.ReadFile("../../docs/SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	cs := citations(string(doc))
	if len(cs) < 50 {
		t.Fatalf("found only %d citations in docs/SECURITY.md: the table format changed and this test reads nothing", len(cs))
	}
	for _, m := range indexTests(t, "../..").missing(cs) {
		t.Errorf("docs/SECURITY.md cites %s, which does not exist: name the test that proves the claim now", m)
	}
}

// TestCitationChecker proves the checker on a synthetic page: each way a citation
// can go stale is reported, and live ones are not.
func TestCitationChecker(t *testing.T) {
	doc := "| Claim | Proof |\n|---|---|\n" +
		"| a | api `TestHost`, web `TestSession*` |\n" +
		"| b | exchange `TestIdentity{Memory,Redis}/ReadAnother`, `…/Gone` |\n" +
		"| c | e2e `TestMoved`, cmd/mosaic `TestJSON` |\n"
	idx := testIndex{
		"api":        {map[string]bool{"TestHost": true}, map[string]bool{}},
		"web":        {map[string]bool{"TestLogin": true}, map[string]bool{}},
		"exchange":   {map[string]bool{"TestIdentityMemory": true}, map[string]bool{"ReadAnother": true}},
		"e2e":        {map[string]bool{}, map[string]bool{}},
		"cmd/mosaic": {map[string]bool{"TestJSON": true}, map[string]bool{}},
	}
	got := strings.Join(idx.missing(citations(doc)), "; ")
	want := "web TestSession*; exchange TestIdentityRedis/ReadAnother; exchange …/Gone; e2e TestMoved"
	if got != want {
		t.Fatalf("missing = %q\nwant      %q", got, want)
	}
}
