package sim

import (
	"fmt"
	"time"
)

// Defaults.
const (
	DefaultUtilization    = 0.85
	DefaultMeanRuntime    = 2 * time.Hour
	DefaultMaxPendingBG   = 256
	DefaultBackfillDepth  = 200
	DefaultMaxNodes       = 64
	defaultSynthWallCap   = 48 * time.Hour
	minBackgroundRuntime  = time.Minute
	maxWarmUp             = 48 * time.Hour
	minWarmUp             = 12 * time.Hour
	estimateMaxIterations = 20000
)

// Config describes one simulated system.
type Config struct {
	Name string
	// Start is simulated time zero ("t0"): fault times are relative to it and the
	// background load has been running for WarmUp before it.
	Start      time.Time
	Partitions []PartitionConfig
	// Outages are windows (relative to Start) when the site is down: Down reports
	// true, Submit fails and nothing starts. Running jobs keep running.
	Outages []Window
	// NodeFailures take nodes down for a while; jobs on them end NODE_FAIL.
	NodeFailures []NodeFailure
	// JobFailureProb is the chance (0–1) that a user job ends NODE_FAIL at a random
	// point of its run.
	JobFailureProb float64
	// WarmUp is how long background load runs before Start so the system is not
	// empty at t0. 0 = default (3× the mean background runtime, between 12h and 48h);
	// negative = none.
	WarmUp time.Duration
	// MaxPendingBackground bounds each partition's queue of background jobs; arrivals
	// beyond it are dropped (counted in Stats). 0 = 256.
	MaxPendingBackground int
	// BackfillDepth bounds how many queued jobs one backfill pass considers (Slurm's
	// bf_max_job_test). 0 = 200.
	BackfillDepth int
	// FirstJobID is the first job id issued (background and user jobs share the
	// sequence, like Slurm's). 0 = 1000.
	FirstJobID int64
	// Observer, when set, is called for every job start and end, background ones
	// included (AdvanceTo reports only user jobs).
	Observer func(Event)
}

// PartitionConfig is one partition of identical nodes.
type PartitionConfig struct {
	Name         string
	Nodes        int
	CoresPerNode int
	GPUsPerNode  int
	MemGBPerNode int
	// MaxWalltime caps a job's requested walltime; 0 = unlimited.
	MaxWalltime time.Duration
	// MaxNodesPerJob; 0 = the partition's size.
	MaxNodesPerJob int
	// Exclusive partitions allocate whole nodes.
	Exclusive bool
	// MaxRunningPerUser and MaxSubmitPerUser limit user jobs; 0 = no limit.
	MaxRunningPerUser int
	MaxSubmitPerUser  int
	Load              Load
}

// Load is a partition's background workload.
type Load struct {
	// Utilization is the offered load to aim at (share of the partition busy);
	// 0 = no background load.
	Utilization float64
	// Trace, when set, is replayed (scaled to the partition); nil = synthetic.
	Trace *Trace
	// MeanRuntime of synthetic jobs; 0 = 2h.
	MeanRuntime time.Duration
}

// Window is a period relative to Config.Start.
type Window struct {
	Start    time.Duration
	Duration time.Duration
}

// NodeFailure takes Nodes nodes of Partition down at At (relative to Start) for Duration.
type NodeFailure struct {
	Partition string
	Nodes     int
	At        time.Duration
	Duration  time.Duration
}

func (cfg *Config) validate() error {
	if len(cfg.Partitions) == 0 {
		return fmt.Errorf("sim %s: no partitions configured", cfg.Name)
	}
	seen := map[string]bool{}
	for i := range cfg.Partitions {
		p := &cfg.Partitions[i]
		switch {
		case p.Name == "":
			return fmt.Errorf("sim %s: partition %d has no name", cfg.Name, i+1)
		case seen[p.Name]:
			return fmt.Errorf("sim %s: partition %s is listed twice", cfg.Name, p.Name)
		case p.Nodes < 1:
			return fmt.Errorf("sim %s: partition %s needs at least 1 node, has %d", cfg.Name, p.Name, p.Nodes)
		case p.CoresPerNode < 1:
			return fmt.Errorf("sim %s: partition %s needs cores per node >= 1, has %d", cfg.Name, p.Name, p.CoresPerNode)
		case p.GPUsPerNode < 0 || p.MemGBPerNode < 0 || p.MaxWalltime < 0 || p.MaxNodesPerJob < 0:
			return fmt.Errorf("sim %s: partition %s has a negative limit", cfg.Name, p.Name)
		case p.Load.Utilization < 0 || p.Load.Utilization > 1.5:
			return fmt.Errorf("sim %s: partition %s utilization %.2f is outside 0–1.5", cfg.Name, p.Name, p.Load.Utilization)
		}
		seen[p.Name] = true
		if p.MaxNodesPerJob == 0 || p.MaxNodesPerJob > p.Nodes {
			p.MaxNodesPerJob = p.Nodes
		}
	}
	for _, nf := range cfg.NodeFailures {
		if !seen[nf.Partition] {
			return fmt.Errorf("sim %s: node failure names unknown partition %q", cfg.Name, nf.Partition)
		}
		if nf.Nodes < 0 || nf.Duration < 0 {
			return fmt.Errorf("sim %s: node failure on %s has a negative node count or duration", cfg.Name, nf.Partition)
		}
	}
	for _, w := range cfg.Outages {
		if w.Duration < 0 {
			return fmt.Errorf("sim %s: outage at %s has a negative duration", cfg.Name, w.Start)
		}
	}
	if cfg.JobFailureProb < 0 || cfg.JobFailureProb > 1 {
		return fmt.Errorf("sim %s: job failure probability %.2f is outside 0–1", cfg.Name, cfg.JobFailureProb)
	}
	if cfg.FirstJobID <= 0 {
		cfg.FirstJobID = 1000
	}
	if cfg.MaxPendingBackground <= 0 {
		cfg.MaxPendingBackground = DefaultMaxPendingBG
	}
	if cfg.BackfillDepth <= 0 {
		cfg.BackfillDepth = DefaultBackfillDepth
	}
	return nil
}
