package model

import (
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestParseGPUModel(t *testing.T) {
	cases := []struct {
		in, want string // want "" = refused
	}{
		{"A100", "A100"}, {"a100", "A100"}, {"A100-40", "A100-40GB"}, {"A100-80", "A100-80GB"},
		{"a100 80gb", "A100-80GB"}, {"A100-SXM4-80GB", "A100-80GB"}, {"NVIDIA A100-SXM4-40GB", "A100-40GB"},
		{"nvidia a100 80gb pcie", "A100-80GB"}, {"A100 80 GB", "A100-80GB"}, {"A100s", "A100"},
		{"H100", "H100"}, {"H100 PCIe", "H100"}, {"h100-sxm5", "H100"}, {"H100 NVL", "H100"}, {"H100-SXM5-80GB", "H100-80GB"},
		{"NVIDIA H200 NVL", "H200"}, {"H200 141GB", "H200"},
		{"GH200", "GH200"}, {"gh200", "GH200"}, {"Grace Hopper", "GH200"}, {"NVIDIA Grace Hopper Superchip", "GH200"},
		{"GH200 144GB", "GH200-144GB"}, {"gh200-96", "GH200-96GB"},
		{"A40", "A40"}, {"a40 48gb", "A40"}, {"L40S", "L40S"}, {"l40", "L40"}, {"V100", "V100"}, {"Tesla V100-PCIE-32GB", "V100-32GB"},
		{"MI250X", "MI250X"}, {"AMD Instinct MI250X", "MI250X"}, {"mi250", "MI250"}, {"MI300A", "MI300A"}, {"mi300x", "MI300X"},
		{"  b200 ", "B200"}, {"B200 SXM", "B200"}, {"Quadro RTX 5000", "RTX5000"}, {"RTX A6000", "RTXA6000"}, {"A6000", "RTXA6000"},
		{"Ponte Vecchio", "MAX1550"}, {"H100s", "H100"}, {"4xA100", ""},
		// refused
		{"Z9000", ""}, {"", ""}, {"   ", ""}, {"NVIDIA", ""}, {"GB", ""}, {"A100-50", ""}, {"A100 50GB", ""}, {"A40 80GB", ""},
		{"H100 banana", ""}, {"A100;rm -rf", ""}, {strings.Repeat("A100", 20), ""}, {"A1000", ""}, {"H", ""}, {"100", ""},
		{"A100\x00", ""}, {"MI250XX", ""},
	}
	for _, c := range cases {
		got, err := ParseGPUModel(c.in)
		switch {
		case c.want == "" && err == nil:
			t.Errorf("ParseGPUModel(%q) = %v, want an error", c.in, got)
		case c.want != "" && err != nil:
			t.Errorf("ParseGPUModel(%q): %v, want %s", c.in, err, c.want)
		case c.want != "" && got.String() != c.want:
			t.Errorf("ParseGPUModel(%q) = %s, want %s", c.in, got, c.want)
		}
	}
	// The refusal names the known models, so the user can pick one.
	_, err := ParseGPUModel("B300")
	if err == nil || !strings.Contains(err.Error(), "GH200") || !strings.Contains(err.Error(), "MI250X") {
		t.Errorf("unknown-model error does not list the known models: %v", err)
	}
	_, err = ParseGPUModel("A100-50GB")
	if err == nil || !strings.Contains(err.Error(), "40 or 80 GB") {
		t.Errorf("wrong-memory error does not give the sizes: %v", err)
	}
	// Every catalogue name and alias maps to its entry.
	for _, g := range GPUCatalogue() {
		for _, n := range append([]string{g.Name}, g.Aliases...) {
			if got, err := ParseGPUModel(n); err != nil || got.Model != g.Name {
				t.Errorf("catalogue %s: %q parses as %v, %v", g.Name, n, got, err)
			}
		}
		if len(g.MemoryGB) == 0 || g.Vendor == "" {
			t.Errorf("catalogue %s lacks memory sizes or vendor", g.Name)
		}
	}
}

func TestGPUMatches(t *testing.T) {
	cases := []struct {
		want, rec string
		mem       int
		arch      string
		ok        bool
	}{
		{"GH200", "H100", 96, ArchAarch64, true},  // DeltaAI / Vista report the GH200's GPU as H100
		{"GH200", "GH200", 96, ArchAarch64, true}, // a site that says GH200
		{"GH200", "H100", 80, ArchX86_64, false},  // an x86 H100 partition is not a Grace Hopper
		{"GH200", "H100", 96, "", false},          // unknown host: not confirmed
		{"GH200-144GB", "GH200", 96, ArchAarch64, false},
		{"GH200-144GB", "GH200", 144, ArchAarch64, true},
		{"H100", "H100", 80, ArchX86_64, true},
		{"H100", "GH200", 96, ArchAarch64, true}, // a GH200's GPU is an H100
		{"H100", "H200", 141, ArchX86_64, false},
		{"A100", "A100", 40, ArchX86_64, true},
		{"A100", "A100", 80, ArchX86_64, true},
		{"A100-80GB", "A100", 40, ArchX86_64, false},
		{"A100-80GB", "A100", 80, ArchX86_64, true},
		{"A100-40GB", "A100", 40, ArchX86_64, true},
		{"A100-40GB", "A100", 0, ArchX86_64, false}, // memory unknown: not confirmed
		{"A100", "A40", 48, ArchX86_64, false},
		{"MI250X", "MI250X", 128, ArchX86_64, true},
		{"MI250X", "MI250", 128, ArchX86_64, false},
		{"MI300A", "MI300A", 128, ArchX86_64, true},
		{"B200", "GB200", 186, ArchAarch64, true},
		{"GB200", "B200", 180, ArchX86_64, false},
		{"A100", "", 0, ArchX86_64, false},
	}
	for _, c := range cases {
		if got := GPUMatches(c.want, c.rec, c.mem, c.arch); got != c.ok {
			t.Errorf("GPUMatches(%q, %q, %d, %q) = %v, want %v", c.want, c.rec, c.mem, c.arch, got, c.ok)
		}
	}
	if ImpliedHostArch([]string{"GH200"}) != ArchAarch64 || ImpliedHostArch([]string{"GH200", "A100"}) != "" ||
		ImpliedHostArch([]string{"MI300A"}) != ArchX86_64 || ImpliedHostArch(nil) != "" {
		t.Error("ImpliedHostArch")
	}
	for m, plain := range map[string]bool{"A100": true, "A100-80GB": false, "GH200": false, "H100": false, "MI250X": true} {
		if GPUSpecIsPlain(m) != plain {
			t.Errorf("GPUSpecIsPlain(%q) != %v", m, plain)
		}
	}
}

// TestValidateGPUModels: CLI, API and MCP all validate envelopes here; an unknown model
// is refused with the known list, and a superchip's host contradicting arch is refused.
func TestValidateGPUModels(t *testing.T) {
	base := func() Envelope {
		return Envelope{GPUs: IntRange{Min: 1}, Walltime: DurationRange{Min: Duration(3600e9)}}
	}
	e := base()
	e.Constraints.GPUModels = []string{"B300"}
	if err := e.Validate(); err == nil || !strings.Contains(err.Error(), "known models: A100") {
		t.Errorf("unknown model: %v", err)
	}
	e = base()
	e.Constraints.GPUModels = []string{"GH200"}
	e.Constraints.Arch = []string{"x86_64"}
	if err := e.Validate(); err == nil || !strings.Contains(err.Error(), "aarch64 host") {
		t.Errorf("GH200 on x86_64: %v", err)
	}
	e.Constraints.Arch = []string{"arm64"}
	if err := e.Validate(); err != nil {
		t.Errorf("GH200 on arm64: %v", err)
	}
	e = base()
	e.Constraints.GPUModels = []string{"a100 80gb", "Grace Hopper"}
	if err := e.Validate(); err != nil {
		t.Fatal(err)
	}
	e.Normalize()
	if strings.Join(e.Constraints.GPUModels, ",") != "A100-80GB,GH200" {
		t.Errorf("normalized models: %v", e.Constraints.GPUModels)
	}
}

func FuzzParseGPUModel(f *testing.F) {
	for _, s := range []string{"A100", "a100 80gb", "NVIDIA A100-SXM4-40GB", "Grace Hopper", "GH200-144", "A100-50", "", "MI250X", "4xA100", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGPUModel(s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if _, ok := LookupGPUModel(g.Model); !ok {
			t.Fatalf("%q parsed to %v, not in the catalogue", s, g)
		}
		// The canonical spelling parses to itself.
		again, err := ParseGPUModel(g.String())
		if err != nil || again != g {
			t.Fatalf("%q → %s → %v, %v", s, g, again, err)
		}
		info, _ := LookupGPUModel(g.Model)
		if !utf8.ValidString(g.String()) || !GPUMatches(g.String(), g.Model, memOr(g), info.HostArch) {
			t.Fatalf("%s does not match its own model", g)
		}
	})
}

func memOr(g GPUSpec) int {
	if g.MemoryGB > 0 {
		return g.MemoryGB
	}
	info, _ := LookupGPUModel(g.Model)
	return info.MemoryGB[0]
}

// TestGPUCatalogueDocumented: docs/ENVELOPES.md's table has a row for every model of
// the catalogue, so the documentation cannot fall behind it.
func TestGPUCatalogueDocumented(t *testing.T) {
	b, err := os.ReadFile("../../docs/ENVELOPES.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range GPUCatalogue() {
		if !strings.Contains(string(b), "\n| "+g.Name+" | "+g.Vendor+" | ") {
			t.Errorf("docs/ENVELOPES.md has no row for %s", g.Name)
		}
	}
}
