package slurm

import (
	"time"
)

// The plan with predicted runtimes, simulated forward.
//
// Slurm's backfill scheduler plans on the time limits, and it plans again each time a
// job ends: a queued job starts when the limits' plan, made at that moment, says it
// starts now. Jobs end well before their limits (on the rig the stream's jobs run 5–40 s
// of 1–2 minute limits), so the limits' plan made now is not what happens, and neither
// is one plan made now with the predicted runtimes (which books queued jobs for their
// predictions and fits them into holes Slurm would not give them). simulateQueue does
// what the scheduler will do: it makes the limits' plan now, starts the queued jobs it
// starts now, and moves on to the next predicted end, where it plans again, until each
// request starts. Only the ends are predicted; every decision is the
// scheduler's own, on the limits.
//
// An offline model of the rig (two one-node clusters of 4 GPUs, the benchmark's
// streams, a backfill scheduler on the limits with whole-node reservations) puts the
// placement on one plan with predictions at 0.81× `sbatch -M`'s mean wait over 100
// seeds and the placement on the simulated plan at 0.77× (paired by seed −0.044,
// standard error 0.0075): `go run ./scripts/bench/rigplace --model --streams 100`,
// docs/PLACEMENT.md "The plan simulated forward".

// simRun is a job holding its nodes in the simulation.
type simRun struct {
	nodes    []*planNode
	cpn, gpn int
	limitEnd time.Time // when the scheduler expects it to end: its start plus its limit
	end      time.Time // when it is predicted to end (no later than limitEnd)
}

// simulateQueue is the start of each request (and of the queued job own, "" for
// none) when the scheduler plans on the limits at each predicted end (see above):
// the same scope as planQueue, the user's own jobs ending after their predicted
// runtimes (rt), everyone else's at their limits. staticWork is what one plan of the
// same queue cost (planQueue's count): the simulation makes at most one plan per event
// (a predicted end), and it is not made (false) when that many plans could cost more
// than maxPlanWork, or when it does; the caller keeps the one plan then.
func simulateQueue(nodes []NodeLine, jobs []QueuedJob, user string, now time.Time, reqs []PlanRequest, own string, rt Runtimes, staticWork int) ([]time.Time, time.Time, bool) {
	out := make([]time.Time, len(reqs))
	var ownSlot time.Time
	p := newPlan(nodes, now)
	sc, ok := p.scope(jobs, user, reqs, own)
	if !ok {
		return out, ownSlot, true // nothing to plan: the one plan says the same
	}
	runtime := sc.runtimes(user, rt)
	var running []simRun
	for i := range jobs {
		j := &jobs[i]
		if !j.Running {
			continue
		}
		r := simRun{cpn: ceilDiv(j.CPUs, max(len(j.NodeList), 1)), gpn: j.GPUsPerNode,
			limitEnd: heldUntil(j, now, j.Limit), end: heldUntil(j, now, runtime(j))}
		for _, name := range j.NodeList {
			if n := p.nodes[name]; n != nil && sc.area[n] {
				r.nodes = append(r.nodes, n)
			}
		}
		if len(r.nodes) > 0 {
			running = append(running, r)
		}
	}
	// Every event is the predicted end of a job running now or started on the way,
	// each once: the loop's bound.
	events := len(running) + len(sc.ahead) + 1
	if staticWork > 0 && staticWork > maxPlanWork/events {
		return out, ownSlot, false
	}
	queued := make([]bool, len(sc.ahead)) // true: still queued
	for k := range queued {
		queued[k] = true
	}
	done := make([]bool, len(reqs))
	ownDone := own == ""
	var ownPlanned time.Time // own's slot in the latest plan
	left := len(reqs)
	t := now
	work := 0
	for ev := 0; ev < events && (left > 0 || !ownDone); ev++ {
		p.reset(t)
		for _, r := range running {
			until := later(r.limitEnd, t.Add(time.Second))
			for _, n := range r.nodes {
				n.held = append(n.held, span{t, until, r.cpn, r.gpn})
			}
		}
		for k, j := range sc.ahead {
			if !queued[k] {
				continue
			}
			req := PlanRequest{Nodes: j.Nodes, CPUsPerNode: ceilDiv(j.CPUs, j.Nodes), GPUsPerNode: j.GPUsPerNode, Walltime: j.Limit}
			st, chosen := p.earliest(sc.sets[k], req)
			if chosen == nil {
				continue // fits no node: never starts, holds nothing
			}
			p.take(chosen, st, req)
			if !st.Equal(t) {
				if j.ID == own {
					ownPlanned = st
				}
				continue
			}
			queued[k] = false
			limitEnd := t.Add(planHorizon)
			if j.Limit > 0 {
				limitEnd = t.Add(j.Limit)
			}
			end := limitEnd
			if d := runtime(j); d > 0 && d < j.Limit {
				end = t.Add(d)
			}
			running = append(running, simRun{nodes: chosen, cpn: req.CPUsPerNode, gpn: req.GPUsPerNode, limitEnd: limitEnd, end: end})
			if j.ID == own {
				ownSlot, ownDone = t, true
			}
		}
		for i, r := range reqs {
			if done[i] {
				continue
			}
			set := p.nodesOf(r.Partition)
			st, chosen := time.Time{}, []*planNode(nil)
			if len(set) > 0 && len(set) <= MaxPlanNodes {
				st, chosen = p.earliest(set, r)
			}
			if chosen == nil {
				done[i], left = true, left-1 // not planned: fits no node
				continue
			}
			if st.Equal(t) {
				out[i], done[i], left = st, true, left-1
			}
		}
		// The next event is the next predicted end: every planned start is a limit's
		// end (of a job running, or of one planned before it), and a predicted end
		// comes no later than its limit's.
		next := time.Time{}
		for _, r := range running {
			if r.end.After(t) && (next.IsZero() || r.end.Before(next)) {
				next = r.end
			}
		}
		if work += p.work; work > maxPlanWork {
			return out, ownSlot, false
		}
		if next.IsZero() {
			break
		}
		// Jobs predicted to end by the next event leave.
		kept := running[:0]
		for _, r := range running {
			if r.end.After(next) {
				kept = append(kept, r)
			}
		}
		running = kept
		t = next
	}
	if !ownDone {
		ownSlot = ownPlanned
	}
	if left > 0 {
		// No end left to wait for with a request not started: the last plan stands
		// for it (it waits behind a job without a limit, or the events ran out).
		for i, r := range reqs {
			if done[i] {
				continue
			}
			if set := p.nodesOf(r.Partition); len(set) > 0 && len(set) <= MaxPlanNodes {
				if st, chosen := p.earliest(set, r); chosen != nil {
					out[i] = st
				}
			}
		}
	}
	return out, ownSlot, true
}

// reset empties the plan for a new one made at now (the nodes and partitions stay).
func (p *plan) reset(now time.Time) {
	p.now, p.work = now, 0
	for _, n := range p.nodes {
		n.held, n.reserved = n.held[:0], n.reserved[:0]
	}
}
