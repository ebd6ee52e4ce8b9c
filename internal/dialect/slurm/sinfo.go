package slurm

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// sinfoFields is the -O format of the node-per-partition probe. Each field has a '|'
// suffix and no width, so nothing is truncated (works on 22.05 and later).
var sinfoFields = []string{"PartitionName", "NodeList", "StateLong", "CPUs", "CPUsState", "Memory",
	"AllocMem", "Gres", "GresUsed", "Time", "Available", "Size", "Features"}

// SinfoCommand lists every node of every partition, one line per (partition, node).
func SinfoCommand() []string {
	parts := make([]string, len(sinfoFields))
	for i, f := range sinfoFields {
		parts[i] = f + ":|"
	}
	return []string{"sinfo", "--noheader", "--Node", "--Format=" + strings.Join(parts, ",")}
}

// NodeLine is one (partition, node) line of SinfoCommand's output.
type NodeLine struct {
	Partition   string
	Node        string
	State       string // as printed, e.g. "mixed", "down*", "idle~"
	CPUs        int
	AllocCPUs   int
	IdleCPUs    int
	MemoryMB    int
	AllocMemMB  int
	GPUs        int
	GPUType     string
	UsedGPUs    int
	TimeLimit   model.Duration // 0 = unlimited
	PartitionUp bool
	MaxNodes    int // 0 = unlimited
	Features    []string
}

// ParseSinfo reads SinfoCommand's output. Malformed lines are an error naming the line.
func ParseSinfo(out []byte) ([]NodeLine, error) {
	var res []NodeLine
	for n, l := range lines(out) {
		f, ok := splitDelimited(l, len(sinfoFields), -1)
		if !ok {
			return nil, fmt.Errorf("sinfo line %d: want %d '|'-separated fields, got %q", n+1, len(sinfoFields), truncate(l))
		}
		nl := NodeLine{
			Partition:   strings.TrimSuffix(strings.TrimSpace(f[0]), "*"),
			Node:        strings.TrimSpace(f[1]),
			State:       strings.TrimSpace(f[2]),
			PartitionUp: strings.EqualFold(strings.TrimSpace(f[10]), "up"),
		}
		if nl.Partition == "" || nl.Node == "" {
			return nil, fmt.Errorf("sinfo line %d: empty partition or node name in %q", n+1, truncate(l))
		}
		var err error
		if nl.CPUs, err = atoiField("CPUs", f[3]); err != nil {
			return nil, fmt.Errorf("sinfo line %d: %w", n+1, err)
		}
		if nl.AllocCPUs, nl.IdleCPUs, err = parseCPUsState(f[4]); err != nil {
			return nil, fmt.Errorf("sinfo line %d: %w", n+1, err)
		}
		if nl.MemoryMB, err = atoiField("Memory", f[5]); err != nil {
			return nil, fmt.Errorf("sinfo line %d: %w", n+1, err)
		}
		nl.AllocMemMB = atoiDefault(f[6], 0)
		total, err := ParseGres(f[7])
		if err != nil {
			return nil, fmt.Errorf("sinfo line %d: %w", n+1, err)
		}
		used, err := ParseGres(f[8])
		if err != nil {
			return nil, fmt.Errorf("sinfo line %d: %w", n+1, err)
		}
		nl.GPUs, nl.GPUType = gpuSummary(total)
		nl.UsedGPUs, _ = gpuSummary(used)
		lim, ok := parseLimit(f[9])
		if !ok {
			return nil, fmt.Errorf("sinfo line %d: time limit %q: want UNLIMITED or [D-]HH:MM:SS", n+1, f[9])
		}
		nl.TimeLimit = lim
		nl.MaxNodes = parseSizeMax(f[11])
		if feat := cleanNull(f[12]); feat != "" {
			nl.Features = strings.Split(feat, ",")
		}
		res = append(res, nl)
	}
	return res, nil
}

func truncate(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

func atoiField(name, s string) (int, error) {
	s = strings.TrimSpace(s)
	n := atoiDefault(strings.TrimSuffix(s, "+"), -1)
	if n < 0 {
		return 0, fmt.Errorf("%s %q is not a non-negative number", name, s)
	}
	return n, nil
}

// parseCPUsState reads "A/I/O/T".
func parseCPUsState(s string) (alloc, idle int, err error) {
	p := strings.Split(strings.TrimSpace(s), "/")
	if len(p) != 4 {
		return 0, 0, fmt.Errorf("CPUsState %q: want A/I/O/T", s)
	}
	alloc, idle = atoiDefault(p[0], -1), atoiDefault(p[1], -1)
	if alloc < 0 || idle < 0 {
		return 0, 0, fmt.Errorf("CPUsState %q: want A/I/O/T numbers", s)
	}
	return alloc, idle, nil
}

// parseSizeMax reads a partition's job size range "1-infinite" / "1-16" / "4".
func parseSizeMax(s string) int {
	s = strings.TrimSpace(s)
	if _, hi, ok := strings.Cut(s, "-"); ok {
		s = hi
	}
	return max(atoiDefault(s, 0), 0)
}

// NodeAvail is how a node's state affects new work.
type NodeAvail int

// Node availability classes.
const (
	NodeIdle  NodeAvail = iota // all resources free
	NodeMixed                  // partly allocated, accepting work
	NodeAlloc                  // fully allocated
	NodeDown                   // down, drained/draining, failing, not responding, maintenance
)

// ClassifyNodeState reads a node state as sinfo prints it ("mixed", "idle~", "down*",
// "drained", "allocated+", "mixed-", "idle#", "IDLE+DRAIN"). Suffixes: '*' not responding
// and '$' maintenance make the node unavailable; '%' and '!' (powering down) too; '~'
// (powered off, can be booted), '#' (powering up), '@' (reboot pending), '+' (more
// flags) and '-' (planned by backfill) keep the base state.
func ClassifyNodeState(s string) NodeAvail {
	s = strings.ToLower(strings.TrimSpace(s))
	down := false
	for len(s) > 0 && strings.ContainsRune("*~#!%$@+-", rune(s[len(s)-1])) {
		switch s[len(s)-1] {
		case '*', '$', '%', '!':
			down = true
		}
		s = s[:len(s)-1]
	}
	base, flags, _ := strings.Cut(s, "+")
	for _, fl := range strings.Split(flags, "+") {
		switch fl {
		case "drain", "draining", "drained", "fail", "failing", "maint", "not_responding", "power_down", "powering_down", "reboot_issued":
			down = true
		}
	}
	if down {
		return NodeDown
	}
	switch base {
	case "idle", "powered_down", "powering_up", "power_up", "cloud":
		return NodeIdle
	case "mixed", "mix", "planned", "plnd", "reserved", "resv", "completing", "comp":
		return NodeMixed
	case "allocated", "alloc", "blocked", "block":
		return NodeAlloc
	}
	// down, drained, draining, drng, drain, fail, failing, inval, unknown, future, maint, ...
	return NodeDown
}

// PartitionRecords aggregates node lines into one record per partition (Account empty,
// System/Provider/Endpoint left for the caller). Queue counters are zero; see
// ApplyQueue.
func PartitionRecords(nodes []NodeLine) []model.ResourceRecord {
	byPart := map[string]*model.ResourceRecord{}
	typeCount := map[string]map[string]int{}
	var order []string
	for _, nl := range nodes {
		r := byPart[nl.Partition]
		if r == nil {
			r = &model.ResourceRecord{Partition: nl.Partition, WalltimeCap: nl.TimeLimit, MaxNodesPerJob: nl.MaxNodes,
				Health: model.HealthOK}
			if !nl.PartitionUp {
				r.Health = model.HealthDown
				r.LastError = "partition is not up"
			}
			byPart[nl.Partition] = r
			typeCount[nl.Partition] = map[string]int{}
			order = append(order, nl.Partition)
		}
		r.Nodes.Total++
		r.CPUCoresPerNode = max(r.CPUCoresPerNode, nl.CPUs)
		r.MemoryPerNodeGB = max(r.MemoryPerNodeGB, nl.MemoryMB/1024)
		r.GPUsPerNode = max(r.GPUsPerNode, nl.GPUs)
		if nl.GPUType != "" {
			typeCount[nl.Partition][nl.GPUType] += nl.GPUs
		}
		r.TotalCores += nl.CPUs
		r.TotalGPUs += nl.GPUs
		for _, f := range nl.Features {
			if !contains(r.Features, f) {
				r.Features = append(r.Features, f)
			}
		}
		switch ClassifyNodeState(nl.State) {
		case NodeIdle:
			r.Nodes.Idle++
			r.FreeCores += nl.IdleCPUs
			r.FreeGPUs += max(nl.GPUs-nl.UsedGPUs, 0)
		case NodeMixed:
			r.Nodes.Mixed++
			r.FreeCores += nl.IdleCPUs
			r.FreeGPUs += max(nl.GPUs-nl.UsedGPUs, 0)
		case NodeAlloc:
			r.Nodes.Allocated++
		case NodeDown:
			r.Nodes.Down++
		}
	}
	out := make([]model.ResourceRecord, 0, len(order))
	for _, p := range order {
		r := byPart[p]
		best, bestN := "", -1
		for t, n := range typeCount[p] {
			if n > bestN || (n == bestN && t < best) {
				best, bestN = t, n
			}
		}
		r.GPUModel, r.GPUMemoryGB = CanonicalGPU(best)
		sort.Strings(r.Features)
		if r.Health == model.HealthOK {
			switch {
			case r.Nodes.Down == r.Nodes.Total:
				r.Health = model.HealthDown
				r.LastError = "all nodes are down or drained"
			case r.Nodes.Down > 0:
				r.Health = model.HealthDegraded
				r.LastError = fmt.Sprintf("%d of %d nodes down or drained", r.Nodes.Down, r.Nodes.Total)
			}
		}
		out = append(out, *r)
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
