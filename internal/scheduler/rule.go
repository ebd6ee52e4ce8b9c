package scheduler

import (
	"strings"
	"unsafe"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// Rule is one feasibility check, evaluated per candidate. Adding a built-in rule is one
// file (the rule's type with its test and its reason, see builtin) plus its line in
// DefaultRules; a rule from outside the package implements Check alone.
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
// is true, Check must return the same Pass for every candidate (TestRulesOneDefinition
// checks that for the built-in rules).
type ConstantRule interface {
	Constant(r *Request) (pass bool, ok bool)
}

// DefaultRules is the rule chain and its order, assembled here and only here. The
// decision pass runs the rules in this order and stops at a candidate's first failure;
// the trace shows every verdict in this order, and errors quote the first failure. So
// the cheap and decisive rules that remove whole systems come first and the arithmetic
// on node shapes last; each line says why it sits where it does.
func DefaultRules() []Rule {
	return []Rule{
		PinRule{},         // the caller's choice removes whole systems (constant when not pinned)
		ExcludeRule{},     // likewise excluded and avoided systems (constant when none)
		HealthRule{},      // a system down or needing a login is out whatever its shape
		AuthRule{},        // no account there means nothing else matters
		ArchRule{},        // static hardware: the partition's arch (constant when unconstrained)
		AcceleratorRule{}, // rejects most partitions of a GPU task, so the rules below rarely run
		GPUMemoryRule{},   // after accelerator: it defers to it on CPU partitions
		FeaturesRule{},    // static software: required features (constant when none)
		ContainerRule{},   // static software: a runtime for the image (constant when none)
		WalltimeRule{},    // limits: the envelope's minimum walltime against the partition's cap
		CapacityRule{},    // limits: the node-shape arithmetic, the costliest test
		UserLimitsRule{},  // the user's current jobs, the most volatile input, last
	}
}

// MaxRules is the most rules a chain may hold (the first failing one is kept as a
// failCode, a byte).
const MaxRules = 63

// builtin is a rule written once, in its own file: test decides and reason words the
// decision. Both are pure functions of the request, the record and its system's health
// (sys), so the decision pass calls test alone (no Candidate, Verdict or string) and the
// explained trace, which calls both (see verdict), gives the verdicts the decision saw.
// A built-in rule's Check is verdict.
type builtin interface {
	Rule
	// test says whether rec passes and which case decided (see outcome).
	test(r *Request, rec *model.ResourceRecord, sys model.Health) outcome
	// reason words the outcome o that test gave for the same inputs.
	// Dynamic reasons are written with w.join (w may be nil).
	reason(w *words, r *Request, rec *model.ResourceRecord, sys model.Health, o outcome) string
}

// outcome is a built-in rule's answer on one record without its words: whether it
// fails, and which case decided (a small constant of the rule's file), from which the
// rule's reason renders the words only when the trace is explained.
type outcome uint8

const failBit outcome = 0x80

// pass and fail are the outcomes of case why (below 0x80) of a rule.
func pass(why uint8) outcome { return outcome(why) }
func fail(why uint8) outcome { return failBit | outcome(why) }

func (o outcome) failed() bool { return o&failBit != 0 }
func (o outcome) why() uint8   { return uint8(o &^ failBit) }

// verdict is a built-in rule's Check: its test with the reason rendered.
func verdict(b builtin, r *Request, c *Candidate) Verdict {
	o := b.test(r, c.Record, c.SystemHealth)
	return Verdict{Pass: !o.failed(), Reason: b.reason(nil, r, c.Record, c.SystemHealth, o)}
}

// chain is a rule chain compiled for one request: the rules that must run per record
// (the others are constant for the request), in chain order, with their failCodes.
type chain struct {
	steps []step
	other bool // some step is not built in: it needs a Candidate to look at
}

// step is one rule of a chain: a built-in rule is tested directly (b), any other
// through Check.
type step struct {
	b    builtin
	rule Rule
	code failCode
}

// compileChain evaluates the rules that are constant for r (ConstantRule) once and
// returns the chain of the others, and the failCode every record gets from the
// constant ones (0 when they all pass). len(rules) must be at most MaxRules.
func compileChain(rules []Rule, r *Request) (c chain, constCode failCode) {
	c.steps = make([]step, 0, len(rules))
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
		b, _ := rule.(builtin)
		c.other = c.other || b == nil
		c.steps = append(c.steps, step{b: b, rule: rule, code: code})
	}
	return c, constCode
}

// fails returns the failCode of the first rule of c that rec fails, or 0 when it passes
// them all; sys is its system's health and scratch, read only by rules that are not
// built in, describes it.
func (c *chain) firstFailure(r *Request, rec *model.ResourceRecord, sys model.Health, scratch *Candidate) failCode {
	for i := range c.steps {
		st := &c.steps[i]
		if st.b != nil {
			if st.b.test(r, rec, sys).failed() {
				return st.code
			}
		} else if !st.rule.Check(r, scratch).Pass {
			return st.code
		}
	}
	return 0
}

// runChain is the decision pass: it runs the rules on every record until one fails,
// pass/fail only (no reason strings, no Verdicts), writes each record's failCode into
// codes (0 when feasible) and returns the number of feasible records. A Candidate is
// filled in only when the chain holds rules that are not built in, which need one.
func runChain(rules []Rule, r *Request, recs []model.ResourceRecord, health *healthIndex, codes []failCode) (nf int) {
	c, constCode := compileChain(rules, r)
	if constCode != 0 {
		for i := range codes {
			codes[i] = constCode
		}
		return 0
	}
	var scratch *Candidate
	if c.other {
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
		if codes[i] = c.firstFailure(r, rec, sys, scratch); codes[i] == 0 {
			nf++
		}
	}
	return nf
}

// explainer words every rule's verdict on candidates for one explained trace.
type explainer struct {
	steps []explainStep // every rule of the chain, in order
	req   *Request      // explaining
	w     words
}

type explainStep struct {
	step
	name string
	// fixed is set for a built-in rule that is constant for the request: its verdict,
	// reason included, is the same on every candidate (TestRulesWrittenOnce checks
	// that), so it is worded once.
	fixed  bool
	pass   bool
	reason string
	memo   reasonMemo
}

func newExplainer(rules []Rule, r *Request) *explainer {
	e := &explainer{steps: make([]explainStep, len(rules)), req: r}
	for i, rule := range rules {
		st := &e.steps[i]
		b, _ := rule.(builtin)
		st.step, st.name = step{b: b, rule: rule, code: failCode(i + 1)}, rule.Name()
		if cr, ok := rule.(ConstantRule); ok && b != nil {
			if _, ok := cr.Constant(r); ok {
				st.fixed = true
				var rec model.ResourceRecord // constant: any record gives the verdict
				o := b.test(r, &rec, "")
				st.pass, st.reason = !o.failed(), b.reason(nil, r, &rec, "", o)
			}
		}
	}
	return e
}

// verdicts writes every rule's verdict on c, with its reason, into out (one per rule).
// The fields are written one by one: out is fresh slab memory, and copying whole
// Verdicts costs a bulk write barrier each while the collector marks.
func (e *explainer) verdicts(c *Candidate, out []Verdict) {
	for i := range e.steps {
		st, v := &e.steps[i], &out[i]
		v.Rule = st.name
		switch {
		case st.fixed:
			v.Pass, v.Reason = st.pass, st.reason
		case st.b != nil:
			o := st.b.test(e.req, c.Record, c.SystemHealth)
			e.w.memo = &st.memo
			v.Pass, v.Reason = !o.failed(), st.b.reason(&e.w, e.req, c.Record, c.SystemHealth, o)
			e.w.memo = nil
		default:
			cv := st.rule.Check(e.req, c)
			v.Pass, v.Reason = cv.Pass, cv.Reason
		}
	}
}

// words holds the reasons of one explained trace: each dynamic reason is a slice of a
// shared block of bytes rather than its own allocation (an explained trace of 1,000
// partitions words about 5,000 of them). Bytes handed out are never written again: a
// full block is left to the strings that use it and a new one started. A nil *words
// (a rule's Check called on its own) allocates each reason.
type words struct {
	buf  []byte
	durs [4]struct { // the last durations worded (partitions share a few walltime caps)
		d model.Duration
		s string
	}
	nd, next int
	// memo, when set, is the current rule's last few reasons: records of one shape
	// repeat them, and a repeated one is returned instead of written again.
	memo *reasonMemo
}

type reasonMemo struct {
	s    [4]string
	next int
}

// equalParts reports whether s is the concatenation of parts (whose lengths sum to len(s)).
func equalParts(s string, parts []string) bool {
	for _, p := range parts {
		if s[:len(p)] != p {
			return false
		}
		s = s[len(p):]
	}
	return true
}

// wordsBlock is the size of a words block: large enough that a trace needs a few, small
// enough that one reason kept alive keeps little else.
const wordsBlock = 16 << 10

// join returns the concatenation of parts.
func (w *words) join(parts ...string) string {
	if w == nil {
		return strings.Join(parts, "")
	}
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	if n == 0 {
		return ""
	}
	m := w.memo
	if m != nil {
		for _, s := range m.s {
			if len(s) == n && equalParts(s, parts) {
				return s
			}
		}
	}
	buf := w.buf // appended to locally: a store to w.buf is a write barrier while the GC marks
	if cap(buf)-len(buf) < n {
		buf = make([]byte, 0, max(wordsBlock, n))
	}
	start := len(buf)
	for _, p := range parts {
		buf = append(buf, p...)
	}
	w.buf = buf
	s := unsafe.String(&buf[start], n)
	if m != nil {
		m.s[m.next%len(m.s)] = s
		m.next++
	}
	return s
}

// duration is d.String(), remembered for the last few durations.
func (w *words) duration(d model.Duration) string {
	if w == nil {
		return d.String()
	}
	for i := range w.nd {
		if w.durs[i].d == d {
			return w.durs[i].s
		}
	}
	s := d.String()
	i := w.next % len(w.durs)
	w.durs[i].d, w.durs[i].s = d, s
	w.next, w.nd = w.next+1, min(w.nd+1, len(w.durs))
	return s
}
