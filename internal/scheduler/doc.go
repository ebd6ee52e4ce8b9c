// Package scheduler places a task on one (system, partition, account) of the federation.
//
// Place considers every snapshot record as a candidate, runs the Rule chain on each
// (a candidate is feasible when every rule passes), sizes each feasible candidate
// inside the task's envelope for its objective, ranks them with the heuristic ranker
// and, when an LLM is configured, lets the LLM reorder them (only a permutation of the
// feasible candidates is accepted). The result is a Decision: a JSON-serialisable
// trace that also renders as an squeue-like table.
//
// The decision pass is built for 1,000-partition federations (docs/PERFORMANCE.md).
// Each built-in rule is written once, in its own file: test decides (a one-byte
// outcome, no strings) and reason words the outcome; the chain and its order are
// DefaultRules. The decision pass calls test alone, in that order, and stops at a
// candidate's first failure; feasible candidates are kept as small pointer-free rows,
// sized (Size) and ranked (HeuristicRanker) by the same functions the public API
// calls. The trace is built from those when it is read: Feasible and ChosenCandidate
// build the ranked Candidates, and Explain (which MarshalJSON and Table call) runs
// every rule's test and reason on every candidate. Rules are pure functions of the
// request, the record and its system's health, so the explained trace is the one the
// decision saw.
package scheduler
