// Package scheduler places a task on one (system, partition, account) of the federation.
//
// Place builds one Candidate per snapshot record, runs every Rule of the chain on every
// candidate (the trace keeps each verdict; a candidate is feasible when all pass), sizes
// each feasible candidate inside the task's envelope for its objective, ranks them with
// the heuristic ranker and, when an LLM is configured, lets the LLM reorder them (only a
// permutation of the feasible candidates is accepted). The result is a Decision: a
// JSON-serialisable trace that also renders as an squeue-like table.
package scheduler
