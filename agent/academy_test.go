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
	if !strings.Contains(string(u.Body), `"exception":"{\"__exception__\":true,\"exception_str\":\"Traceback: boom\"}"`) {
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
		`{"kind":"user-error-response","serialization":"json","exception":"{\"exception_str\":\"x\"}"}`:                    "__exception__",
		`{"kind":"user-error-response","serialization":"json","exception":"{"}`:                                            "__exception__",
		`{"kind":"user-error-response","serialization":"json","exception":"\"x"}`:                                          "exception",
		`{"kind":"user-error-response","serialization":"json","exception":5}`:                                              "__exception__",
		`{"kind":"user-error-response","serialization":"pickle","exception":"gASV"}`:                                       "pickle",
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
	f.Add(`{"kind":"user-error-response","serialization":"json","exception":"{\"__exception__\": true, \"exception_str\": \"E\"}"}`)
	f.Add(`{"kind":"academy-error-response","error_code":3,"mailbox_id":null}`)
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
			var acad *agent.AcademyError
			if !errors.As(err, &ae) && !errors.As(err, &mt) && !errors.As(err, &acad) && !errors.Is(err, agent.ErrBadBody) && !errors.Is(err, agent.ErrNotJSON) {
				t.Fatalf("unclassified error %v", err)
			}
			return
		}
		if !json.Valid(v) {
			t.Fatalf("result %q is not JSON", v)
		}
	})
}

// Golden messages: the literal bytes Academy v0.5's Message.model_dump_json
// produces (pydantic's compact JSON, fields in model order; academy/message.py
// Header, ActionResponse, UserErrorResponse, AcademyErrorResponse), with the
// serialized texts made by academy/serialize.py JsonSerializer (json.dumps,
// default separators ", " and ": ").
const (
	goldenHeader = `{"src":{"uid":"8a5c1f6e-1d2b-4c3a-9e8f-0a1b2c3d4e5f","name":"planner","role":"agent"},"dest":{"uid":"1b2c3d4e-5f60-4718-8a9b-0c1d2e3f4a5b","name":null,"role":"user"},"tag":"6f1c4a58-8a0b-4a4e-9a55-0f6d1e0d1a11","label":null,"kind":"response","protocol_version":"1","trace_context":null}`
	// UserErrorResponse: exception is the *string* serialize(exc, "json").
	goldenUserError = `{"header":` + goldenHeader + `,"body":{"serialization":"json","exception":"{\"__exception__\": true, \"exception_str\": \"Traceback (most recent call last):\\n  File \\\"planner.py\\\", line 9, in add\\nValueError: no atoms \\u00c5\\n\"}","kind":"user-error-response"}}`
	// ActionResponse: result is ["__serialized__", json.dumps(value)].
	goldenActionResponse = `{"header":` + goldenHeader + `,"body":{"result":["__serialized__","{\"sum\": 5, \"atoms\": [\"H\", \"O\"]}"],"serialization":"json","kind":"action-response"}}`
	// AcademyErrorResponse of a cancelled action (ErrorCode.ACTION_CANCELLED).
	goldenCancelled = `{"header":` + goldenHeader + `,"body":{"error_code":3,"mailbox_id":null,"kind":"academy-error-response"}}`
)

// TestGoldenAcademyResponses: what a Python Academy agent sends is read as
// Academy means it (before the fix the user error was "malformed message
// body: exception must be {...}").
func TestGoldenAcademyResponses(t *testing.T) {
	read := func(raw string) (json.RawMessage, error) {
		t.Helper()
		var m agent.Message
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatalf("unmarshal %s: %v", raw, err)
		}
		return m.Result()
	}
	var ae *agent.ActionError
	if _, err := read(goldenUserError); !errors.As(err, &ae) || ae.Text != "Traceback (most recent call last):\n  File \"planner.py\", line 9, in add\nValueError: no atoms Å\n" || ae.From.NameOr("") != "planner" {
		t.Errorf("user-error-response read as %v", err)
	}
	if v, err := read(goldenActionResponse); err != nil || string(v) != `{"sum": 5, "atoms": ["H", "O"]}` {
		t.Errorf("action-response read as %s, %v", v, err)
	}
	var acad *agent.AcademyError
	if _, err := read(goldenCancelled); !errors.As(err, &acad) || !errors.Is(err, agent.ErrActionCancelled) || errors.Is(err, agent.ErrTerminated) {
		t.Errorf("academy-error-response code 3 read as %v", err)
	}
}

// TestUserErrorAsAcademyReadsIt: Mosaic's user-error-response has the shape
// UserErrorResponse.get_exception decodes (a str, json.loads of which is the
// exception object); its action-response the ["__serialized__", text] pair.
func TestUserErrorAsAcademyReadsIt(t *testing.T) {
	req, _ := agent.NewActionRequest(agent.AgentID("r", "py"), agent.AgentID("r", "go"), "add", nil, nil)
	u, _ := req.UserError("ValueError: <no> & \"atoms\"\nline 2")
	var body map[string]any
	if err := json.Unmarshal(u.Body, &body); err != nil {
		t.Fatal(err)
	}
	text, ok := body["exception"].(string)
	if !ok {
		t.Fatalf("exception is %T (%v), want a JSON string as Academy sends", body["exception"], body["exception"])
	}
	var exc map[string]any
	if err := json.Unmarshal([]byte(text), &exc); err != nil || exc["__exception__"] != true || exc["exception_str"] != "ValueError: <no> & \"atoms\"\nline 2" {
		t.Errorf("exception text %q decodes to %v, %v", text, exc, err)
	}
	if body["serialization"] != "json" || body["kind"] != "user-error-response" || len(body) != 3 {
		t.Errorf("body %v", body)
	}
	r, _ := req.ActionResult([]int{1, 2})
	var rb struct {
		Result []string `json:"result"`
	}
	if err := json.Unmarshal(r.Body, &rb); err != nil || len(rb.Result) != 2 || rb.Result[0] != "__serialized__" || rb.Result[1] != "[1,2]" {
		t.Errorf("action-response body %s (%v)", r.Body, err)
	}
}

// TestAcademyErrorCodes: every code of academy/message.py ErrorCode reads as
// its own named error; an unknown code as an *AcademyError matching none.
func TestAcademyErrorCodes(t *testing.T) {
	req := agent.NewPing(agent.UserID("u"), agent.AgentID("r", "a"))
	for code, want := range map[int]error{
		1: agent.ErrPingCancelled, 2: agent.ErrActionInvalidState, 3: agent.ErrActionCancelled,
		4: agent.ErrInvalidClient, 5: agent.ErrIncompatibleProtocol,
	} {
		m, err := req.AcademyErrorReply(code)
		if err != nil {
			t.Fatal(err)
		}
		_, err = m.Result()
		var ae *agent.AcademyError
		if !errors.As(err, &ae) || ae.Code != code || !errors.Is(err, want) || errors.Is(err, agent.ErrTerminated) {
			t.Errorf("code %d read as %v, want %v", code, err, want)
		}
	}
	m, _ := req.AcademyErrorReply(0)
	var mt *agent.MailboxTerminatedError
	if _, err := m.Result(); !errors.As(err, &mt) || !errors.Is(err, agent.ErrTerminated) {
		t.Errorf("code 0 read as %v", err)
	}
	m, _ = req.AcademyErrorReply(42)
	if _, err := m.Result(); err == nil || !strings.Contains(err.Error(), "code 42") || errors.Is(err, agent.ErrActionCancelled) {
		t.Errorf("code 42 read as %v", err)
	}
}

// blocker is an action that waits for its ctx (or release) and reports each start.
func blocker(started chan<- uuid.UUID, release <-chan struct{}) agent.ActionFunc {
	return func(ctx context.Context, _ agent.EntityID, args []json.RawMessage, _ map[string]json.RawMessage) (any, error) {
		started <- uuid.New()
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-release:
			return "released", nil
		}
	}
}

// TestServeStopsWithAnActionWaitingOnItsContext: a shutdown request while an
// action waits on its ctx ends Serve promptly (it once waited for the action
// before cancelling its ctx, and hung).
func TestServeStopsWithAnActionWaitingOnItsContext(t *testing.T) {
	srv, url := newExchange(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client(t, srv, url, "acad-stop", agent.WithRequestWindow(time.Second))
	me, op := agent.AgentID("acad-stop", "waiter"), agent.UserID("operator")
	for _, id := range []agent.EntityID{me, op} {
		if err := c.Register(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	a := agent.NewAgent(c, me)
	started := make(chan uuid.UUID, 1)
	a.Handle("wait", blocker(started, nil))
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx) }()
	req, _ := agent.NewActionRequest(op, me, "wait", nil, nil)
	if err := c.Send(ctx, req); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("the action never started")
	}
	if err := c.Send(ctx, agent.NewShutdown(op, me, true)); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-served:
		if !errors.Is(err, agent.ErrShutdown) {
			t.Errorf("Serve returned %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return within 5 s of the shutdown request: it waits for an action before cancelling its ctx")
	}
}

// TestServeBoundsAndGuardsActions: beyond MaxActions a request is answered
// "busy"; a request reusing a running request's tag is refused; a cancel from
// someone else than the requester is ignored, the requester's stops the action
// with academy-error-response code 3.
func TestServeBoundsAndGuardsActions(t *testing.T) {
	srv, url := newExchange(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := client(t, srv, url, "acad-guard", agent.WithRequestWindow(time.Second))
	me, op, intruder := agent.AgentID("acad-guard", "worker"), agent.UserID("operator"), agent.UserID("intruder")
	for _, id := range []agent.EntityID{me, op, intruder} {
		if err := c.Register(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	a := agent.NewAgent(c, me)
	a.MaxActions = 2
	started, release := make(chan uuid.UUID, 8), make(chan struct{})
	defer close(release)
	a.Handle("wait", blocker(started, release))
	go func() { _ = a.Serve(ctx) }()
	var reqs []agent.Message
	for range 2 {
		r, _ := agent.NewActionRequest(op, me, "wait", nil, nil)
		if err := c.Send(ctx, r); err != nil {
			t.Fatal(err)
		}
		reqs = append(reqs, r)
		select {
		case <-started:
		case <-time.After(5 * time.Second):
			t.Fatal("action did not start")
		}
	}
	answer := func(who agent.EntityID) agent.Message {
		t.Helper()
		m, err := c.Receive(ctx, who, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// A third: busy.
	third, _ := agent.NewActionRequest(op, me, "wait", nil, nil)
	if err := c.Send(ctx, third); err != nil {
		t.Fatal(err)
	}
	var ae *agent.ActionError
	if m := answer(op); m.Header.Tag != third.Header.Tag {
		t.Errorf("answer to %s, want the third request's", m.Header.Tag)
	} else if _, err := m.Result(); !errors.As(err, &ae) || !strings.Contains(ae.Text, "busy") {
		t.Errorf("third request: %v, want busy", err)
	}
	// The same tag as a running request: refused, the running one untouched. (From
	// another sender: the exchange itself drops the same sender's repeat of a message,
	// same tag and kind, as a retry; see TestSendRetryAfterALostAnswerIsDeduplicated.)
	dup, _ := agent.NewActionRequest(intruder, me, "wait", nil, nil)
	dup.Header.Tag = reqs[0].Header.Tag
	if err := c.Send(ctx, dup); err != nil {
		t.Fatal(err)
	}
	if m := answer(intruder); m.Header.Tag != dup.Header.Tag {
		t.Errorf("answer to %s", m.Header.Tag)
	} else if _, err := m.Result(); !errors.As(err, &ae) || !strings.Contains(ae.Text, "already running a request with tag") {
		t.Errorf("duplicate tag: %v", err)
	}
	// A cancel from another sender: ignored (nothing answers; the action runs on).
	if err := c.Send(ctx, agent.NewCancel(intruder, me, reqs[0].Header.Tag)); err != nil {
		t.Fatal(err)
	}
	if m, err := c.Receive(ctx, op, 700*time.Millisecond); !errors.Is(err, agent.ErrTimeout) {
		t.Errorf("after another sender's cancel the operator got %+v %v; the action must keep running", m, err)
	}
	// The requester's cancel: academy-error-response code 3.
	if err := c.Send(ctx, agent.NewCancel(op, me, reqs[0].Header.Tag)); err != nil {
		t.Fatal(err)
	}
	m := answer(op)
	if m.Header.Tag != reqs[0].Header.Tag || m.BodyKind() != agent.KindAcademyErrorResponse {
		t.Errorf("cancel answered %s %s", m.Header.Tag, m.Body)
	}
	if _, err := m.Result(); !errors.Is(err, agent.ErrActionCancelled) {
		t.Errorf("cancelled action read as %v", err)
	}
	// A slot is free again: a new request runs.
	next, _ := agent.NewActionRequest(op, me, "wait", nil, nil)
	if err := c.Send(ctx, next); err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(5 * time.Second):
		t.Fatal("a request after the cancel did not start: the slot was not freed")
	}
}
