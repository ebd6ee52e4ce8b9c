package dialects

import (
	"strings"
	"testing"

	"github.com/mosaic-hpc/mosaic/internal/dialect/pbs"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

func TestFor(t *testing.T) {
	for _, tc := range []struct{ in, want, ext string }{
		{"", "slurm", ".sbatch"}, {"slurm", "slurm", ".sbatch"}, {"SLURM", "slurm", ".sbatch"}, {"pbs", "pbs", ".pbs"}, {" PBS ", "pbs", ".pbs"},
	} {
		d, err := For(site.System{Name: "x", Dialect: tc.in})
		if err != nil {
			t.Fatalf("%q: %v", tc.in, err)
		}
		if d.Name() != tc.want || d.ScriptExt() != tc.ext {
			t.Errorf("%q: %s %s, want %s %s", tc.in, d.Name(), d.ScriptExt(), tc.want, tc.ext)
		}
	}
	_, err := For(site.System{Name: "x", Dialect: "lsf"})
	if err == nil || !strings.Contains(err.Error(), "slurm, pbs") {
		t.Fatalf("unknown dialect: %v", err)
	}
}

func TestForCarriesCatalogSettings(t *testing.T) {
	d, err := For(site.System{Name: "p", Dialect: "pbs", EnvScript: "/etc/env.sh", Features: []string{"a100", "filesystems=home:eagle"}})
	if err != nil {
		t.Fatal(err)
	}
	p := d.(*pbs.PBS)
	if p.EnvScript != "/etc/env.sh" || p.Filesystems != "home:eagle" {
		t.Fatalf("%+v", p)
	}
}

func TestAllHaveDistinctNamesAndExtensions(t *testing.T) {
	names, exts := map[string]bool{}, map[string]bool{}
	for _, d := range All() {
		if names[d.Name()] || exts[d.ScriptExt()] || !strings.HasPrefix(d.ScriptExt(), ".") {
			t.Fatalf("dialect %s ext %q: duplicate or no dot", d.Name(), d.ScriptExt())
		}
		names[d.Name()], exts[d.ScriptExt()] = true, true
	}
	if len(names) != len(Names()) || len(names) < 2 {
		t.Fatalf("All %v, Names %v", names, Names())
	}
}

// TestCatalogAcceptsEveryDialect: the catalog's validation (internal/site, below this
// package, keeps its own list of names) accepts every dialect built here, so adding a
// dialect without naming it there fails here.
func TestCatalogAcceptsEveryDialect(t *testing.T) {
	for _, name := range Names() {
		yaml := "systems:\n  - name: X\n    kind: local\n    dialect: " + name + "\n    accounts: [a]\n    workdir: /w\n"
		if _, err := site.Parse("sites.yaml", []byte(yaml)); err != nil {
			t.Errorf("dialect %s: the catalog refuses it: %v (add it to internal/site/validate.go's dialects)", name, err)
		}
	}
	if _, err := site.Parse("sites.yaml", []byte("systems:\n  - name: X\n    kind: local\n    dialect: lsf\n    accounts: [a]\n    workdir: /w\n")); err == nil {
		t.Fatal("the catalog accepts a dialect nobody speaks; this test cannot tell")
	}
}
