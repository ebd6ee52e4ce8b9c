package scheduler

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"unicode/utf8"
)

// The explained trace of a 1,000-partition placement is about 1 MB of JSON: 1,000
// candidates with a dozen verdicts each. Encoding it by reflection cost five times
// as much as placing and explaining, so the candidates are written here, field by
// field, byte for byte what encoding/json writes for them (TestTraceJSONIsEncodingJSON
// compares the two on fixture and random federations); the rest of the decision, and
// a feasible candidate's job spec, go through encoding/json.

// appendCandidates writes cands as encoding/json would.
func appendCandidates(b []byte, cands []*Candidate) ([]byte, error) {
	if cands == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, c := range cands {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendCandidate(b, c); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

func appendCandidate(b []byte, c *Candidate) ([]byte, error) {
	if c == nil {
		return append(b, "null"...), nil
	}
	b = append(b, `{"system":`...)
	b = appendString(b, c.System)
	b = append(b, `,"partition":`...)
	b = appendString(b, c.Partition)
	b = append(b, `,"account":`...)
	b = appendString(b, c.Account)
	if c.SystemHealth != "" {
		b = append(b, `,"system_health":`...)
		b = appendString(b, string(c.SystemHealth))
	}
	b = append(b, `,"verdicts":`...)
	if c.Verdicts == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i := range c.Verdicts {
			v := &c.Verdicts[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"rule":`...)
			b = appendString(b, v.Rule)
			b = append(b, `,"pass":`...)
			b = strconv.AppendBool(b, v.Pass)
			b = append(b, `,"reason":`...)
			b = appendString(b, v.Reason)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	b = append(b, `,"feasible":`...)
	b = strconv.AppendBool(b, c.Feasible)
	if c.Sizing != nil {
		js, err := json.Marshal(c.Sizing)
		if err != nil {
			return nil, err
		}
		b = append(b, `,"sizing":`...)
		b = append(b, js...)
	}
	if c.SizingNote != "" {
		b = append(b, `,"sizing_note":`...)
		b = appendString(b, c.SizingNote)
	}
	if c.WalltimeNote != "" {
		b = append(b, `,"walltime_note":`...)
		b = appendString(b, c.WalltimeNote)
	}
	var err error
	s := &c.Scores
	for _, f := range [...]struct {
		key string
		v   float64
	}{{`,"scores":{"wait":`, s.Wait}, {`,"size":`, s.Size}, {`,"fit":`, s.Fit}, {`,"cost":`, s.Cost}, {`,"total":`, s.Total}} {
		b = append(b, f.key...)
		if b, err = appendFloat(b, f.v); err != nil {
			return nil, err
		}
	}
	b = append(b, `},"est_wait":`...)
	b = appendString(b, c.EstWait.String()) // model.Duration's MarshalJSON
	if c.WaitSource != "" {
		b = append(b, `,"wait_source":`...)
		b = appendString(b, c.WaitSource)
	}
	if c.SiteWait != nil {
		b = append(b, `,"site_wait":`...)
		b = appendString(b, c.SiteWait.String())
	}
	b = append(b, `,"cost_su":`...)
	if b, err = appendFloat(b, c.CostSU); err != nil {
		return nil, err
	}
	if c.OverWait {
		b = append(b, `,"over_max_queue_wait":true`...)
	}
	b = appendIntField(b, `,"heuristic_rank":`, c.HeuristicRank)
	b = appendIntField(b, `,"ai_rank":`, c.AIRank)
	if c.AIReason != "" {
		b = append(b, `,"ai_reason":`...)
		b = appendString(b, c.AIReason)
	}
	b = appendIntField(b, `,"rank":`, c.Rank)
	return append(b, '}'), nil
}

// appendIntField writes an omitempty int field.
func appendIntField(b []byte, key string, v int) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), int64(v), 10)
}

// appendFloat writes f as encoding/json writes a float64 (and, like it, refuses NaN and
// the infinities).
func appendFloat(b []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, &json.UnsupportedValueError{Str: strconv.FormatFloat(f, 'g', -1, 64)}
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // clean up e-09 to e-9
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, nil
}

// appendString writes s as a JSON string. Printable ASCII other than the characters
// encoding/json escapes (", \, and <, >, & for HTML) is copied; anything else goes
// through encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			js, _ := json.Marshal(s) // a string always encodes
			return append(b, js...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// plainByte marks the bytes appendString copies as they are.
var plainByte = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

// candidatesKey is where encoding/json writes Decision.Candidates when it is nil; no
// string value can contain it unescaped.
var candidatesKey = []byte(`"candidates":null`)

// marshalDecision encodes an explained decision: its other fields by encoding/json,
// its candidates by appendCandidates, in encoding/json's field order.
func marshalDecision(d *Decision) ([]byte, error) {
	type plain Decision
	head := *(*plain)(d)
	head.Candidates, head.lazy = nil, nil
	hb, err := json.Marshal(&head)
	if err != nil {
		return nil, err
	}
	at := bytes.Index(hb, candidatesKey)
	if at < 0 { // cannot happen: the field has no omitempty
		return json.Marshal((*plain)(d))
	}
	at += len(`"candidates":`)
	out := make([]byte, 0, len(hb)+1024*len(d.Candidates))
	out = append(out, hb[:at]...)
	if out, err = appendCandidates(out, d.Candidates); err != nil {
		return nil, err
	}
	return append(out, hb[at+len("null"):]...), nil
}
