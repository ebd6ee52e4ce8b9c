// Package scheduler places a task on one (system, partition, account) of the federation.
//
// Place considers every snapshot record as a candidate, runs the Rule chain on each
// (a candidate is feasible when every rule passes), sizes each feasible candidate
// inside the task's envelope for its objective, ranks them with the heuristic ranker
// and, when an LLM is configured, lets the LLM reorder them (only a permutation of the
// feasible candidates is accepted). The result is a Decision: a JSON-serialisable
// trace that also renders as an squeue-like table.
//
// The decision pass is built for 1,000-partition federations (docs/PERFORMANCE.md):
// built-in rules run as straight-line pass/fail checks that stop at a candidate's
// first failure, and feasible candidates are kept as small pointer-free rows. The
// trace is built from those when it is read: Feasible and ChosenCandidate build the
// ranked Candidates, and Explain (which MarshalJSON and Table call) re-runs every rule
// with its reason on every candidate. Rules are pure functions of the request, the
// record and its system's health, so the explained trace is the one the decision saw.
package scheduler
