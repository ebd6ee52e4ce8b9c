package agent_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mosaic-hpc/mosaic/agent"
)

// TestActionRequestWireShape: the body is what a Python Academy agent reads
// (docs/CAMPAIGNS.md "Academy agents"): pargs/kargs are JSON *texts*, the
// serializations of result and exception null, the header versioned.
func TestActionRequestWireShape(t *testing.T) {
	src, dest := agent.UserID("mosaic"), agent.AgentID("r", "py")
	m, err := agent.NewActionRequest(src, dest, "receive_message", []any{"the task"}, map[string]any{"n": 2})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(m)
	var got struct {
		Header map[string]any `json:"header"`
		Body   map[string]any `json:"body"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"kind": "action-request", "action": "receive_message", "serialization": "json",
		"result_serialization": nil, "exception_serialization": nil, "pargs": `["the task"]`, "kargs": `{"n":2}`}
	if len(got.Body) != len(want) {
		t.Errorf("body has fields %v, want exactly %v", got.Body, want)
	}
	for k, v := range want {
		if got.Body[k] != v {
			t.Errorf("body[%s] = %#v, want %#v", k, got.Body[k], v)
		}
	}
	if got.Header["protocol_version"] != "1" || got.Header["kind"] != "request" {
		t.Errorf("header %v", got.Header)
	}
	call, err := m.DecodeAction()
	if err != nil || call.Action != "receive_message" || len(call.Args) != 1 || string(call.Args[0]) != `"the task"` || string(call.Kwargs["n"]) != "2" {
		t.Errorf("decoded %+v %v", call, err)
	}
	// Replies: result and exception serialized, tag kept.
	r, err := m.ActionResult(map[string]int{"sum": 3})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(r.Body), `"result":["__serialized__","{\"sum\":3}"]`) || r.Header.Tag != m.Header.Tag || r.Header.Kind != agent.KindResponse || r.Header.ProtocolVersion != "1" {
		t.Errorf("action-response %s %+v", r.Body, r.Header)
	}
	if v, err := r.Result(); err != nil || string(v) != `{"sum":3}` {
		t.Errorf("result %s %v", v, err)
	}
	u, _ := m.UserError("Traceback: boom")
	if !strings.Contains(string(u.Body), `"exception":["__serialized__","{\"__exception__\":true,\"exception_str\":\"Traceback: boom\"}"]`) {
		t.Errorf("user-error-response %s", u.Body)
	}
	var ae *agent.ActionError
	if _, err := u.Result(); !errors.As(err, &ae) || ae.Text != "Traceback: boom" {
		t.Errorf("user error read as %v", err)
	}
	s, _ := m.Success()
	if v, err := s.Result(); err != nil || string(v) != "null" || s.BodyKind() != agent.KindSuccessResponse {
		t.Errorf("success %s %v", v, err)
	}
	// A message without protocol_version (an older client) is read as usual.
	var old agent.Message
	if err := json.Unmarshal([]byte(`{"header":{"src":{"uid":"`+uuid.NewString()+`","name":"x","role":"agent"},"dest":{"uid":"`+uuid.NewString()+`","name":null,"role":"user"},"tag":"`+uuid.NewString()+`","label":null,"kind":"response"},"body":{"kind":"action-response","serialization":"json","result":["__serialized__","5"]}}`), &old); err != nil {
		t.Fatal(err)
	}
	if v, err := old.Result(); err != nil || string(v) != "5" {
		t.Errorf("old message: %s %v", v, err)
	}
}

func TestDecodeActionRequestMalformed(t *testing.T) {
	cases := []struct {
		name, body, want string
		notJSON          bool
	}{
		{"not an object", `"x"`, "body kind", false},
		{"other kind", `{"kind":"ping-request"}`, `body kind "ping-request"`, false},
		{"no action", `{"kind":"action-request","serialization":"json","pargs":"[]","kargs":"{}"}`, "names no action", false},
		{"pickle", `{"kind":"action-request","action":"a","serialization":"pickle","pargs":"gASVBAAAAAAAAAB9lC4=","kargs":"gAR9lC4="}`, `serialization "pickle"`, true},
		{"pickle result", `{"kind":"action-request","action":"a","serialization":"json","result_serialization":"pickle","pargs":"[]","kargs":"{}"}`, `result_serialization "pickle"`, true},
		{"pickle exception", `{"kind":"action-request","action":"a","serialization":"json","exception_serialization":"pickle","pargs":"[]","kargs":"{}"}`, `exception_serialization "pickle"`, true},
		{"no serialization", `{"kind":"action-request","action":"a","pargs":"[]","kargs":"{}"}`, `serialization ""`, true},
		{"pargs a list", `{"kind":"action-request","action":"a","serialization":"json","pargs":[1],"kargs":"{}"}`, "action-request", false},
		{"pargs not a list", `{"kind":"action-request","action":"a","serialization":"json","pargs":"{}","kargs":"{}"}`, "pargs must be", false},
		{"pargs null", `{"kind":"action-request","action":"a","serialization":"json","pargs":"null","kargs":"{}"}`, "pargs must be", false},
		{"pargs missing", `{"kind":"action-request","action":"a","serialization":"json","kargs":"{}"}`, "pargs must be", false},
		{"kargs a list", `{"kind":"action-request","action":"a","serialization":"json","pargs":"[]","kargs":"[]"}`, "kargs must be", false},
		{"kargs null", `{"kind":"action-request","action":"a","serialization":"json","pargs":"[]","kargs":"null"}`, "kargs must be", false},
		{"kargs bad json", `{"kind":"action-request","action":"a","serialization":"json","pargs":"[]","kargs":"{"}`, "kargs must be", false},
		{"action not a string", `{"kind":"action-request","action":5,"serialization":"json","pargs":"[]","kargs":"{}"}`, "action-request", false},
	}
	for _, c := range cases {
		_, err := agent.DecodeActionRequest(json.RawMessage(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.name, err, c.want)
			continue
		}
		if c.notJSON != errors.Is(err, agent.ErrNotJSON) {
			t.Errorf("%s: errors.Is(ErrNotJSON) = %v", c.name, !c.notJSON)
		}
		if !c.notJSON && !errors.Is(err, agent.ErrBadBody) {
			t.Errorf("%s: %v does not match ErrBadBody", c.name, err)
		}
	}
	if c, err := agent.DecodeActionRequest(json.RawMessage(`{"kind":"action-request","action":"a","serialization":"json","result_serialization":null,"pargs":"[]","kargs":"{}","extra":1}`)); err != nil || len(c.Args) != 0 || c.Args == nil {
		t.Errorf("a good body with an unknown extra field: %+v %v", c, err)
	}
}

func TestResultMalformed(t *testing.T) {
	req := agent.NewPing(agent.UserID("u"), agent.AgentID("r", "a"))
	resp := func(body string) agent.Message {
		m, err := req.Reply(json.RawMessage(body))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := map[string]string{
		`{"kind":"action-response","serialization":"json"}`:                                                                "value is missing",
		`{"kind":"action-response","serialization":"json","result":"5"}`:                                                   "__serialized__",
		`{"kind":"action-response","serialization":"json","result":["__pickled__","5"]}`:                                   "__serialized__",
		`{"kind":"action-response","serialization":"json","result":["__serialized__","{"]}`:                                "is not JSON",
		`{"kind":"action-response","serialization":"pickle","result":["__pickled__","gA=="]}`:                              "pickle",
		`{"kind":"user-error-response","serialization":"json","exception":"boom"}`:                                         "__exception__",
		`{"kind":"user-error-response","serialization":"json","exception":["__serialized__","{\"exception_str\":\"x\"}"]}`: "__exception__",
		`{"kind":"mosaic-text","text":"hi"}`:                                                                               "not an Academy response",
		`{"kind":"academy-error-response","error_code":"x"}`:                                                               "academy-error-response",
	}
	for body, want := range cases {
		if _, err := resp(body).Result(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", body, err, want)
		}
	}
	if _, err := req.Result(); err == nil || !strings.Contains(err.Error(), "not a response") {
		t.Errorf("a request read as a response: %v", err)
	}
	// The exception as the bare object (the note's other reading) is accepted too.
	var ae *agent.ActionError
	if _, err := resp(`{"kind":"user-error-response","serialization":"json","exception":{"__exception__":true,"exception_str":"E"}}`).Result(); !errors.As(err, &ae) || ae.Text != "E" {
		t.Errorf("bare exception object: %v", err)
	}
	// academy-error-response code 0: the mailbox was terminated.
	id := agent.AgentID("r", "gone")
	b, _ := json.Marshal(agent.AcademyErrorResponseBody{ErrorCode: 0, MailboxID: &id, Kind: agent.KindAcademyErrorResponse})
	_, err := resp(string(b)).Result()
	var mt *agent.MailboxTerminatedError
	if !errors.As(err, &mt) || !errors.Is(err, agent.ErrTerminated) || !strings.Contains(err.Error(), "gone") || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("academy error: %v", err)
	}
	if _, err := agent.ShutdownTerminate(json.RawMessage(`{"kind":"shutdown-request","terminate":"yes"}`)); err == nil {
		t.Error("terminate must be a bool")
	}
	if term, err := agent.ShutdownTerminate(json.RawMessage(`{"kind":"shutdown-request"}`)); err != nil || !term {
		t.Errorf("terminate absent: %v %v (Academy's default is to terminate)", term, err)
	}
	if term, err := agent.ShutdownTerminate(json.RawMessage(`{"kind":"shutdown-request","terminate":false}`)); err != nil || term {
		t.Errorf("terminate false: %v %v", term, err)
	}
	if _, err := agent.CancelTarget(json.RawMessage(`{"kind":"cancel-request"}`)); err == nil {
		t.Error("cancel without target accepted")
	}
}

func FuzzDecodeActionRequest(f *testing.F) {
	f.Add(`{"kind":"action-request","action":"a","serialization":"json","pargs":"[1,\"x\"]","kargs":"{\"k\":null}"}`)
	f.Add(`{"kind":"action-request","action":"a","serialization":"pickle","pargs":"gA==","kargs":"gA=="}`)
	f.Add(`{"kind":"action-request","action":"","serialization":"json","pargs":"[]","kargs":"{}"}`)
	f.Add(`{"kind":"action-response","serialization":"json","result":["__serialized__","1"]}`)
	f.Fuzz(func(t *testing.T, body string) {
		call, err := agent.DecodeActionRequest(json.RawMessage(body))
		if err != nil {
			if !errors.Is(err, agent.ErrBadBody) && !errors.Is(err, agent.ErrNotJSON) {
				t.Fatalf("error %v matches neither ErrBadBody nor ErrNotJSON", err)
			}
			return
		}
		if strings.TrimSpace(call.Action) == "" || call.Args == nil || call.Kwargs == nil {
			t.Fatalf("accepted %s as %+v", body, call)
		}
		for _, a := range call.Args {
			if !json.Valid(a) {
				t.Fatalf("arg %q is not JSON", a)
			}
		}
		// What was accepted is re-encoded by NewActionRequest into the same call.
		var args []any
		for _, a := range call.Args {
			var v any
			_ = json.Unmarshal(a, &v)
			args = append(args, v)
		}
		if _, err := agent.NewActionRequest(agent.UserID("u"), agent.AgentID("r", "a"), call.Action, args, nil); err != nil {
			t.Fatalf("re-encode %+v: %v", call, err)
		}
	})
}

// TestAgentServesAndCalls: a native agent (Agent.Serve) on a real exchange
// answers a ping, runs its action, names its actions for an unknown one,
// refuses pickle, reports a failing action's text, and stops on a shutdown
// request with its mailbox terminated; a user mailbox calls it with
// Client.Call, and the agent calls back with Agent.Call while serving.
func TestAgentServesAndCalls(t *testing.T) {
	srv, url := newExchange(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client(t, srv, url, "acad-1", agent.WithRequestWindow(time.Second))
	me, other, op := agent.AgentID("acad-1", "adder"), agent.AgentID("acad-1", "helper"), agent.UserID("operator")
	for _, id := range []agent.EntityID{me, other, op} {
		if err := c.Register(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	a := agent.NewAgent(c, me)
	h := agent.NewAgent(c, other)
	a.Handle("add", func(_ context.Context, _ agent.EntityID, args []json.RawMessage, _ map[string]json.RawMessage) (any, error) {
		sum := 0
		for _, x := range args {
			var n int
			if err := json.Unmarshal(x, &n); err != nil {
				return nil, errors.New("add takes integers")
			}
			sum += n
		}
		return sum, nil
	})
	// An action that calls another agent while the first keeps serving.
	a.Handle("twice", func(ctx context.Context, _ agent.EntityID, args []json.RawMessage, _ map[string]json.RawMessage) (any, error) {
		v, err := a.Call(ctx, other, "double", []any{json.RawMessage(args[0])}, nil, 5*time.Second)
		return json.RawMessage(v), err
	})
	h.Handle("double", func(_ context.Context, _ agent.EntityID, args []json.RawMessage, _ map[string]json.RawMessage) (any, error) {
		var n int
		_ = json.Unmarshal(args[0], &n)
		return 2 * n, nil
	})
	served := make(chan error, 2)
	go func() { served <- a.Serve(ctx) }()
	hctx, hstop := context.WithCancel(ctx)
	defer hstop()
	go func() { _ = h.Serve(hctx) }()

	if v, err := c.Call(ctx, op, me, "add", []any{2, 3, 4}, nil, 5*time.Second); err != nil || string(v) != "9" {
		t.Errorf("add: %s %v", v, err)
	}
	if v, err := c.Call(ctx, op, me, "twice", []any{21}, nil, 5*time.Second); err != nil || string(v) != "42" {
		t.Errorf("twice: %s %v", v, err)
	}
	var ae *agent.ActionError
	if _, err := c.Call(ctx, op, me, "add", []any{"x"}, nil, 5*time.Second); !errors.As(err, &ae) || ae.Text != "add takes integers" {
		t.Errorf("failing action: %v", err)
	}
	if _, err := c.Call(ctx, op, me, "mul", nil, nil, 5*time.Second); !errors.As(err, &ae) || !strings.Contains(ae.Text, `no action "mul"`) || !strings.Contains(ae.Text, "add, twice") {
		t.Errorf("unknown action: %v", err)
	}
	// Pickle: refused with a JSON-only error.
	pk, _ := agent.NewRequest(op, me, json.RawMessage(`{"kind":"action-request","action":"add","serialization":"pickle","result_serialization":null,"exception_serialization":null,"pargs":"gASVBAAAAAAAAAB9lC4=","kargs":"gAR9lC4="}`))
	if err := c.Send(ctx, pk); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Receive(ctx, op, 5*time.Second); err != nil {
		t.Fatal(err)
	} else if _, err := r.Result(); !errors.As(err, &ae) || !strings.Contains(ae.Text, "only JSON") {
		t.Errorf("pickle: %v", err)
	}
	// Ping: success-response with the ping's tag.
	ping := agent.NewPing(op, me)
	if err := c.Send(ctx, ping); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Receive(ctx, op, 5*time.Second); err != nil || r.Header.Tag != ping.Header.Tag || r.BodyKind() != agent.KindSuccessResponse {
		t.Errorf("ping answer %+v %v", r, err)
	}
	// Shutdown: Serve returns ErrShutdown, the mailbox is terminated.
	if err := c.Send(ctx, agent.NewShutdown(op, me, true)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		if !errors.Is(err, agent.ErrShutdown) {
			t.Errorf("Serve returned %v, want ErrShutdown", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop on a shutdown request")
	}
	if st, err := c.Status(ctx, me); err != nil || st != agent.StatusTerminated {
		t.Errorf("mailbox after shutdown: %s %v", st, err)
	}
	// A call to the terminated agent fails at once.
	if _, err := c.Call(ctx, op, me, "add", nil, nil, time.Second); !errors.Is(err, agent.ErrTerminated) {
		t.Errorf("call to a terminated agent: %v", err)
	}
}

// TestCallTimesOut: nobody answers, the call ends at its timeout.
func TestCallTimesOut(t *testing.T) {
	srv, url := newExchange(t)
	ctx := context.Background()
	c := client(t, srv, url, "acad-2", agent.WithRequestWindow(time.Second))
	me, op := agent.AgentID("acad-2", "silent"), agent.UserID("operator")
	for _, id := range []agent.EntityID{me, op} {
		if err := c.Register(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	_, err := c.Call(ctx, op, me, "x", nil, nil, 400*time.Millisecond)
	if !errors.Is(err, agent.ErrTimeout) || !strings.Contains(err.Error(), "no answer from silent") {
		t.Errorf("err %v", err)
	}
	if d := time.Since(start); d < 400*time.Millisecond || d > 3*time.Second {
		t.Errorf("returned after %s", d)
	}
}

func FuzzMessageResult(f *testing.F) {
	f.Add(`{"kind":"action-response","serialization":"json","result":["__serialized__","{\"a\":1}"]}`)
	f.Add(`{"kind":"user-error-response","serialization":"json","exception":["__serialized__","{\"__exception__\":true,\"exception_str\":\"E\"}"]}`)
	f.Add(`{"kind":"academy-error-response","error_code":0,"mailbox_id":{"uid":"6f1c4a58-8a0b-4a4e-9a55-0f6d1e0d1a11","name":"a","role":"agent"}}`)
	f.Add(`{"kind":"success-response"}`)
	req := agent.NewPing(agent.UserID("u"), agent.AgentID("r", "a"))
	f.Fuzz(func(t *testing.T, body string) {
		m := agent.Message{Header: req.Header, Body: json.RawMessage(body)}
		m.Header.Kind = agent.KindResponse
		v, err := m.Result()
		if err != nil {
			var ae *agent.ActionError
			var mt *agent.MailboxTerminatedError
			if !errors.As(err, &ae) && !errors.As(err, &mt) && !errors.Is(err, agent.ErrBadBody) && !errors.Is(err, agent.ErrNotJSON) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if !json.Valid(v) {
			t.Fatalf("result %q is not JSON", v)
		}
	})
}
