package web

import (
	"io/fs"
	"path"
	"regexp"
	"strings"
	"testing"
)

// TestAssetsAreSelfContained checks the offline promise: every module import and every
// src/href in the embedded UI names an embedded file, and no asset loads anything from
// another host.
func TestAssetsAreSelfContained(t *testing.T) {
	sub, err := fs.Sub(files, "static")
	if err != nil {
		t.Fatal(err)
	}
	imports := regexp.MustCompile(`(?:from|import)\s*\(?\s*'([^']+)'`)
	refs := regexp.MustCompile(`(?:src|href)="(/ui/[^"]+)"`)
	cssURL := regexp.MustCompile(`url\(([^)]+)\)`)
	remote := regexp.MustCompile(`https?://`)
	n := 0
	err = fs.WalkDir(sub, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		n++
		b, err := fs.ReadFile(sub, p)
		if err != nil {
			return err
		}
		text := string(b)
		for _, m := range remote.FindAllStringIndex(text, -1) {
			line := text[m[0]:min(len(text), m[0]+40)]
			if !strings.HasPrefix(line, "http://www.w3.org/2000/svg") {
				t.Errorf("%s refers to another host: %q", p, line)
			}
		}
		check := func(ref string) {
			target := ref
			if strings.HasPrefix(ref, "/ui/") {
				target = strings.TrimPrefix(ref, "/ui/")
			} else {
				target = path.Join(path.Dir(p), ref)
			}
			if _, err := fs.Stat(sub, target); err != nil {
				t.Errorf("%s refers to %s, which is not embedded", p, ref)
			}
		}
		if strings.HasSuffix(p, ".js") {
			for _, m := range imports.FindAllStringSubmatch(text, -1) {
				check(m[1])
			}
		}
		for _, m := range refs.FindAllStringSubmatch(text, -1) {
			check(m[1])
		}
		if strings.HasSuffix(p, ".css") {
			for _, m := range cssURL.FindAllStringSubmatch(text, -1) {
				check(strings.Trim(m[1], `"'`))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Fatalf("only %d embedded files", n)
	}
}
