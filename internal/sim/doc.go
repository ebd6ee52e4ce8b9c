// Package sim is a pure discrete-event model of a batch system: partitions of
// identical nodes, FCFS scheduling with EASY backfill, walltime enforcement,
// background load (a replayed Standard Workload Format trace or a seeded synthetic
// generator) and injected faults (outages, node failures, failing user jobs).
//
// The model has no goroutines, reads no wall clock and starts no processes. Time only
// moves when the caller calls AdvanceTo; every call is deterministic given the seed
// and the sequence of calls. User jobs are "external": the model decides when they
// start (AdvanceTo reports it) and the caller reports when they end (Finish), unless
// the model ends them first (walltime, node failure, injected failure, cancel).
//
// Typical use (see internal/provider/simprov):
//
//	c, err := sim.FromSite(sys, global, time.Now())
//	id, err := c.Submit(sim.JobRequest{Partition: "gpu", Nodes: 1, ...})
//	for _, ev := range c.AdvanceTo(now) { ... launch or kill processes ... }
//	c.Finish(id, exitCode)
package sim
