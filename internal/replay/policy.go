package replay

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
)

// Policy names.
const (
	PolicyHome          = "home"
	PolicyRandom        = "random"
	PolicyRoundRobin    = "round-robin"
	PolicyLeastQueued   = "least-queued"
	PolicyEarliestStart = "earliest-start"
	PolicyMosaic        = "mosaic"
	// PolicyClairvoyant is the greedy heuristic with perfect knowledge of runtimes:
	// each job goes where it really starts first. It is not a bound (later arrivals
	// and the cost of shrinking can make it lose to mosaic; see Bound for one).
	PolicyClairvoyant = "clairvoyant-greedy"
	// PolicyOracle is the clairvoyant policy's old name, still accepted on the command
	// line: it was called an oracle although it bounds nothing.
	PolicyOracle = "oracle"
)

// PolicyNames lists every policy in report order.
var PolicyNames = []string{PolicyHome, PolicyRandom, PolicyRoundRobin, PolicyLeastQueued, PolicyEarliestStart, PolicyMosaic, PolicyClairvoyant}

// Policy decides where a federated job goes. Every policy uses the scheduler's rule
// chain and sizing; they differ in how they choose among the feasible candidates.
type Policy interface {
	Name() string
	// Moldable: the policy may shrink a moldable job within its envelope (mosaic,
	// clairvoyant-greedy); the others submit the trace job at its full size, as users do today.
	Moldable() bool
	// Continuation: waiting jobs are replanned (scheduler.Replan): moved when another
	// site would clearly start them sooner.
	Continuation() bool
	choose(r *runner, js *jobState, snap *model.ResourceSnapshot) (*placement, error)
}

// NewPolicy returns the named policy.
func NewPolicy(name string) (Policy, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case PolicyHome:
		return homePolicy{}, nil
	case PolicyRandom:
		return pickPolicy{name: PolicyRandom}, nil
	case PolicyRoundRobin, "rr":
		return pickPolicy{name: PolicyRoundRobin}, nil
	case PolicyLeastQueued:
		return pickPolicy{name: PolicyLeastQueued}, nil
	case PolicyEarliestStart:
		return pickPolicy{name: PolicyEarliestStart}, nil
	case PolicyMosaic:
		return mosaicPolicy{}, nil
	case PolicyClairvoyant, PolicyOracle, "clairvoyant":
		return clairvoyantPolicy{}, nil
	}
	return nil, fmt.Errorf("unknown policy %q; choose from %s (or all)", name, strings.Join(PolicyNames, ", "))
}

// ParsePolicies parses a comma-separated list ("all" = every policy); duplicates are
// dropped, order is kept.
func ParsePolicies(list string) ([]Policy, error) {
	var out []Policy
	seen := map[string]bool{}
	for _, f := range model.SplitList(list) {
		names := []string{f}
		if strings.EqualFold(f, "all") {
			names = PolicyNames
		}
		for _, n := range names {
			p, err := NewPolicy(n)
			if err != nil {
				return nil, err
			}
			if !seen[p.Name()] {
				seen[p.Name()] = true
				out = append(out, p)
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no policy given; choose from %s (or all)", strings.Join(PolicyNames, ", "))
	}
	return out, nil
}

// feasible runs the scheduler's rule chain, sizing and heuristic ranker (without
// site estimates' influence on the baselines' choice) and returns the ranked feasible
// candidates; none (nil, nil) when nothing is feasible now.
func (r *runner) feasible(js *jobState, snap *model.ResourceSnapshot, opts scheduler.PlaceOptions) ([]*scheduler.Candidate, error) {
	opts.NoLLM = true
	d, err := r.sched.Place(r.ctx, &js.task, snap, opts)
	if errors.Is(err, scheduler.ErrNoFeasible) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return d.Feasible(), nil
}

// bySystem keeps the best-ranked candidate of each system, in rank order.
func bySystem(cands []*scheduler.Candidate) []*scheduler.Candidate {
	var out []*scheduler.Candidate
	seen := map[string]bool{}
	for _, c := range cands {
		if !seen[c.System] {
			seen[c.System] = true
			out = append(out, c)
		}
	}
	return out
}

// homePolicy always submits to the user's home system (the scheduler pinned there
// picks the partition).
type homePolicy struct{}

func (homePolicy) Name() string       { return PolicyHome }
func (homePolicy) Moldable() bool     { return false }
func (homePolicy) Continuation() bool { return false }
func (homePolicy) choose(r *runner, js *jobState, snap *model.ResourceSnapshot) (*placement, error) {
	sys := r.cfg.Home
	if r.fixed != nil {
		sys = r.fixed[js.idx]
	}
	cands, err := r.feasible(js, snap, scheduler.PlaceOptions{Target: &model.Target{System: sys}})
	if err != nil || len(cands) == 0 {
		return nil, err
	}
	return r.fromCandidate(js, cands[0])
}

// pickPolicy chooses a system among those with a feasible candidate: at random,
// round-robin in federation order, by the shortest queue in the probe, or by each
// site's own backfill estimate (sbatch -M).
type pickPolicy struct{ name string }

func (p pickPolicy) Name() string     { return p.name }
func (pickPolicy) Moldable() bool     { return false }
func (pickPolicy) Continuation() bool { return false }
func (p pickPolicy) choose(r *runner, js *jobState, snap *model.ResourceSnapshot) (*placement, error) {
	all, err := r.feasible(js, snap, scheduler.PlaceOptions{})
	if err != nil || len(all) == 0 {
		return nil, err
	}
	var c *scheduler.Candidate
	switch p.name {
	case PolicyRandom:
		sys := bySystem(all)
		slices.SortFunc(sys, func(a, b *scheduler.Candidate) int { return r.sysIndex(a.System) - r.sysIndex(b.System) })
		c = sys[r.rng.IntN(len(sys))]
	case PolicyRoundRobin:
		nsys := len(r.cfg.Federation.Systems)
		sys := bySystem(all)
		for k := range nsys {
			name := r.cfg.Federation.Systems[(r.rr+k)%nsys].Name
			if i := slices.IndexFunc(sys, func(x *scheduler.Candidate) bool { return x.System == name }); i >= 0 {
				c = sys[i]
				r.rr = (r.rr + k + 1) % nsys
				break
			}
		}
	case PolicyLeastQueued:
		c = all[0]
		for _, x := range all[1:] {
			if x.Record.PendingJobs < c.Record.PendingJobs {
				c = x
			}
		}
	case PolicyEarliestStart:
		est := estimator{r.w}
		var best time.Time
		for _, x := range all {
			t, err := est.EstimateStart(r.ctx, x.System, *x.Sizing)
			if err != nil {
				continue
			}
			if c == nil || t.Before(best) {
				c, best = x, t
			}
		}
		if c == nil {
			return nil, nil
		}
		pl, err := r.fromCandidate(js, c)
		if err == nil {
			pl.est = best
		}
		return pl, err
	}
	return r.fromCandidate(js, c)
}

func (r *runner) sysIndex(name string) int {
	for i, s := range r.cfg.Federation.Systems {
		if s.Name == name {
			return i
		}
	}
	return len(r.cfg.Federation.Systems)
}

// mosaicPolicy is the production path: rule chain, sizing within the envelope, the
// heuristic ranker with site estimates, and replanning of waiting jobs.
type mosaicPolicy struct{}

func (mosaicPolicy) Name() string       { return PolicyMosaic }
func (mosaicPolicy) Moldable() bool     { return true }
func (mosaicPolicy) Continuation() bool { return true }
func (mosaicPolicy) choose(r *runner, js *jobState, snap *model.ResourceSnapshot) (*placement, error) {
	d, err := r.sched.Place(r.ctx, &js.task, snap, scheduler.PlaceOptions{NoLLM: true})
	if errors.Is(err, scheduler.ErrNoFeasible) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return r.fromCandidate(js, d.ChosenCandidate())
}

// clairvoyantPolicy (clairvoyant-greedy, formerly "oracle") is greedy with perfect
// runtime knowledge: for every feasible candidate (sized by the scheduler
// pinned to that system) it forks the partition's model and simulates it forward with
// the exact runtimes of every job there (and the background arrivals the model will
// really generate), and picks the candidate where the job really starts first. It
// cannot know federated jobs that arrive later, and a job it starts sooner by shrinking
// holds its cores longer: a heuristic, not a bound.
type clairvoyantPolicy struct{}

func (clairvoyantPolicy) Name() string       { return PolicyClairvoyant }
func (clairvoyantPolicy) Moldable() bool     { return true }
func (clairvoyantPolicy) Continuation() bool { return false }
func (clairvoyantPolicy) choose(r *runner, js *jobState, snap *model.ResourceSnapshot) (*placement, error) {
	all, err := r.feasible(js, snap, scheduler.PlaceOptions{})
	if err != nil || len(all) == 0 {
		return nil, err
	}
	// Ask the cheapest-looking candidates first so the bound cuts the others short.
	est := estimator{r.w}
	type cand struct {
		c   *scheduler.Candidate
		est time.Time
	}
	cs := make([]cand, 0, len(all))
	for _, c := range all {
		t, err := est.EstimateStart(r.ctx, c.System, *c.Sizing)
		if err != nil {
			t = r.w.now.Add(r.cfg.Horizon)
		}
		cs = append(cs, cand{c, t})
	}
	slices.SortStableFunc(cs, func(a, b cand) int { return a.est.Compare(b.est) })
	var best *placement
	limit := r.w.now.Add(r.cfg.Horizon)
	for _, x := range cs {
		pl, err := r.fromCandidate(js, x.c)
		if err != nil {
			return nil, err
		}
		spec, _, run := shape(js, pl)
		t, ok, err := pl.unit.whatIf(r.w.now, request(&spec, run), limit)
		if err != nil {
			continue // refused there (a limit): not a candidate
		}
		if ok && (best == nil || t.Before(best.est)) {
			pl.est = t
			best = pl
			limit = t
			if !t.After(r.w.now) {
				break // starts now: nothing can beat it
			}
		}
	}
	return best, nil
}
