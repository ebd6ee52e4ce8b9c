package scheduler

import (
	"slices"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

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

// MaxRules is the most rules a chain may hold (the first failing one is kept as a
// failCode, a byte).
const MaxRules = 63

// quickRule is implemented by the built-in rules: fails gives Check's pass/fail for
// the record (sys is its system's health) without building a Candidate, a Verdict or
// a reason. It must agree with Check(r, c).Pass for every input; TestQuickRulesAgree
// checks that over varied records and envelopes.
type quickRule interface {
	fails(r *Request, rec *model.ResourceRecord, sys model.Health) bool
}

// ruleKind names a built-in rule so the decision pass (firstFailure) can call its fails method
// directly (a static, inlinable call in a switch) instead of through the Rule
// interface: with ~7 rules per candidate and 1,000 candidates per placement, the
// interface calls returning 40-byte Verdicts were half of Place's time.
type ruleKind uint8

const (
	kindOther ruleKind = iota // any other Rule: called through the interface
	kindPin
	kindExclude
	kindHealth
	kindAuth
	kindArch
	kindAccelerator
	kindGPUMemory
	kindFeatures
	kindContainer
	kindWalltime
	kindCapacity
	kindUserLimits
)

func kindOf(rule Rule) ruleKind {
	switch rule.(type) {
	case PinRule:
		return kindPin
	case ExcludeRule:
		return kindExclude
	case HealthRule:
		return kindHealth
	case AuthRule:
		return kindAuth
	case ArchRule:
		return kindArch
	case AcceleratorRule:
		return kindAccelerator
	case GPUMemoryRule:
		return kindGPUMemory
	case FeaturesRule:
		return kindFeatures
	case ContainerRule:
		return kindContainer
	case WalltimeRule:
		return kindWalltime
	case CapacityRule:
		return kindCapacity
	case UserLimitsRule:
		return kindUserLimits
	}
	return kindOther
}

// activeRule is a rule that must run per candidate, with its failCode.
type activeRule struct {
	rule Rule
	kind ruleKind
	code failCode
}

// splitRules returns the rules that must run per candidate and the failCode every
// candidate gets from the constant ones (0 when they all pass). len(rules) must be
// at most MaxRules.
func splitRules(rules []Rule, r *Request) (active []activeRule, constCode failCode) {
	active = make([]activeRule, 0, len(rules))
	for i, rule := range rules {
		code := failCode(i + 1)
		if cr, ok := rule.(ConstantRule); ok {
			if pass, ok := cr.Constant(r); ok {
				if !pass && constCode == 0 {
					constCode = code
				}
				continue
			}
		}
		active = append(active, activeRule{rule: rule, kind: kindOf(rule), code: code})
	}
	// The decision pass only needs to know whether some rule fails (Explain re-runs
	// them all, in chain order, for the trace), and built-in rules are pure, so they
	// can run in any order. Running the most selective, cheapest ones first means most
	// infeasible records are rejected after reading one or two cache lines of their
	// 400-byte record. Other rules keep their order, after the built-in ones (so they
	// still only see records that earlier built-in rules would have let through).
	slices.SortStableFunc(active, func(a, b activeRule) int {
		return int(fastOrder[a.kind]) - int(fastOrder[b.kind])
	})
	return active, constCode
}

// fastOrder is the order in which firstFailure runs the built-in rules: accelerator
// and GPU memory reject most partitions for a GPU task and read the record's GPU
// fields, which sit together; walltime and capacity next; auth, health and user
// limits rarely fail. kindOther rules run last.
var fastOrder = [...]uint8{
	kindAccelerator: 0,
	kindGPUMemory:   1,
	kindArch:        2,
	kindPin:         3,
	kindExclude:     4,
	kindWalltime:    5,
	kindCapacity:    6,
	kindFeatures:    7,
	kindContainer:   8,
	kindAuth:        9,
	kindHealth:      10,
	kindUserLimits:  11,
	kindOther:       12,
}

// hasOther reports whether any active rule must be called through the Rule interface
// (and so needs a Candidate to look at).
func hasOther(active []activeRule) bool {
	for _, a := range active {
		if a.kind == kindOther {
			return true
		}
	}
	return false
}

// firstFailure runs the active rules on rec without building reasons and returns the
// failCode of the first rule that fails (in splitRules' order), or 0 when all pass. scratch is only
// read by rules outside the built-in set (kindOther); it must describe rec then.
//
// It stops at the first failing rule: the decision pass only needs to know whether a
// candidate is feasible, and Explain re-runs every rule with reasons for the trace.
func firstFailure(active []activeRule, r *Request, rec *model.ResourceRecord, sys model.Health, scratch *Candidate) failCode {
	for i := range active {
		a := &active[i]
		var bad bool
		switch a.kind {
		case kindPin:
			bad = PinRule{}.fails(r, rec, sys)
		case kindExclude:
			bad = ExcludeRule{}.fails(r, rec, sys)
		case kindHealth:
			bad = HealthRule{}.fails(r, rec, sys)
		case kindAuth:
			bad = AuthRule{}.fails(r, rec, sys)
		case kindArch:
			bad = ArchRule{}.fails(r, rec, sys)
		case kindAccelerator:
			bad = AcceleratorRule{}.fails(r, rec, sys)
		case kindGPUMemory:
			bad = GPUMemoryRule{}.fails(r, rec, sys)
		case kindFeatures:
			bad = FeaturesRule{}.fails(r, rec, sys)
		case kindContainer:
			bad = ContainerRule{}.fails(r, rec, sys)
		case kindWalltime:
			bad = WalltimeRule{}.fails(r, rec, sys)
		case kindCapacity:
			bad = CapacityRule{}.fails(r, rec, sys)
		case kindUserLimits:
			bad = UserLimitsRule{}.fails(r, rec, sys)
		default:
			bad = !a.rule.Check(r, scratch).Pass
		}
		if bad {
			return a.code
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

// Every built-in rule has a fast pass/fail (compile-time check for firstFailure's switch).
var _ = []quickRule{PinRule{}, ExcludeRule{}, HealthRule{}, AuthRule{}, ArchRule{}, AcceleratorRule{},
	GPUMemoryRule{}, FeaturesRule{}, ContainerRule{}, WalltimeRule{}, CapacityRule{}, UserLimitsRule{}}
