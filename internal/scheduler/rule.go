package scheduler

import (
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

// ruleKind names a built-in rule so the decision pass (chain.fails) can call its fails method
// directly (a static, inlinable call) instead of through the Rule
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

// chain is a rule chain compiled for one request: which built-in rules must run per
// record (the others are constant for the request), their failCodes, and the other
// rules, which are called through the Rule interface.
type chain struct {
	builtin uint16                       // bit k set: built-in rule kind k runs per record
	code    [kindUserLimits + 1]failCode // failCode of each built-in kind (its first position)
	other   []otherRule                  // other rules, in chain order
}

type otherRule struct {
	rule Rule
	code failCode
}

func (c *chain) has(k ruleKind) bool { return c.builtin&(1<<k) != 0 }

// compileChain evaluates the rules that are constant for r (ConstantRule) once and
// returns the chain of the others, and the failCode every record gets from the
// constant ones (0 when they all pass). len(rules) must be at most MaxRules.
func compileChain(rules []Rule, r *Request) (c chain, constCode failCode) {
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
		if k := kindOf(rule); k != kindOther {
			if !c.has(k) {
				c.builtin |= 1 << k
				c.code[k] = code
			}
			continue
		}
		c.other = append(c.other, otherRule{rule: rule, code: code})
	}
	return c, constCode
}

// fails returns the failCode of a rule of c that rec fails, or 0 when it passes them
// all; sys is its system's health and scratch, read only by other rules, describes it.
//
// The decision pass only needs to know whether some rule fails (Explain re-runs them
// all, in chain order, for the trace), and built-in rules are pure, so they run in
// the order written here, straight-line code whose tests of c.builtin are the same
// for every record (and so always predicted): accelerator and GPU memory first,
// since they reject most partitions for a GPU task and read the record's GPU fields,
// which sit together; walltime and capacity next; auth, health and user limits rarely
// fail. Other rules run last, in chain order, so they still only see records the
// built-in ones let through.
func (c *chain) fails(r *Request, rec *model.ResourceRecord, sys model.Health, scratch *Candidate) failCode {
	switch {
	case c.has(kindAccelerator) && AcceleratorRule{}.fails(r, rec, sys):
		return c.code[kindAccelerator]
	case c.has(kindGPUMemory) && GPUMemoryRule{}.fails(r, rec, sys):
		return c.code[kindGPUMemory]
	case c.has(kindArch) && ArchRule{}.fails(r, rec, sys):
		return c.code[kindArch]
	case c.has(kindPin) && PinRule{}.fails(r, rec, sys):
		return c.code[kindPin]
	case c.has(kindExclude) && ExcludeRule{}.fails(r, rec, sys):
		return c.code[kindExclude]
	case c.has(kindWalltime) && WalltimeRule{}.fails(r, rec, sys):
		return c.code[kindWalltime]
	case c.has(kindCapacity) && CapacityRule{}.fails(r, rec, sys):
		return c.code[kindCapacity]
	case c.has(kindFeatures) && FeaturesRule{}.fails(r, rec, sys):
		return c.code[kindFeatures]
	case c.has(kindContainer) && ContainerRule{}.fails(r, rec, sys):
		return c.code[kindContainer]
	case c.has(kindAuth) && AuthRule{}.fails(r, rec, sys):
		return c.code[kindAuth]
	case c.has(kindHealth) && HealthRule{}.fails(r, rec, sys):
		return c.code[kindHealth]
	case c.has(kindUserLimits) && UserLimitsRule{}.fails(r, rec, sys):
		return c.code[kindUserLimits]
	}
	for _, o := range c.other {
		if !o.rule.Check(r, scratch).Pass {
			return o.code
		}
	}
	return 0
}

// runChain is the decision pass: it runs the rules on every record until one fails,
// pass/fail only (no reason strings, no Verdicts), writes each record's failCode into
// codes (0 when feasible) and returns the number of feasible records. Built-in rules
// are called directly (static, inlinable calls) instead of through the Rule
// interface; a Candidate is filled in only when the chain holds other rules, which
// need one to look at. It stops at a record's first failing rule (see chain.fails).
func runChain(rules []Rule, r *Request, recs []model.ResourceRecord, health *healthIndex, codes []failCode) (nf int) {
	c, constCode := compileChain(rules, r)
	if constCode != 0 {
		for i := range codes {
			codes[i] = constCode
		}
		return 0
	}
	var scratch *Candidate
	if len(c.other) > 0 {
		scratch = new(Candidate)
	}
	for i := range recs {
		rec := &recs[i]
		// The system's health matters to the built-in rules only when it is unusable;
		// when no system is, skip the lookup (feasible records get theirs later).
		var sys model.Health
		if scratch != nil || health.anyUnusable {
			sys = health.of(rec.System)
		}
		if scratch != nil {
			// Rules read only these fields; setting them one by one avoids zeroing the rest.
			scratch.System, scratch.Partition, scratch.Account = rec.System, rec.Partition, rec.Account
			scratch.Record, scratch.SystemHealth = rec, sys
		}
		if codes[i] = c.fails(r, rec, sys, scratch); codes[i] == 0 {
			nf++
		}
	}
	return nf
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

// Every built-in rule has a fast pass/fail (compile-time check for chain.fails).
var _ = []quickRule{PinRule{}, ExcludeRule{}, HealthRule{}, AuthRule{}, ArchRule{}, AcceleratorRule{},
	GPUMemoryRule{}, FeaturesRule{}, ContainerRule{}, WalltimeRule{}, CapacityRule{}, UserLimitsRule{}}
