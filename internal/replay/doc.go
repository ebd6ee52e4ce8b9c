// Package replay measures placement quality: it replays a stream of federated user
// jobs, taken from a Standard Workload Format trace, through a placement policy over a
// federation of simulated sites (internal/sim models with their own background load)
// and reports waits, slowdowns, makespan, utilisation and migrations per policy.
//
// The replay drives simulated time itself: there is no wall clock and no process. At
// every decision tick (default 60 s simulated) it probes every site the way the live
// sim provider does (one model.ResourceRecord per partition from PartitionState), so
// policies see only what a real probe would see at that moment, and the site's own
// start estimate (the model's EstimateStart, like sbatch --test-only) when they ask.
// Placement goes through internal/scheduler (rule chain, sizing, heuristic ranker),
// the same code path as the live core; the mosaic policy also replans waiting jobs with
// scheduler.Replan, the decision internal/execution's replanning takes.
//
// Every partition of a site is its own sim.Cluster (the model's partitions share no
// nodes; each keeps the random stream it has inside a whole-system model). That keeps
// the clairvoyant-greedy policy affordable: it forks a partition's model (an exact
// copy, sim.Cluster.Clone) and simulates it forward with the exact runtimes of every
// job already there. Bound is a lower bound on every job's wait that no policy can
// beat; the exhaustive optimum (tiny instances) is the best static assignment.
//
// See docs/PLACEMENT.md for the method and the current numbers.
package replay
