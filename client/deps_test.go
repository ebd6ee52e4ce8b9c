package client

import (
	"os/exec"
	"strings"
	"testing"
)

// maxExternalModules bounds the third-party modules a program importing client links.
const maxExternalModules = 3

// TestClientDependencies: the client depends on api/v1 and the standard library (plus
// at most maxExternalModules small modules), never on an internal package, so a Go
// program outside this module can use it without linking the core (SQLite, Redis, LLM
// SDKs). Before api/v1 it linked 13 third-party modules.
func TestClientDependencies(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	const self = "github.com/mosaic-hpc/mosaic"
	external := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, mod, _ := strings.Cut(strings.TrimSpace(line), " ")
		if pkg == "" {
			continue
		}
		if mod == self {
			if strings.Contains(pkg+"/", "/internal/") {
				t.Errorf("client depends on internal package %s; public wire types belong in api/v1", pkg)
			}
			continue
		}
		external[mod] = true
	}
	if len(external) > maxExternalModules {
		t.Errorf("client depends on %d external modules (at most %d): %v", len(external), maxExternalModules, external)
	}
}
