package site

import (
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Architectures.
const (
	ArchX86_64  = model.ArchX86_64
	ArchAarch64 = model.ArchAarch64
)

// KnownGPUModels lists the canonical GPU model names CanonicalGPUModel recognises: the
// names of the catalogue in internal/model (model.GPUCatalogue).
func KnownGPUModels() []string {
	out := make([]string, len(model.KnownGPUModels))
	copy(out, model.KnownGPUModels)
	return out
}

// CanonicalGPUModel maps a GPU model as a site reports it ("a100", "NVIDIA
// A100-SXM4-40GB", "Quadro RTX 5000", "MI250x") to its canonical catalogue name
// ("A100", "RTX5000", "MI250X"). A memory size in the name is dropped: a partition
// keeps its GPU memory in its own field. GH200 stays GH200: the catalog's word is kept,
// only its spelling is normalised. For an unknown model it returns the trimmed input
// and false.
func CanonicalGPUModel(s string) (string, bool) {
	g, ok := model.ParseGPUModelLenient(s)
	if !ok {
		return strings.TrimSpace(s), false
	}
	return g.Model, true
}

// CanonicalArch maps an architecture name and its aliases (amd64, x86-64, x64, arm64)
// to x86_64 or aarch64. It returns the input and false when unrecognised.
func CanonicalArch(s string) (string, bool) {
	if a, ok := model.CanonicalArch(s); ok {
		return a, true
	}
	return s, false
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
