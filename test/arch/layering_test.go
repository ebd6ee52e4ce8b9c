// Package arch holds tests of the module's shape rather than of its behaviour: today,
// the import graph's layering.
package arch

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/mosaic-hpc/mosaic"

// Levels, bottom to top. A package may import packages at its own level or below,
// never above. Names are module-relative.
const (
	lvLeaf     = iota // wire types, domain types, shared sentinels; nothing of ours below
	lvSite            // the site catalog
	lvReach           // reaching a login node (transports, credentials) and speaking its batch system (dialects)
	lvProvider        // the provider contract and the HPC provider built from a transport and a dialect
	lvServices        // what works over providers: simulator, collector, scheduler, store, exchange
	lvEngine          // execution engine and campaign launcher
	lvCore            // the one facade
	lvSurface         // HTTP API, web UI, MCP server: each calls core, none calls another
	lvCmd             // the binary and the tests that drive it
)

// levels classifies every package of the module, one line each. A new package must be
// added here (the test fails on an unclassified one) at the lowest level its imports
// allow; that choice is the design decision this table records.
var levels = map[string]int{
	"api/v1":                         lvLeaf, // public wire types, stdlib only
	"agent":                          lvLeaf, // public exchange SDK for native agents: stdlib + api/v1 (see publicOnly)
	"client":                         lvLeaf, // public HTTP client: stdlib + api/v1 (see publicOnly, importableOnlyBy)
	"internal/model":                 lvLeaf, // domain types
	"internal/errs":                  lvLeaf, // sentinel errors shared by every layer
	"internal/metrics":               lvLeaf, // the core's Prometheus instruments (client_golang only); lower layers feed them through func hooks
	"internal/config":                lvLeaf, // paths, env files, API token (imports only model)
	"internal/skill":                 lvLeaf, // embedded agent instructions (data)
	"internal/term":                  lvLeaf, // colour decision (NO_COLOR, --color, terminal) and painting
	"internal/session":               lvLeaf, // browser sessions: the UI issues them, the API guard checks them
	"internal/testproc":              lvLeaf, // test helper: a test of the binary run as a child process (tests only)
	"internal/transport/rigenv":      lvLeaf, // test rig discovery for tests (imports only testing)
	"internal/site":                  lvSite, // sites.yaml catalog, known machine shapes
	"internal/transport":             lvReach,
	"internal/transport/shellquote":  lvReach, // the one quoting helper (dialects use it too)
	"internal/transport/globus":      lvReach,
	"internal/transport/connect":     lvReach, // catalog system -> transport: the one constructor (hpc and campaigns)
	"internal/auth":                  lvReach, // Globus credentials (the globus transport's tokens)
	"internal/globusfake":            lvReach, // wire-format fake of Globus Auth/Compute for tests
	"internal/dialect":               lvReach,
	"internal/dialect/slurm":         lvReach,
	"internal/dialect/pbs":           lvReach,
	"internal/dialect/dialects":      lvReach, // catalog system -> dialect: the one constructor
	"internal/provider":              lvProvider,
	"internal/provider/hpc":          lvProvider,
	"internal/provider/simprov":      lvServices, // the simulator's provider sits with the simulator it drives
	"internal/sim":                   lvServices,
	"internal/federation":            lvServices,
	"internal/scheduler":             lvServices,
	"internal/scheduler/draft":       lvServices,
	"internal/scheduler/llm":         lvServices,
	"internal/scheduler/llm/llmtest": lvServices, // test helper of llm
	"internal/waits":                 lvServices, // per-partition correction of site start estimates (model-level imports only)
	"internal/store":                 lvServices,
	"internal/store/pgtest":          lvLeaf, // test helper: a fresh database on the test PostgreSQL (tests only)
	"internal/exchange":              lvServices,
	"internal/exchange/redistest":    lvLeaf,     // test helper: a private redis-server (tests only)
	"internal/academyfake":           lvServices, // wire-format fake of Academy's hosted exchange (Globus-gated) for tests
	"internal/replay":                lvServices, // scheduler replay over the simulator
	"internal/execution":             lvEngine,
	"internal/campaign":              lvEngine,
	"internal/core":                  lvCore,
	"internal/core/coretest":         lvCore, // test helper: a running core on the simulated federation (tests only)
	"internal/api":                   lvSurface,
	"internal/web":                   lvSurface,
	"internal/mcp":                   lvSurface,
	"internal/server":                lvCmd, // composes the surfaces (API + UI + /mcp over the core) for serve
	"cmd/mosaic":                     lvCmd,
	"test/e2e":                       lvCmd,
	"test/arch":                      lvCmd,
	"scripts/bench/rigplace":         lvCmd, // rig benchmark: drives sbatch and the built binary (stdlib only)
	"scripts/bench/replicaload":      lvCmd, // team-mode load benchmark: three replicas of the built binary (stdlib only)
}

// Surfaces (every package at lvSurface) must not import one another: each calls core,
// and internal/server composes them. A new surface is one line in the table.

// publicOnly: public packages importable from outside the module may import, of the
// module, only these (so a program that imports them pulls nothing internal).
var publicOnly = map[string][]string{
	"api/v1": {}, // the wire types: nothing of ours (TestWireTypesStdlibOnly: nothing outside the stdlib either)
	"client": {"api/v1"},
	"agent":  {"api/v1"},
}

// importableOnlyBy: the HTTP client is for programs talking to a core from outside
// (the CLI, which also hands it to `mosaic mcp` over stdio); the server and its
// surfaces must never call themselves through it. Test-only packages (fakes and rig
// discovery) may be imported by nothing but tests (test imports are not in the graph).
var importableOnlyBy = map[string][]string{
	"client":                         {"cmd/mosaic", "test/e2e"},
	"internal/academyfake":           {},
	"internal/core/coretest":         {},
	"internal/exchange/redistest":    {},
	"internal/globusfake":            {"internal/academyfake"}, // the exchange fake introspects at the auth fake
	"internal/scheduler/llm/llmtest": {},
	"internal/store/pgtest":          {},
	"internal/testproc":              {},
	"internal/transport/rigenv":      {},
}

// pendingPackages are table entries that may name packages not created yet (none).
var pendingPackages = map[string]bool{}

// pendingViolations are edges tolerated while being removed (none: never add an edge
// here to make a new violation pass).
var pendingViolations = map[string]bool{}

// violation is one forbidden import edge and why.
type violation struct {
	From, To, Why string
}

func (v violation) key() string { return v.From + " -> " + v.To }

// rules are the layering rules checkImports enforces.
type rules struct {
	levels           map[string]int
	publicOnly       map[string][]string
	importableOnlyBy map[string][]string
}

// checkImports returns every rule broken by graph (package -> the module packages it
// imports), and the packages the level table does not classify.
func checkImports(graph map[string][]string, r rules) (vs []violation, unclassified []string) {
	isSurface := func(p string) bool { l, ok := r.levels[p]; return ok && l == lvSurface }
	for _, from := range sortedKeys(graph) {
		lf, ok := r.levels[from]
		if !ok {
			unclassified = append(unclassified, from)
			continue
		}
		for _, to := range graph[from] {
			lt, ok := r.levels[to]
			switch {
			case !ok:
				// reported when to itself is walked (it is a package of the module)
			case lt > lf:
				vs = append(vs, violation{from, to, fmt.Sprintf("level %d imports level %d (a package may import only its own level or below)", lf, lt)})
			case isSurface(from) && isSurface(to) && from != to:
				vs = append(vs, violation{from, to, "a surface imports another surface (each calls core; cmd composes them)"})
			}
			if allowed, ok := r.publicOnly[from]; ok && !contains(allowed, to) {
				vs = append(vs, violation{from, to, fmt.Sprintf("public package %s may import, of this module, only %v", from, allowed)})
			}
			if by, ok := r.importableOnlyBy[to]; ok && !contains(by, from) {
				vs = append(vs, violation{from, to, fmt.Sprintf("%s may be imported only by %v", to, by)})
			}
		}
	}
	return dedupe(vs), unclassified
}

func dedupe(vs []violation) []violation {
	seen := map[string]bool{}
	var out []violation
	for _, v := range vs {
		if k := v.key() + v.Why; !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string][]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// moduleGraph lists every package of the module with its non-test imports inside the
// module. Test imports are not checked: tests may drive a package with real parts from
// above it (the agent SDK's tests run the real exchange; web's tests the real API).
func moduleGraph(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, module+"/...")
	cmd.Dir = "../.."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.String())
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		from := rel(f[0])
		graph[from] = nil
		for _, imp := range f[1:] {
			if r := rel(imp); r != imp {
				graph[from] = append(graph[from], r)
			}
		}
	}
	if len(graph) < 20 {
		t.Fatalf("go list found only %d packages: %q", len(graph), out)
	}
	return graph
}

func rel(p string) string {
	if p == module {
		return "."
	}
	if r, ok := strings.CutPrefix(p, module+"/"); ok {
		return r
	}
	return p
}

var layering = rules{levels: levels, publicOnly: publicOnly, importableOnlyBy: importableOnlyBy}

// TestLayering fails when a package of the module imports one above its level, a
// surface imports another surface, a public package imports internal ones, or a
// package is missing from the level table.
func TestLayering(t *testing.T) {
	graph := moduleGraph(t)
	vs, unclassified := checkImports(graph, layering)
	for _, p := range unclassified {
		t.Errorf("package %s is not in the level table of test/arch/layering_test.go: add it at the lowest level its imports allow", p)
	}
	seen := map[string]bool{}
	for _, v := range vs {
		seen[v.key()] = true
		if !pendingViolations[v.key()] {
			t.Errorf("%s: %s", v.key(), v.Why)
		}
	}
	for k, pending := range pendingViolations {
		if pending && !seen[k] {
			t.Errorf("pending violation %q no longer exists: remove it from pendingViolations", k)
		}
	}
	for p := range levels {
		if _, ok := graph[p]; !ok && !pendingPackages[p] {
			t.Errorf("the level table names %s, which is not a package of the module: remove it", p)
		}
	}
}

// TestLayeringChecker proves the checker on a synthetic graph: each rule, when broken,
// is reported, and a clean graph is clean.
func TestLayeringChecker(t *testing.T) {
	r := rules{
		levels: map[string]int{
			"m": lvLeaf, "site": lvSite, "tr": lvReach, "prov": lvProvider, "core": lvCore,
			"api": lvSurface, "mcp": lvSurface, "ui": lvSurface, "client": lvLeaf, "v1": lvLeaf, "cmd": lvCmd, "fake": lvReach,
		},
		publicOnly:       map[string][]string{"client": {"v1"}, "v1": {}},
		importableOnlyBy: map[string][]string{"client": {"cmd"}, "fake": {}},
	}
	clean := map[string][]string{
		"m": nil, "v1": nil, "site": {"m"}, "tr": {"site", "m"}, "prov": {"tr", "m"},
		"core": {"prov"}, "api": {"core", "v1"}, "mcp": {"core", "v1"}, "ui": {"core"}, "client": {"v1"},
		"cmd": {"api", "mcp", "ui", "client"}, "fake": {"tr"},
	}
	if vs, un := checkImports(clean, r); len(vs) != 0 || len(un) != 0 {
		t.Fatalf("clean graph: violations %v, unclassified %v", vs, un)
	}
	for _, tc := range []struct {
		name     string
		from, to string
		want     string
	}{
		{"upward import", "tr", "prov", "imports level"},
		{"leaf imports a layer", "m", "site", "imports level"},
		{"surface imports surface", "api", "mcp", "surface imports another surface"},
		{"public package imports internal", "client", "m", "public package"},
		{"server calls itself over http", "api", "client", "may be imported only by"},
		{"mcp calls the core over http", "mcp", "client", "may be imported only by"},
		{"any surface imports another (no list to keep)", "ui", "api", "surface imports another surface"},
		{"wire types import a domain package", "v1", "m", "public package"},
		{"production code imports a test fake", "core", "fake", "may be imported only by"},
		{"core imports a surface", "core", "api", "imports level"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := map[string][]string{}
			for k, v := range clean {
				g[k] = append([]string(nil), v...)
			}
			g[tc.from] = append(g[tc.from], tc.to)
			vs, _ := checkImports(g, r)
			found := false
			for _, v := range vs {
				if v.From == tc.from && v.To == tc.to && strings.Contains(v.Why, tc.want) {
					found = true
				}
			}
			if !found {
				t.Fatalf("edge %s -> %s not reported as %q; got %v", tc.from, tc.to, tc.want, vs)
			}
		})
	}
	g := map[string][]string{"m": nil, "newpkg": {"m"}}
	if _, un := checkImports(g, r); len(un) != 1 || un[0] != "newpkg" {
		t.Fatalf("unclassified package not reported: %v", un)
	}
}

// TestWireTypesStdlibOnly: the public wire types depend on the standard library alone,
// so any program (and the client) can use them without pulling a module.
func TestWireTypesStdlibOnly(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", `{{if not .Standard}}{{.ImportPath}}{{end}}`, module+"/api/v1")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, p := range strings.Fields(string(out)) {
		if p != module+"/api/v1" {
			t.Errorf("api/v1 depends on %s; the wire types must need only the standard library", p)
		}
	}
}
