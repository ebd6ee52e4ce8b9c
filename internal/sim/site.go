package sim

import (
	"fmt"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/site"
)

var (
	traceMu    sync.Mutex
	traceCache = map[string]*Trace{}
)

// loadTrace reads a trace once per path; traces are never modified after parsing.
func loadTrace(path string) (*Trace, error) {
	traceMu.Lock()
	defer traceMu.Unlock()
	if t, ok := traceCache[path]; ok {
		return t, nil
	}
	t, err := ReadSWF(path)
	if err != nil {
		return nil, err
	}
	traceCache[path] = t
	return t, nil
}

// ConfigFromSite builds a model configuration for a catalog system. Each partition
// gets min(partition nodes, sim.max_nodes or 64) nodes; the background load and the
// faults come from the system's sim block (utilization defaults to 0.85).
func ConfigFromSite(sys site.System, start time.Time) (Config, error) {
	var sc site.SimSystem
	if sys.SimConfig != nil {
		sc = *sys.SimConfig
	}
	maxNodes := sc.MaxNodes
	if maxNodes <= 0 {
		maxNodes = DefaultMaxNodes
	}
	util := sc.Load.Utilization
	if util == 0 {
		util = DefaultUtilization
	}
	var tr *Trace
	if sc.Load.Trace != "" {
		t, err := loadTrace(sc.Load.Trace)
		if err != nil {
			return Config{}, fmt.Errorf("system %s: %w", sys.Name, err)
		}
		tr = t
	}
	cfg := Config{Name: sys.Name, Start: start, JobFailureProb: sc.Faults.JobFailureProb}
	if len(sys.Partitions) == 0 {
		return Config{}, fmt.Errorf("system %s: no partitions in the catalog; add at least one or name a known machine", sys.Name)
	}
	for _, p := range sys.Partitions {
		if p.Nodes < 1 {
			return Config{}, fmt.Errorf("system %s partition %s: nodes must be at least 1 (catalog line %d)", sys.Name, p.Name, p.Line)
		}
		cfg.Partitions = append(cfg.Partitions, PartitionConfig{
			Name: p.Name, Nodes: min(p.Nodes, maxNodes), CoresPerNode: p.CPUCores, GPUsPerNode: p.GPUs,
			MemGBPerNode: p.MemoryGB, MaxWalltime: p.MaxWalltime.D(), MaxNodesPerJob: p.MaxNodesPerJob,
			Exclusive: p.Exclusive, MaxRunningPerUser: p.MaxRunningPerUser, MaxSubmitPerUser: p.MaxSubmitPerUser,
			Load: Load{Utilization: util, Trace: tr, MeanRuntime: sc.Load.MeanRuntime.D()},
		})
	}
	for _, w := range sc.Faults.Outages {
		cfg.Outages = append(cfg.Outages, Window{Start: w.Start.D(), Duration: w.Duration.D()})
	}
	for _, nf := range sc.Faults.NodeFailures {
		cfg.NodeFailures = append(cfg.NodeFailures, NodeFailure{Partition: nf.Partition, Nodes: nf.Nodes, At: nf.At.D(), Duration: nf.Duration.D()})
	}
	return cfg, nil
}

// FromSite builds and warms up the model of a catalog system. The seed is g.Seed
// (default 1); the system name is mixed into every random stream so systems differ.
func FromSite(sys site.System, g site.SimGlobal, start time.Time) (*Cluster, error) {
	cfg, err := ConfigFromSite(sys, start)
	if err != nil {
		return nil, err
	}
	seed := g.Seed
	if seed == 0 {
		seed = 1
	}
	return New(cfg, seed)
}
