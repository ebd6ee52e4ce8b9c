package site

import (
	"slices"
	"testing"
)

func TestCanonicalGPUModel(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"A100", "A100", true},
		{"a100", "A100", true},
		{"NVIDIA A100-SXM4-40GB", "A100", true},
		{"nvidia a100 80gb pcie", "A100", true},
		{"Tesla V100-PCIE-32GB", "V100", true},
		{"a40", "A40", true},
		{"A10", "A10", true},
		{"H100 PCIe", "H100", true},
		{"h100-sxm5", "H100", true},
		{"NVIDIA H200 NVL", "H200", true},
		{"gh200", "GH200", true},
		{"GH200", "GH200", true},
		{"Quadro RTX 5000", "RTX5000", true},
		{"rtx5000", "RTX5000", true},
		{"RTX 6000", "RTX6000", true},
		{"RTX A6000", "RTXA6000", true},
		{"A6000", "RTXA6000", true},
		{"l40s", "L40S", true},
		{"T4", "T4", true},
		{"p100", "P100", true},
		{"AMD Instinct MI250X", "MI250X", true},
		{"mi250x", "MI250X", true},
		{"MI100", "MI100", true},
		{"mi300x", "MI300X", true},
		{"  b200 ", "B200", true},
		{"Z9000", "Z9000", false},
		{"", "", false},
		{"NVIDIA", "NVIDIA", false},
		{"GB", "GB", false},
	}
	for _, c := range cases {
		got, ok := CanonicalGPUModel(c.in)
		if got != c.want || ok != c.ok {
			t.Errorf("CanonicalGPUModel(%q) = %q, %v; want %q, %v", c.in, got, ok, c.want, c.ok)
		}
	}
	// Every canonical name maps to itself, and the required ones are listed.
	models := KnownGPUModels()
	for _, m := range models {
		if got, ok := CanonicalGPUModel(m); !ok || got != m {
			t.Errorf("canonical %q maps to %q, %v", m, got, ok)
		}
	}
	for _, m := range []string{"A100", "A40", "H100", "H200", "MI100", "MI250X", "V100", "L40S", "RTX5000", "A10", "T4", "P100", "RTX6000"} {
		if !slices.Contains(models, m) {
			t.Errorf("KnownGPUModels lacks %s", m)
		}
	}
	models[0] = "changed"
	if KnownGPUModels()[0] == "changed" {
		t.Error("KnownGPUModels returns shared slice")
	}
}

func TestCanonicalArch(t *testing.T) {
	cases := map[string]string{"x86_64": ArchX86_64, "AMD64": ArchX86_64, "x86-64": ArchX86_64, "arm64": ArchAarch64, "aarch64": ArchAarch64}
	for in, want := range cases {
		if got, ok := CanonicalArch(in); !ok || got != want {
			t.Errorf("CanonicalArch(%q) = %q, %v", in, got, ok)
		}
	}
	for _, bad := range []string{"", "sparc", "ppc64le", "riscv64"} {
		if _, ok := CanonicalArch(bad); ok {
			t.Errorf("CanonicalArch(%q) accepted", bad)
		}
	}
}
