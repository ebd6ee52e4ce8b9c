package slurm

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Gres is one generic resource entry such as "gpu:a100:4(S:0-1)".
type Gres struct {
	Name  string // "gpu"
	Type  string // "a100"; "" when untyped
	Count int
}

// ParseGres reads a node's GRES list as sinfo prints it: "gpu:a100:4(S:0-1)",
// "gpu:4", "gpu:a100:2(IDX:0-1),gpu:v100:1(IDX:2)", "(null)". Parenthesised socket or
// index annotations are ignored. Counts may carry a K/M/G multiplier (shards, mps).
func ParseGres(s string) ([]Gres, error) {
	s = strings.TrimSpace(s)
	if cleanNull(s) == "" {
		return nil, nil
	}
	var out []Gres
	for _, item := range splitTopLevel(s) {
		item = strings.TrimSpace(item)
		if i := strings.IndexByte(item, '('); i >= 0 {
			if !strings.HasSuffix(item, ")") {
				return nil, fmt.Errorf("gres %q: unbalanced parenthesis", s)
			}
			item = item[:i]
		}
		if item == "" {
			continue
		}
		parts := strings.Split(item, ":")
		g := Gres{Name: parts[0], Count: 1}
		if g.Name == "" {
			return nil, fmt.Errorf("gres %q: empty name", s)
		}
		if len(parts) > 1 {
			last := parts[len(parts)-1]
			if n, ok := parseCount(last); ok {
				g.Count = n
				g.Type = strings.Join(parts[1:len(parts)-1], ":")
			} else {
				g.Type = strings.Join(parts[1:], ":")
			}
		}
		out = append(out, g)
	}
	return out, nil
}

func parseCount(s string) (int, bool) {
	mult := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mult, s = 1024, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		mult, s = 1024*1024, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false
	}
	return n * mult, true
}

// splitTopLevel splits on commas outside parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// gpuSummary returns the GPU count and the dominant GPU type in a GRES list.
func gpuSummary(gs []Gres) (count int, typ string) {
	byType := map[string]int{}
	for _, g := range gs {
		if g.Name != "gpu" {
			continue
		}
		count += g.Count
		byType[g.Type] += g.Count
	}
	best := -1
	for t, n := range byType {
		if n > best || (n == best && t < typ) {
			best, typ = n, t
		}
	}
	return count, typ
}

// CanonicalGPU maps a Slurm GRES type ("a100", "nvidia_a100-sxm4-80gb", "h100_80gb",
// "a6000", "pvc") to the catalogue's model name ("A100", "RTXA6000", "MAX1550") and the
// per-GPU memory in GB when the type spells it (0 if not), through model.RecordGPU, the
// one canonicaliser every dialect uses (so a record and a --gpu-model request agree).
func CanonicalGPU(typ string) (name string, memGB int) {
	return model.RecordGPU(typ)
}
