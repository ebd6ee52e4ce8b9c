package model

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// GPUModelInfo is one entry of the GPU model catalogue: the canonical name, the other
// spellings people and sites use, and what the name implies.
type GPUModelInfo struct {
	Name    string   `json:"name"`              // canonical: upper case, no vendor word, no spaces
	Vendor  string   `json:"vendor"`            // NVIDIA, AMD, Intel
	Aliases []string `json:"aliases,omitempty"` // other spellings, compared squashed (see squashGPU)
	// MemoryGB lists the per-GPU memory sizes the model is sold with. When there is more
	// than one, a name may pick one ("A100-80GB"); a request for the plain name takes any.
	MemoryGB []int `json:"memory_gb,omitempty"`
	// Class is the GPU a superchip or board is built on, when sites may report that
	// instead: a GH200's GPU is an H100-class Hopper, and sites list it as H100.
	Class string `json:"class,omitempty"`
	// HostArch is the CPU architecture the model implies: GH200 is a Grace (aarch64)
	// superchip, MI300A an APU with x86 cores. Empty: any host.
	HostArch string `json:"host_arch,omitempty"`
	ISA      string `json:"isa,omitempty"` // CUDA compute capability or AMD gfx target
}

// gpuCatalogue is the GPU model catalogue. Memory sizes are the vendors' published
// per-GPU HBM/GDDR sizes; an H100 also appears as 96 GB, the GPU of a GH200 that sites
// report as H100 (docs/PLACEMENT.md "GPU models").
var gpuCatalogue = []GPUModelInfo{
	// NVIDIA data-centre
	{Name: "A100", Vendor: "NVIDIA", MemoryGB: []int{40, 80}, ISA: "sm_80", Aliases: []string{"A100X"}},
	{Name: "A40", Vendor: "NVIDIA", MemoryGB: []int{48}, ISA: "sm_86"},
	{Name: "A30", Vendor: "NVIDIA", MemoryGB: []int{24}, ISA: "sm_80"},
	{Name: "A10", Vendor: "NVIDIA", MemoryGB: []int{24}, ISA: "sm_86"},
	{Name: "A2", Vendor: "NVIDIA", MemoryGB: []int{16}, ISA: "sm_86"},
	{Name: "H100", Vendor: "NVIDIA", MemoryGB: []int{80, 94, 96}, ISA: "sm_90", Aliases: []string{"HOPPER"}},
	{Name: "H200", Vendor: "NVIDIA", MemoryGB: []int{141}, ISA: "sm_90"},
	{Name: "GH200", Vendor: "NVIDIA", MemoryGB: []int{96, 144}, Class: "H100", HostArch: ArchAarch64, ISA: "sm_90",
		Aliases: []string{"GRACEHOPPER", "GRACEHOPPERSUPERCHIP"}},
	{Name: "B200", Vendor: "NVIDIA", MemoryGB: []int{180, 192}, ISA: "sm_100"},
	{Name: "GB200", Vendor: "NVIDIA", MemoryGB: []int{186, 192}, Class: "B200", HostArch: ArchAarch64, ISA: "sm_100",
		Aliases: []string{"GRACEBLACKWELL"}},
	{Name: "L40S", Vendor: "NVIDIA", MemoryGB: []int{48}, ISA: "sm_89"},
	{Name: "L40", Vendor: "NVIDIA", MemoryGB: []int{48}, ISA: "sm_89"},
	{Name: "L4", Vendor: "NVIDIA", MemoryGB: []int{24}, ISA: "sm_89"},
	{Name: "T4", Vendor: "NVIDIA", MemoryGB: []int{16}, ISA: "sm_75"},
	{Name: "V100", Vendor: "NVIDIA", MemoryGB: []int{16, 32}, ISA: "sm_70", Aliases: []string{"V100S"}},
	{Name: "P100", Vendor: "NVIDIA", MemoryGB: []int{12, 16}, ISA: "sm_60"},
	{Name: "K80", Vendor: "NVIDIA", MemoryGB: []int{12, 24}, ISA: "sm_37"},
	// NVIDIA workstation (Quadro / RTX)
	{Name: "RTX5000", Vendor: "NVIDIA", MemoryGB: []int{16}, ISA: "sm_75", Aliases: []string{"RTX5K"}},
	{Name: "RTX6000", Vendor: "NVIDIA", MemoryGB: []int{24}, ISA: "sm_75"},
	{Name: "RTX8000", Vendor: "NVIDIA", MemoryGB: []int{48}, ISA: "sm_75"},
	{Name: "RTXA5000", Vendor: "NVIDIA", MemoryGB: []int{24}, ISA: "sm_86", Aliases: []string{"A5000"}},
	{Name: "RTXA6000", Vendor: "NVIDIA", MemoryGB: []int{48}, ISA: "sm_86", Aliases: []string{"A6000"}},
	{Name: "RTX2080TI", Vendor: "NVIDIA", MemoryGB: []int{11}, ISA: "sm_75"},
	{Name: "RTX3090", Vendor: "NVIDIA", MemoryGB: []int{24}, ISA: "sm_86"},
	{Name: "RTX4090", Vendor: "NVIDIA", MemoryGB: []int{24}, ISA: "sm_89"},
	// AMD Instinct
	{Name: "MI50", Vendor: "AMD", MemoryGB: []int{16, 32}, ISA: "gfx906"},
	{Name: "MI100", Vendor: "AMD", MemoryGB: []int{32}, ISA: "gfx908"},
	{Name: "MI210", Vendor: "AMD", MemoryGB: []int{64}, ISA: "gfx90a"},
	{Name: "MI250", Vendor: "AMD", MemoryGB: []int{128}, ISA: "gfx90a"},
	{Name: "MI250X", Vendor: "AMD", MemoryGB: []int{128}, ISA: "gfx90a"},
	{Name: "MI300A", Vendor: "AMD", MemoryGB: []int{128}, HostArch: ArchX86_64, ISA: "gfx942"},
	{Name: "MI300X", Vendor: "AMD", MemoryGB: []int{192}, ISA: "gfx942"},
	// Intel
	{Name: "MAX1550", Vendor: "Intel", MemoryGB: []int{128}, ISA: "pvc",
		Aliases: []string{"PVC", "PONTEVECCHIO", "DATACENTERGPUMAX1550", "GPUMAX1550"}},
}

// Architectures.
const (
	ArchX86_64  = "x86_64"
	ArchAarch64 = "aarch64"
)

// KnownGPUModels lists the canonical GPU model names Mosaic understands, in the form
// ResourceRecord.GPUModel uses (the catalogue's names, in its order).
var KnownGPUModels = func() []string {
	out := make([]string, len(gpuCatalogue))
	for i, g := range gpuCatalogue {
		out[i] = g.Name
	}
	return out
}()

// GPUCatalogue returns a copy of the GPU model catalogue.
func GPUCatalogue() []GPUModelInfo {
	out := make([]GPUModelInfo, len(gpuCatalogue))
	for i, g := range gpuCatalogue {
		g.Aliases, g.MemoryGB = slices.Clone(g.Aliases), slices.Clone(g.MemoryGB)
		out[i] = g
	}
	return out
}

// LookupGPUModel returns the catalogue entry of canonical name m (case-insensitive).
func LookupGPUModel(m string) (GPUModelInfo, bool) {
	for _, g := range gpuCatalogue {
		if strings.EqualFold(g.Name, m) {
			return g, true
		}
	}
	return GPUModelInfo{}, false
}

// GPUSpec is a parsed GPU model request: a catalogue model and, optionally, one of its
// memory sizes ("A100-80GB" is {A100, 80}).
type GPUSpec struct {
	Model    string
	MemoryGB int // 0: any of the model's sizes
}

// String is the canonical spelling: "A100" or "A100-80GB".
func (g GPUSpec) String() string {
	if g.MemoryGB > 0 {
		return g.Model + "-" + strconv.Itoa(g.MemoryGB) + "GB"
	}
	return g.Model
}

// gpuVendorWords are dropped from the front of a model name before matching.
var gpuVendorWords = []string{"NVIDIA", "AMD", "INTEL", "TESLA", "QUADRO", "INSTINCT", "GEFORCE", "RADEON"}

// gpuRest matches what may follow a model name: form factor, a memory size and filler,
// as in "A100-SXM4-80GB", "H100 PCIe", "a100 80gb", "A100-80" (after squashing).
var gpuRest = regexp.MustCompile(`^(?:PCIE|SXM[2-5]?|NVL|HBM[23]E?|SUPERCHIP|GPUS?|([1-9]\d{0,3})(?:GB|G)?)*S?$`)

// maxGPUName bounds the input ParseGPUModel reads.
const maxGPUName = 64

// ParseGPUModel reads a GPU model as people and sites write it ("a100", "NVIDIA
// A100-SXM4-80GB", "A100-80", "Grace Hopper", "MI250x", "h100 pcie") into a catalogue
// model and an optional memory size. A memory size is kept only when the model comes
// in several ("A100 80GB" → A100-80GB; "A40 48GB" → A40). An unknown name, or a
// memory size the model is not sold with, is an error naming the known ones.
func ParseGPUModel(s string) (GPUSpec, error) {
	spec, mem, err := parseGPU(s)
	if err != nil {
		return GPUSpec{}, err
	}
	info, _ := LookupGPUModel(spec.Model)
	if mem > 0 {
		if !slices.Contains(info.MemoryGB, mem) {
			return GPUSpec{}, fmt.Errorf("GPU model %q: %s comes with %s GB, not %d GB; write %s or one of its sizes",
				strings.TrimSpace(s), info.Name, joinInts(info.MemoryGB, " or "), mem, info.Name)
		}
		if len(info.MemoryGB) > 1 {
			spec.MemoryGB = mem
		}
	}
	return spec, nil
}

// ParseGPUModelLenient is ParseGPUModel for what sites report: a memory size is
// dropped (records keep memory separately), whatever it is.
func ParseGPUModelLenient(s string) (GPUSpec, bool) {
	spec, _, err := parseGPU(s)
	return spec, err == nil
}

func parseGPU(s string) (GPUSpec, int, error) {
	trimmed := strings.TrimSpace(s)
	if trimmed == "" {
		return GPUSpec{}, 0, fmt.Errorf("GPU model is empty; known models: %s", strings.Join(KnownGPUModels, ", "))
	}
	if len(trimmed) > maxGPUName {
		return GPUSpec{}, 0, fmt.Errorf("GPU model %.20q… is longer than %d characters; known models: %s", trimmed, maxGPUName, strings.Join(KnownGPUModels, ", "))
	}
	sq := squashGPU(trimmed)
	for range 4 { // drop leading vendor words, bounded
		stripped := false
		for _, w := range gpuVendorWords {
			if strings.HasPrefix(sq, w) && len(sq) > len(w) {
				sq, stripped = sq[len(w):], true
			}
		}
		if !stripped {
			break
		}
	}
	// The longest known name (or alias) that prefixes the input, followed only by
	// variant words, wins: "A10080GBPCIE" is an A100, not an A10.
	best, bestLen, mem := "", 0, 0
	try := func(name, canon string) {
		if len(name) <= bestLen || !strings.HasPrefix(sq, name) {
			return
		}
		m := gpuRest.FindStringSubmatch(sq[len(name):])
		if m == nil {
			return
		}
		best, bestLen, mem = canon, len(name), 0
		if m[1] != "" {
			mem, _ = strconv.Atoi(m[1])
		}
	}
	for _, g := range gpuCatalogue {
		try(g.Name, g.Name)
		for _, a := range g.Aliases {
			try(a, g.Name)
		}
	}
	if best == "" {
		return GPUSpec{}, 0, fmt.Errorf("unknown GPU model %q; known models: %s (a memory size may follow, e.g. A100-80GB)",
			trimmed, strings.Join(KnownGPUModels, ", "))
	}
	return GPUSpec{Model: best}, mem, nil
}

// squashGPU upper-cases and removes spaces, dashes, underscores, dots and slashes.
func squashGPU(s string) string {
	var b strings.Builder
	for _, r := range strings.ToUpper(s) {
		switch r {
		case ' ', '-', '_', '.', '\t', '/', ',', '×':
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

func joinInts(v []int, sep string) string {
	s := make([]string, len(v))
	for i, n := range v {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, sep)
}

// CanonicalGPU maps a user or site spelling of a GPU model ("NVIDIA A100-SXM4-40GB",
// "Quadro RTX 5000", "h100 pcie", "a100 80gb") to its canonical name ("A100-40GB",
// "RTX5000", "H100", "A100-80GB"). ok is false when ParseGPUModel refuses it; the
// trimmed input is returned then, so Validate can name it.
func CanonicalGPU(s string) (string, bool) {
	g, err := ParseGPUModel(s)
	if err != nil {
		return strings.TrimSpace(s), false
	}
	return g.String(), true
}

// GPUMatches reports whether a partition whose GPUs are recModel (a canonical record
// model such as "H100"), with recMemGB per GPU on a recArch host, satisfies the
// requested model want (a CanonicalGPU name). The plain name matches every memory
// size ("A100" matches A100 40 GB and 80 GB partitions; "A100-80GB" only the 80 GB
// ones). A superchip matches its own name, or its GPU class on its host architecture
// ("GH200" matches GH200 partitions and H100 partitions on aarch64, never an x86 H100
// partition); the class name matches the superchip too ("H100" matches GH200).
func GPUMatches(want, recModel string, recMemGB int, recArch string) bool {
	spec, err := ParseGPUModel(want)
	if err != nil {
		if spec, ok := ParseGPUModelLenient(want); ok {
			return spec.Matches(recModel, recMemGB, recArch)
		}
		return strings.EqualFold(want, recModel)
	}
	return spec.Matches(recModel, recMemGB, recArch)
}

// Matches is GPUMatches for a parsed request (the scheduler parses once per request).
func (g GPUSpec) Matches(recModel string, recMemGB int, recArch string) bool {
	if g.MemoryGB > 0 && recMemGB != g.MemoryGB {
		return false
	}
	rec, ok := LookupGPUModel(recModel) // records carry canonical names
	if !ok {
		spec, ok := ParseGPUModelLenient(recModel)
		if !ok {
			return false
		}
		rec, _ = LookupGPUModel(spec.Model)
	}
	if rec.Name == g.Model {
		return true
	}
	w, _ := LookupGPUModel(g.Model)
	if w.Class != "" && rec.Name == w.Class {
		return strings.EqualFold(recArch, w.HostArch)
	}
	return rec.Class != "" && rec.Class == g.Model
}

// GPUSpecIsPlain reports whether want (a CanonicalGPU name) matches by model name
// alone: no memory size, and not a superchip whose match depends on the host.
func GPUSpecIsPlain(want string) bool {
	spec, err := ParseGPUModel(want)
	if err != nil || spec.MemoryGB > 0 {
		return false
	}
	info, _ := LookupGPUModel(spec.Model)
	if info.Class != "" {
		return false
	}
	for _, g := range gpuCatalogue {
		if g.Class == spec.Model {
			return false // "H100" also matches GH200 records
		}
	}
	return true
}

// ImpliedHostArch returns the host architecture every model in want implies (GH200 →
// aarch64), or "" when any of them runs on any host, or they disagree.
func ImpliedHostArch(want []string) string {
	arch := ""
	for i, w := range want {
		spec, err := ParseGPUModel(w)
		if err != nil {
			return ""
		}
		info, _ := LookupGPUModel(spec.Model)
		if info.HostArch == "" || (i > 0 && info.HostArch != arch) {
			return ""
		}
		arch = info.HostArch
	}
	return arch
}
