package scheduler

// Rule is one feasibility check, evaluated per candidate. A rule lives in its own file;
// adding one is that file plus one line in DefaultRules.
type Rule interface {
	// Name is the short identifier shown in traces ("walltime", "capacity").
	Name() string
	// Check says whether the candidate passes and why, in words a user can act on.
	Check(r *Request, c *Candidate) Verdict
}

// ConstantRule is optionally implemented by a rule whose verdict, for some requests,
// is the same for every candidate (ArchRule when the envelope names no arch, PinRule
// when the task is not pinned, ...). Place then evaluates it once per placement instead
// of once per candidate; the trace still shows its verdict on every candidate. When ok
// is true, Check must return the same Pass for every candidate.
type ConstantRule interface {
	Constant(r *Request) (pass bool, ok bool)
}

// DefaultRules is the rule chain, assembled here and only here. Every rule runs on every
// candidate so the trace shows each verdict; the order sets the order of the verdicts in
// the trace and which failure is quoted first in errors, so the cheap and decisive rules
// that remove whole systems come first and the arithmetic on node shapes comes last:
//
//  1. pin, exclude: string compares that remove whole systems by the caller's choice.
//  2. health: a system that is down or needs a login is out whatever its shape.
//  3. authorization: no account there means nothing else matters.
//  4. arch, accelerator, gpu_memory, features, container: static hardware/software
//     properties of the partition against the envelope's constraints.
//  5. walltime, capacity: limits that compare the envelope's minimum with the partition.
//  6. user_limits: depends on the user's current jobs, the most volatile input.
func DefaultRules() []Rule {
	return []Rule{
		PinRule{},
		ExcludeRule{},
		HealthRule{},
		AuthRule{},
		ArchRule{},
		AcceleratorRule{},
		GPUMemoryRule{},
		FeaturesRule{},
		ContainerRule{},
		WalltimeRule{},
		CapacityRule{},
		UserLimitsRule{},
	}
}

// MaxRules is the most rules a chain may hold (verdicts are kept as a bit mask).
const MaxRules = 63

// activeRule is a rule that must run per candidate, with its bit in the fail mask.
type activeRule struct {
	rule Rule
	bit  uint64
}

// splitRules returns the rules that must run per candidate and the fail mask every
// candidate gets from the constant ones.
func splitRules(rules []Rule, r *Request) (active []activeRule, constMask uint64) {
	active = make([]activeRule, 0, len(rules))
	for i, rule := range rules {
		bit := uint64(1) << uint(i)
		if cr, ok := rule.(ConstantRule); ok {
			if pass, ok := cr.Constant(r); ok {
				if !pass {
					constMask |= bit
				}
				continue
			}
		}
		active = append(active, activeRule{rule: rule, bit: bit})
	}
	return active, constMask
}

// failMask runs the active rules on c without building reasons and returns the bit of
// the first rule that fails (bit i for rule i), or 0 when all pass.
//
// It stops at the first failing rule: the decision pass only needs to know whether a
// candidate is feasible, and Explain re-runs every rule with reasons for the trace.
func failMask(active []activeRule, r *Request, c *Candidate) uint64 {
	for _, a := range active {
		if !a.rule.Check(r, c).Pass {
			return a.bit
		}
	}
	return 0
}

// explainVerdicts runs every rule on c building reasons (r must be explaining).
func explainVerdicts(rules []Rule, r *Request, c *Candidate) []Verdict {
	out := make([]Verdict, len(rules), len(rules)+1)
	for i, rule := range rules {
		v := rule.Check(r, c)
		v.Rule = rule.Name()
		out[i] = v
	}
	return out
}
