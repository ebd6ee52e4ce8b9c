package site

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

func TestExampleFileParses(t *testing.T) {
	c, err := Load(filepath.Join("..", "..", "sites.example.yaml"))
	if err != nil {
		t.Fatalf("sites.example.yaml does not load:\n%v", err)
	}
	kinds := map[string]bool{}
	dialects := map[string]bool{}
	for _, s := range c.Systems {
		kinds[s.Kind] = true
		dialects[s.Dialect] = true
	}
	for _, k := range []string{KindSim, KindSSH, KindLocal, KindGlobus} {
		if !kinds[k] {
			t.Errorf("example has no %s system", k)
		}
	}
	if !dialects[DialectPBS] || !dialects[DialectSlurm] {
		t.Errorf("example dialects = %v, want slurm and pbs", dialects)
	}
	// The ssh Delta entry: machine shape with overrides.
	d, ok := c.System("delta")
	if !ok {
		t.Fatal("no delta system in example")
	}
	if d.Kind != KindSSH || d.Host != "delta" || d.Arch != ArchX86_64 || d.Line == 0 {
		t.Errorf("delta = kind %q host %q arch %q line %d", d.Kind, d.Host, d.Arch, d.Line)
	}
	if len(d.Partitions) != 2 {
		t.Fatalf("delta partitions = %d, want the 2 listed", len(d.Partitions))
	}
	g, _ := d.PartitionByName("gpuA100x4")
	if g == nil || g.MaxWalltime.D() != 24*time.Hour || g.GPUs != 4 || g.GPUModel != "A100" || g.Nodes != 100 {
		t.Errorf("gpuA100x4 override = %+v", g)
	}
	// Example uses TODO placeholders: warnings, not errors.
	if len(c.Warnings) == 0 {
		t.Error("example's TODO accounts gave no warnings")
	}
	// Every field of every struct appears somewhere in the example.
	text, err := os.ReadFile(filepath.Join("..", "..", "sites.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, typ := range []any{Catalog{}, SimGlobal{}, System{}, SSH{}, UserIdentity{}, Partition{}, SimSystem{}, SimLoad{}, Faults{}, Window{}, NodeFailure{}} {
		for _, key := range infoForValue(typ).keys {
			if !strings.Contains(string(text), key+":") {
				t.Errorf("sites.example.yaml does not document field %q of %T", key, typ)
			}
		}
	}
	// Local system partition spelled aliases that were normalised.
	w, _ := c.System("workstation")
	if p := w.Partitions[0]; p.GPUModel != "RTXA6000" || p.Arch != ArchX86_64 {
		t.Errorf("workstation partition not normalised: %q %q", p.GPUModel, p.Arch)
	}
	// Relative trace paths are resolved against the file (empty stays empty).
	a, _ := c.System("Anvil-sim")
	if a.SimConfig == nil || a.SimConfig.Load.Utilization != 0.9 || a.SimConfig.Faults.JobFailureProb != 0.01 {
		t.Errorf("anvil sim config = %+v", a.SimConfig)
	}
}

func TestLoadResolvesTracePath(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sites.yaml")
	in := "systems:\n  - {name: s, kind: sim, machine: frontera, accounts: [x], sim: {load: {trace: traces/a.swf}}}\n"
	if err := os.WriteFile(p, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Systems[0].SimConfig.Load.Trace; got != filepath.Join(dir, "traces", "a.swf") {
		t.Errorf("trace = %q", got)
	}
	if c.Path != p {
		t.Errorf("Path = %q", c.Path)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "sites.example.yaml") {
		t.Errorf("missing file error = %v", err)
	}
}

// TestLoadResolvesSSHFilesAgainstCatalog: a catalog's relative ssh config_file and
// identity_file are the catalog's own files, never files of the working directory
// (which could hold a stranger's ssh config with a ProxyCommand).
func TestLoadResolvesSSHFilesAgainstCatalog(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sites.yaml")
	in := `systems:
  - name: a
    kind: ssh
    host: a.example
    ssh: {config_file: ssh_config, identity_file: keys/id}
    partitions: [{name: cpu, nodes: 1, cpu_cores: 1, memory_gb: 1}]
  - name: b
    kind: ssh
    host: b.example
    ssh: {config_file: none, identity_file: ~/.ssh/id_ed25519}
    partitions: [{name: cpu, nodes: 1, cpu_cores: 1, memory_gb: 1}]
  - name: c
    kind: ssh
    host: c.example
    ssh: {config_file: /etc/ssh/alt_config}
    partitions: [{name: cpu, nodes: 1, cpu_cores: 1, memory_gb: 1}]
`
	if err := os.WriteFile(p, []byte(in), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // the working directory must not matter
	c, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]string{
		{filepath.Join(dir, "ssh_config"), filepath.Join(dir, "keys", "id")},
		{"none", "~/.ssh/id_ed25519"},
		{"/etc/ssh/alt_config", ""},
	}
	for i, w := range want {
		s := c.Systems[i].SSH
		if s.ConfigFile != w[0] || s.IdentityFile != w[1] {
			t.Errorf("%s: config_file %q identity_file %q, want %q %q", c.Systems[i].Name, s.ConfigFile, s.IdentityFile, w[0], w[1])
		}
	}
}

func TestDefaultCatalog(t *testing.T) {
	c := Default()
	if c.Path != "" {
		t.Errorf("Path = %q, want empty", c.Path)
	}
	if len(c.Warnings) != 0 {
		t.Errorf("default catalog warnings: %q", c.Warnings)
	}
	want := map[string][]string{
		"Delta@NCSA":     {"gpuA100x4", "gpuA100x8", "gpuA40x4", "gpuMI100x8", "cpu"},
		"DeltaAI@NCSA":   {"ghx4"},
		"Anvil@RCAC":     {"gpu", "ai", "shared", "wholenode"},
		"Vista@TACC":     {"gh", "gg"},
		"Frontera@TACC":  {"rtx", "normal", "small"},
		"Lonestar6@TACC": {"gpu-a100", "gpu-h100", "normal"},
	}
	if len(c.Systems) != len(want) {
		t.Errorf("default has %d systems, want %d", len(c.Systems), len(want))
	}
	utils := map[float64]bool{}
	faulty := 0
	for name, parts := range want {
		s, ok := c.System(name)
		if !ok {
			t.Errorf("default lacks %s", name)
			continue
		}
		if s.Kind != KindSim || s.SimConfig == nil {
			t.Errorf("%s: kind %q sim %v", name, s.Kind, s.SimConfig)
			continue
		}
		u := s.SimConfig.Load.Utilization
		if u < 0.6 || u > 1.1 {
			t.Errorf("%s: utilization %v outside [0.6,1.1]", name, u)
		}
		utils[u] = true
		f := s.SimConfig.Faults
		if f.JobFailureProb > 0 || len(f.NodeFailures) > 0 || len(f.Outages) > 0 {
			faulty++
			if f.JobFailureProb > 0.05 || len(f.Outages) > 0 {
				t.Errorf("%s: fault example too harsh for a demo: %+v", name, f)
			}
		}
		for _, pn := range parts {
			p, ok := s.PartitionByName(pn)
			if !ok {
				t.Errorf("%s lacks partition %s", name, pn)
				continue
			}
			if len(s.AccountsFor(pn)) == 0 {
				t.Errorf("%s/%s has no account", name, pn)
			}
			if p.Nodes < 1 || p.CPUCores < 1 || p.MemoryGB < 1 {
				t.Errorf("%s/%s shape not expanded: %+v", name, pn, p)
			}
		}
	}
	if len(utils) != len(want) {
		t.Errorf("systems share utilizations %v; want each different", utils)
	}
	if faulty != 1 {
		t.Errorf("%d systems have faults, want exactly 1 mild example", faulty)
	}
	// Delta charges CPU and GPU partitions to different accounts.
	d, _ := c.System("delta")
	if got := d.AccountsFor("cpu"); !slices.Equal(got, []string{"demo-delta-cpu"}) {
		t.Errorf("delta cpu accounts = %v", got)
	}
	if got := d.AccountsFor("gpuA40x4"); !slices.Equal(got, []string{"demo-delta-gpu"}) {
		t.Errorf("delta gpu accounts = %v", got)
	}
	// Fresh copies: mutating one does not affect the next.
	c.Systems[0].Partitions[0].Nodes = -5
	if Default().Systems[0].Partitions[0].Nodes == -5 {
		t.Error("Default returns shared state")
	}
	// The default re-validates as built.
	if _, err := Validate(c.Clone()); err == nil {
		t.Error("Validate accepted a negative node count") // we broke it above
	}
	if _, err := Validate(Default()); err != nil {
		t.Errorf("Default does not re-validate: %v", err)
	}
	if string(DefaultYAML()) == "" {
		t.Error("DefaultYAML empty")
	}
}

func TestMachineMergeRules(t *testing.T) {
	in := `systems:
  - kind: ssh
    machine: Vista
    user: me
    partitions:
      - name: gh
        max_walltime: 12h
        exclusive: false
      - {name: custom, nodes: 2, cpu_cores: 8, memory_gb: 16}
  - name: Frontera-mine
    kind: ssh
    machine: frontera
    host: my-frontera-alias
    arch: amd64
`
	c, err := Parse("m.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	v := &c.Systems[0]
	if v.Name != "Vista@TACC" || v.Host != "vista.tacc.utexas.edu" || v.User != "me" || v.Machine != "vista" || v.Line != 2 {
		t.Errorf("vista = %+v", v)
	}
	if len(v.Partitions) != 2 {
		t.Fatalf("vista partitions = %d, want exactly the 2 listed", len(v.Partitions))
	}
	gh := v.Partitions[0]
	if gh.MaxWalltime != model.Duration(12*time.Hour) || gh.Exclusive || gh.GPUModel != "H100" || gh.Nodes != 600 || gh.Line != 6 {
		t.Errorf("gh merged = %+v", gh)
	}
	if cu := v.Partitions[1]; cu.Nodes != 2 || cu.Exclusive || cu.Line != 9 {
		t.Errorf("custom = %+v", cu)
	}
	f := &c.Systems[1]
	known, _ := Known("frontera")
	if f.Name != "Frontera-mine" || f.Host != "my-frontera-alias" || f.Arch != ArchX86_64 || len(f.Partitions) != len(known.Partitions) {
		t.Errorf("frontera = %+v", f)
	}
	// Lookup by the changed name, by machine and by prefix.
	for _, q := range []string{"frontera-MINE", "frontera", "vista", "VISTA@tacc"} {
		if _, ok := c.System(q); !ok {
			t.Errorf("System(%q) not found", q)
		}
	}
	if _, ok := c.System("delta"); ok {
		t.Error("System(delta) found in a catalog without delta")
	}
}

func TestSystemLookupAmbiguous(t *testing.T) {
	c := Default()
	c.Systems = append(c.Systems, c.Systems[0])
	c.Systems[len(c.Systems)-1].Name = "Delta-second"
	if _, ok := c.System("delta"); ok {
		t.Error("ambiguous machine name resolved")
	}
	if s, ok := c.System("delta-second"); !ok || s.Name != "Delta-second" {
		t.Error("exact name lookup failed")
	}
	var nilc *Catalog
	if _, ok := nilc.System("x"); ok {
		t.Error("nil catalog lookup")
	}
}

func TestAccountsFor(t *testing.T) {
	s := System{Accounts: []string{"sys"}, Partitions: []Partition{{Name: "a", Accounts: []string{"pa"}}, {Name: "b"}}}
	if got := s.AccountsFor("a"); !slices.Equal(got, []string{"pa"}) {
		t.Errorf("a = %v", got)
	}
	if got := s.AccountsFor("b"); !slices.Equal(got, []string{"sys"}) {
		t.Errorf("b = %v", got)
	}
	if got := s.AccountsFor("nope"); !slices.Equal(got, []string{"sys"}) {
		t.Errorf("nope = %v", got)
	}
	got := s.AccountsFor("a")
	got[0] = "changed"
	if s.Partitions[0].Accounts[0] != "pa" {
		t.Error("AccountsFor returned shared slice")
	}
}

func TestMergeKeysAndAliases(t *testing.T) {
	in := `shape: &node {nodes: 4, cpu_cores: 32, memory_gb: 128}
systems:
  - name: a
    kind: local
    partitions:
      - <<: *node
        name: p
      - <<: *node
        name: q
        nodes: 2
`
	_, err := Parse("k.yaml", []byte(in))
	if err == nil || !strings.Contains(err.Error(), "k.yaml:1: shape: unknown field") {
		t.Fatalf("want unknown top-level field error, got %v", err)
	}
	in = strings.Replace(in, "shape: &node {nodes: 4, cpu_cores: 32, memory_gb: 128}\nsystems:\n  - name: a",
		"systems:\n  - name: a\n    features: [&node {nodes: 4, cpu_cores: 32, memory_gb: 128}]", 1)
	// A mapping in features is a type error, reported at its line.
	if _, err := Parse("k.yaml", []byte(in)); err == nil || !strings.Contains(err.Error(), "k.yaml:3: systems[0].features[0]: want a single value") {
		t.Fatalf("got %v", err)
	}
	in = `systems:
  - name: a
    kind: local
    partitions:
      - &p {name: p, nodes: 4, cpu_cores: 32, memory_gb: 128}
      - <<: *p
        name: q
        nodes: 2
`
	c, err := Parse("k.yaml", []byte(in))
	if err != nil {
		t.Fatal(err)
	}
	q := c.Systems[0].Partitions[1]
	if q.Name != "q" || q.Nodes != 2 || q.CPUCores != 32 || q.MemoryGB != 128 {
		t.Errorf("merged partition = %+v", q)
	}
}

func TestAliasBombIsBounded(t *testing.T) {
	// Aliases nest across systems → partitions → accounts: 200 × 200 × 200 nodes if
	// followed naively, from a file of a few kilobytes.
	var b strings.Builder
	b.WriteString("systems:\n  - &s\n    name: a\n    kind: local\n    partitions:\n      - &p\n        name: p\n        nodes: 1\n        cpu_cores: 1\n        memory_gb: 1\n        accounts: &acc [")
	for i := range 200 {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("x")
	}
	b.WriteString("]\n")
	for range 199 {
		b.WriteString("      - *p\n")
	}
	for range 199 {
		b.WriteString("  - *s\n")
	}
	_, err := Parse("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "document too large") {
		t.Fatalf("alias bomb: got %v", err)
	}
}
