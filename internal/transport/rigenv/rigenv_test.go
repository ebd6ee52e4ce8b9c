package rigenv

import (
	"os"
	"path/filepath"
	"testing"
)

// fakeTB records Skip and Fatalf instead of stopping the goroutine; the embedded
// (nil) testing.TB is never called because Require uses only these three methods.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()               {}
func (f *fakeTB) Skip(...any)           { f.skipped = true }
func (f *fakeTB) Fatalf(string, ...any) { f.failed = true }

func TestRequireSkipsOrFailsUnderCI(t *testing.T) {
	t.Setenv("MOSAIC_RIG_ENV", filepath.Join(t.TempDir(), "missing.env"))
	t.Setenv("CI", "")
	f := &fakeTB{}
	Require(f)
	if !f.skipped || f.failed {
		t.Errorf("without CI: skipped=%v failed=%v", f.skipped, f.failed)
	}
	t.Setenv("CI", "true")
	f = &fakeTB{}
	Require(f)
	if !f.failed || f.skipped {
		t.Errorf("CI=true: skipped=%v failed=%v", f.skipped, f.failed)
	}
}

func TestRead(t *testing.T) {
	p := filepath.Join(t.TempDir(), "rig.env")
	if err := os.WriteFile(p, []byte("# c\n\nA=1\nB = x=y \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env, err := Read(p)
	if err != nil || env["A"] != "1" || env["B"] != "x=y" {
		t.Errorf("%v %v", env, err)
	}
	if err := os.WriteFile(p, []byte("novalue\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(p); err == nil {
		t.Error("want error for a line without '='")
	}
}
