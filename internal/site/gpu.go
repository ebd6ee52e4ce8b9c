package site

import (
	"regexp"
	"slices"
	"strings"
)

// Architectures.
const (
	ArchX86_64  = "x86_64"
	ArchAarch64 = "aarch64"
)

// knownGPUs are canonical GPU model names: the spelling the catalog, resource records
// and job requests share. Canonical form is upper case without vendor words or spaces.
var knownGPUs = []string{
	// NVIDIA data-centre
	"A100", "A40", "A30", "A10", "A2", "H100", "H200", "GH200", "B200", "GB200",
	"L40S", "L40", "L4", "T4", "V100", "P100", "K80",
	// NVIDIA workstation (Quadro / RTX)
	"RTX5000", "RTX6000", "RTX8000", "RTXA5000", "RTXA6000", "RTX2080TI", "RTX3090", "RTX4090",
	// AMD Instinct
	"MI50", "MI100", "MI210", "MI250", "MI250X", "MI300A", "MI300X",
	// Intel
	"MAX1550",
}

// gpuAliases maps squashed spellings that are not simply the canonical name.
var gpuAliases = map[string]string{
	"A6000":                "RTXA6000",
	"A5000":                "RTXA5000",
	"QUADRORTX5000":        "RTX5000",
	"GEFORCERTX2080TI":     "RTX2080TI",
	"PVC":                  "MAX1550",
	"PONTEVECCHIO":         "MAX1550",
	"DATACENTERGPUMAX1550": "MAX1550",
}

// vendorWords are dropped from the front of a model name before matching.
var vendorWords = []string{"NVIDIA", "AMD", "INTEL", "TESLA", "QUADRO", "INSTINCT", "GEFORCE", "RADEON"}

// variantRest matches what may follow a model name: form factor and memory size, as in
// "A100-SXM4-80GB" or "H100 PCIe" (after squashing).
var variantRest = regexp.MustCompile(`^(PCIE|SXM[2-5]?|NVL|HBM[23]E?|\d+GB?)*$`)

// KnownGPUModels lists the canonical GPU model names CanonicalGPUModel recognises.
func KnownGPUModels() []string { return slices.Clone(knownGPUs) }

// CanonicalGPUModel maps a GPU model as people write it ("a100", "NVIDIA A100-SXM4-40GB",
// "Quadro RTX 5000", "MI250x") to its canonical name ("A100", "RTX5000", "MI250X").
// GH200 stays GH200: the catalog's word is kept, only its spelling is normalised. For an
// unknown model it returns the trimmed input and false.
func CanonicalGPUModel(s string) (string, bool) {
	trimmed := strings.TrimSpace(s)
	if trimmed == "" || len(trimmed) > 64 {
		return trimmed, false
	}
	sq := squash(trimmed)
	for range 4 { // drop leading vendor words, bounded
		stripped := false
		for _, w := range vendorWords {
			if strings.HasPrefix(sq, w) && len(sq) > len(w) {
				sq = sq[len(w):]
				stripped = true
			}
		}
		if !stripped {
			break
		}
	}
	// The longest known name (or alias) that prefixes the input, followed only by
	// variant words, wins: "A10080GBPCIE" is an A100, not an A10.
	best, bestLen := "", 0
	try := func(name, canon string) {
		if len(name) > bestLen && strings.HasPrefix(sq, name) && variantRest.MatchString(sq[len(name):]) {
			best, bestLen = canon, len(name)
		}
	}
	for _, m := range knownGPUs {
		try(m, m)
	}
	for alias, m := range gpuAliases {
		try(alias, m)
	}
	if best != "" {
		return best, true
	}
	return trimmed, false
}

// squash upper-cases and removes spaces, dashes, underscores and dots.
func squash(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch r {
		case ' ', '-', '_', '.', '\t':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// CanonicalArch maps an architecture name and its aliases (amd64, x86-64, x64, arm64)
// to x86_64 or aarch64. It returns the input and false when unrecognised.
func CanonicalArch(s string) (string, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "x86_64", "x86-64", "amd64", "x64":
		return ArchX86_64, true
	case "aarch64", "arm64", "armv8", "arm":
		return ArchAarch64, true
	}
	return s, false
}
