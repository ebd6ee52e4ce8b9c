package v1

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestDurationJSON(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		out  string
	}{
		{`"48h"`, 48 * time.Hour, `"48h"`},
		{`"1h30m"`, 90 * time.Minute, `"1h30m"`},
		{`"45s"`, 45 * time.Second, `"45s"`},
		{`"0s"`, 0, `"0s"`},
		{`"1.5s"`, 1500 * time.Millisecond, `"1.5s"`},
		{`3600`, time.Hour, `"1h"`},
		{`0.5`, 500 * time.Millisecond, `"500ms"`},
	} {
		var d Duration
		if err := json.Unmarshal([]byte(c.in), &d); err != nil || d.D() != c.want {
			t.Errorf("%s: got %v, %v; want %v", c.in, d.D(), err, c.want)
			continue
		}
		if b, _ := json.Marshal(d); string(b) != c.out {
			t.Errorf("%s re-encodes as %s, want %s", c.in, b, c.out)
		}
	}
	d := Duration(time.Minute)
	if err := json.Unmarshal([]byte(`null`), &d); err != nil || d.D() != time.Minute {
		t.Errorf("null changed the value: %v %v", d, err)
	}
	for _, bad := range []string{`"2 days"`, `"1:30:00"`, `{}`, `"1e400h"`, `9.3e18`} {
		if err := json.Unmarshal([]byte(bad), &d); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestDecisionTrace(t *testing.T) {
	for _, raw := range []string{"", "null"} {
		td := TaskDetail{Decision: json.RawMessage(raw)}
		if d, err := td.DecisionTrace(); d != nil || err != nil {
			t.Errorf("%q: %v %v, want nothing", raw, d, err)
		}
	}
	td := TaskDetail{Task: Task{ID: "t1"}, Decision: json.RawMessage(`{"chosen":"a/p/x","candidates":[{"system":"b","partition":"q","account":"y"},{"system":"a","partition":"p","account":"x","rank":1}]}`)}
	d, err := td.DecisionTrace()
	if err != nil {
		t.Fatal(err)
	}
	if c := d.ChosenCandidate(); c == nil || c.Rank != 1 || c.Key() != "a/p/x" {
		t.Errorf("chosen candidate %+v", c)
	}
	td.Decision = json.RawMessage(`{"candidates":7}`)
	if _, err := td.DecisionTrace(); err == nil || !strings.Contains(err.Error(), "task t1") {
		t.Errorf("a damaged trace: %v, want an error naming the task", err)
	}
}

func TestErrorMessage(t *testing.T) {
	if got := (&Error{Status: 404, Title: "Not Found", Detail: "task x not found"}).Error(); got != "task x not found" {
		t.Errorf("got %q", got)
	}
	if got := (&Error{Status: 503, Title: "Service Unavailable"}).Error(); got != "503 Service Unavailable" {
		t.Errorf("got %q", got)
	}
	long := strings.Repeat("x", 200)
	e := &Error{Status: 422, Title: "Unprocessable Entity", Detail: "validation failed", Errors: []ErrorItem{
		{Message: "expected number >= -1", Location: "query.max_queue", Value: -7.0},
		{Message: "expected length <= 128", Location: "query.system", Value: long},
		{Message: "expected string", Location: "body.policy.env.API_KEY", Value: "sk-secret-value"},
		{Message: "unexpected property"},
	}}
	got := e.Error()
	for _, want := range []string{"validation failed; query.max_queue: expected number >= -1 (value -7)",
		"; query.system: expected length <= 128 (value " + strings.Repeat("x", maxValueText) + "…)",
		"; body.policy.env.API_KEY: expected string;", "; unexpected property"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, strings.Repeat("x", maxValueText+1)) {
		t.Errorf("%q repeats all of a long value", got)
	}
	if strings.Contains(got, "sk-secret") {
		t.Errorf("%q repeats a body value (it may be a secret)", got)
	}
	var back Error
	if err := json.Unmarshal([]byte(`{"status":422,"title":"Unprocessable Entity","detail":"validation failed","errors":[{"message":"m","location":"query.gpus","value":-1}]}`), &back); err != nil ||
		len(back.Errors) != 1 || back.Errors[0].Location != "query.gpus" || back.Errors[0].Value != -1.0 {
		t.Errorf("huma's problem decodes as %+v (%v)", back, err)
	}
}

func TestErrorTemporary(t *testing.T) {
	for status, want := range map[int]bool{502: true, 503: true, 504: true, 500: false, 404: false, 422: false, 401: false, 409: false} {
		if got := (&Error{Status: status}).Temporary(); got != want {
			t.Errorf("%d: Temporary() = %v, want %v", status, got, want)
		}
	}
}
