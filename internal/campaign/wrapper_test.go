package campaign

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
)

// testExchange is a real exchange on loopback with a campaign registered.
type testExchange struct {
	srv *exchange.Server
	url string
	tok string // the run's operator token
	run string
}

func newTestExchange(t *testing.T, s *Spec, run string) *testExchange {
	t.Helper()
	srv := exchange.NewServer(exchange.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	ctx := context.Background()
	if err := srv.RegisterCampaign(ctx, run, s.Campaign); err != nil {
		t.Fatal(err)
	}
	tok, err := srv.IssueToken(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	return &testExchange{srv: srv, url: ts.URL, tok: tok, run: run}
}

// agentTok is the agent's own token, derived as the launcher derives it.
func (x *testExchange) agentTok(name string) string { return agent.TokenFor(x.tok, x.run, name) }

// agentClient is a client with the agent's own token.
func (x *testExchange) agentClient(t *testing.T, name, site string) *agent.Client {
	c, err := agent.New(x.url, x.agentTok(name), agent.WithSite(site), agent.WithRequestWindow(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (x *testExchange) client(t *testing.T, site string) *agent.Client {
	c, err := agent.New(x.url, x.tok, agent.WithSite(site), agent.WithRequestWindow(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// syncBuf is a goroutine-safe buffer.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

const pairCampaign = `{
  "name": "pair", "initial_agent": "ping", "user_task": "go",
  "agents": [
    {"name": "ping", "command": ["sh", "ping.sh"], "allowed_peers": ["pong"]},
    {"name": "pong", "command": ["sh", "pong.sh"], "allowed_peers": ["ping"]},
  ],
}`

// ping: on the task, sends "hi" on fd 3, prints an ordinary stdout line, waits
// for the reply and exits 7 with it on stderr.
const pingScript = `read -r task
echo "ordinary output"
printf '{"to":"pong","body":{"kind":"mosaic-text","text":"hi"}}\n' >&3
read -r reply
echo "got: $reply" >&2
exit 7
`

// pong: answers the first request through the stdout prefix and exits 0.
const pongScript = `read -r line
tag=$(printf '%s' "${line%%\"body\":*}" | sed -n 's/.*"tag":"\([^"]*\)".*/\1/p')
printf '@mosaic {"to":"ping","reply_to":"%s","body":{"kind":"mosaic-text","text":"hello"}}\n' "$tag"
`

func writeCampaign(t *testing.T, text string, scripts map[string]string) *Spec {
	t.Helper()
	dir := t.TempDir()
	p := filepath.Join(dir, "c.jsonc")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	for n, body := range scripts {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(body), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRunAgentPair(t *testing.T) {
	s := writeCampaign(t, pairCampaign, map[string]string{"ping.sh": pingScript, "pong.sh": pongScript})
	const run = "pair-1"
	x := newTestExchange(t, s, run)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	type res struct {
		code int
		err  error
	}
	outs := map[string]*syncBuf{"ping": {}, "pong": {}}
	logs := map[string]*syncBuf{"ping": {}, "pong": {}}
	results := map[string]chan res{"ping": make(chan res, 1), "pong": make(chan res, 1)}
	for name, site := range map[string]string{"ping": "east", "pong": "west"} {
		go func() {
			code, err := RunAgent(ctx, AgentRun{Spec: s, RunID: run, Name: name, Site: site, Client: x.agentClient(t, name, site),
				ExchangeURL: x.url, Token: x.agentTok(name), StartupTimeout: 10 * time.Second, Poll: 20 * time.Millisecond,
				Log: logs[name], Stdout: outs[name], Stderr: outs[name]})
			results[name] <- res{code, err}
		}()
	}
	if err := Bootstrap(ctx, x.client(t, ""), s, run, BootstrapOptions{Timeout: 10 * time.Second, Poll: 20 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	ping, pong := <-results["ping"], <-results["pong"]
	if ping.err != nil || ping.code != 7 {
		t.Errorf("ping: code %d err %v (want the child's 7)\n%s\n%s", ping.code, ping.err, logs["ping"], outs["ping"])
	}
	if pong.err != nil || pong.code != 0 {
		t.Errorf("pong: code %d err %v\n%s\n%s", pong.code, pong.err, logs["pong"], outs["pong"])
	}
	if o := outs["ping"].String(); !strings.Contains(o, "ordinary output\n") || !strings.Contains(o, `"from":"pong"`) || !strings.Contains(o, `"kind":"response"`) || !strings.Contains(o, `"text":"hello"`) {
		t.Errorf("ping's output: %s", o)
	}
	if strings.Contains(outs["pong"].String(), "@mosaic") {
		t.Errorf("outbox lines must not pass through to stdout: %s", outs["pong"])
	}
	// Landmarks, in order.
	l := logs["ping"].String()
	last := -1
	for _, want := range []string{"registered " + AgentUID(run, "ping").String(), "waiting for peers [pong]", "discovered 1 peers", "first message from mosaic", "first message from pong", "exited with status 7", "mailbox terminated"} {
		i := strings.Index(l, want)
		if i < 0 || i < last {
			t.Errorf("landmark %q missing or out of order in:\n%s", want, l)
		}
		last = i
	}
	// Mailboxes are terminated; the timeline has task, request, response tagged by site.
	st, err := x.client(t, "").Status(ctx, agent.AgentID(run, "ping"))
	if err != nil || st != agent.StatusTerminated {
		t.Errorf("ping's mailbox: %s %v", st, err)
	}
	tl := x.srv.Timeline(run)
	if len(tl) != 3 || tl[1].SrcSite != "east" || tl[1].DestSite != "west" || !tl[2].CrossSite() {
		t.Errorf("timeline: %+v", tl)
	}
}

func TestRunAgentMissingPeer(t *testing.T) {
	s := writeCampaign(t, pairCampaign, map[string]string{"ping.sh": pingScript})
	x := newTestExchange(t, s, "lonely")
	var log syncBuf
	code, err := RunAgent(context.Background(), AgentRun{Spec: s, RunID: "lonely", Name: "ping", Client: x.agentClient(t, "ping", ""),
		StartupTimeout: 200 * time.Millisecond, Poll: 20 * time.Millisecond, Log: &log})
	var mp *agent.MissingPeersError
	if code == 0 || !errors.As(err, &mp) {
		t.Fatalf("code %d err %v; want a MissingPeersError", code, err)
	}
	for _, want := range []string{"pong (uid " + AgentUID("lonely", "pong").String() + ")", `run id "lonely"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if !strings.Contains(log.String(), "mailbox terminated") {
		t.Errorf("the mailbox must be terminated when peers never come:\n%s", log.String())
	}
}

// TestRunAgentCancelStopsChild: cancelling (SIGINT/SIGHUP in the CLI) stops the
// child with SIGTERM and terminates the mailbox.
func TestRunAgentCancelStopsChild(t *testing.T) {
	s := writeCampaign(t, `{"name":"solo","initial_agent":"a","agents":[{"name":"a","command":["sh","-c","echo $$ > pid; exec sleep 60"]}]}`, nil)
	x := newTestExchange(t, s, "solo")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var log syncBuf
	go func() {
		code, _ := RunAgent(ctx, AgentRun{Spec: s, RunID: "solo", Name: "a", Client: x.agentClient(t, "a", ""), Log: &log, KillGrace: time.Second})
		done <- code
	}()
	pidFile := filepath.Join(filepath.Dir(s.Path), "pid")
	for i := 0; i < 200; i++ {
		if _, err := os.Stat(pidFile); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	cancel()
	select {
	case code := <-done:
		if code != 128+15 {
			t.Errorf("exit status %d, want 143 (SIGTERM)", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunAgent did not return after cancel")
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("stopping took %s", time.Since(start))
	}
	st, _ := x.client(t, "").Status(context.Background(), agent.AgentID("solo", "a"))
	if st != agent.StatusTerminated {
		t.Errorf("mailbox %s after cancel\n%s", st, log.String())
	}
}

func TestParseOutbound(t *testing.T) {
	good := []string{
		`{"to":"worker-a","body":{"kind":"mosaic-text","text":"hi"}}`,
		`{"to":"coordinator","reply_to":"6f1c4a58-8a0b-4a4e-9a55-0f6d1e0d1a11","body":{"kind":"x"}}`,
		`{"reply_to":"6f1c4a58-8a0b-4a4e-9a55-0f6d1e0d1a11","body":{"kind":"x","data":[1,2]}}`,
	}
	for _, g := range good {
		if _, _, _, err := ParseOutbound([]byte(g)); err != nil {
			t.Errorf("%s: %v", g, err)
		}
	}
	bad := map[string]string{
		``:                                     "outbound line is not",
		`not json`:                             "outbound line is not",
		`{"to":"a"}`:                           "body",
		`{"to":"a","body":"text"}`:             "body",
		`{"to":"a","body":{"text":"no kind"}}`: "kind",
		`{"body":{"kind":"x"}}`:                "no \"to\"",
		`{"to":"../etc","body":{"kind":"x"}}`:  "\"to\"",
		`{"to":"a","reply_to":"7","body":{"kind":"x"}}`: "reply_to",
		`{"to":"a","body":{"kind":"x"},"cc":"b"}`:       "outbound line is not",
		`{"to":5,"body":{"kind":"x"}}`:                  "outbound line is not",
	}
	for in, want := range bad {
		if _, _, _, err := ParseOutbound([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}

func FuzzParseOutbound(f *testing.F) {
	f.Add(`{"to":"a","body":{"kind":"x"}}`)
	f.Add(`{"to":"a","reply_to":"6f1c4a58-8a0b-4a4e-9a55-0f6d1e0d1a11","body":{"kind":"x"}}`)
	f.Add(`{"to":"a","body":{"kind":null}}`)
	f.Fuzz(func(t *testing.T, line string) {
		to, replyTo, body, err := ParseOutbound([]byte(line))
		if err != nil {
			return
		}
		if to == "" && replyTo == "" {
			t.Fatal("accepted a line with neither to nor reply_to")
		}
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil || m["kind"] == nil {
			t.Fatalf("accepted body %s", body)
		}
	})
}

// TestRunAgentStopsTheWholeProcessGroup: a shell agent with children of its own (two
// background sleeps) is stopped as a group: after cancel nothing it started is left
// (before, only the shell got SIGTERM and the sleeps were orphaned, holding the pipes).
func TestRunAgentStopsTheWholeProcessGroup(t *testing.T) {
	marker := fmt.Sprintf("%d", 400000+time.Now().UnixNano()%100000) // a sleep length no one else uses
	s := writeCampaign(t, `{"name":"grp","initial_agent":"a","agents":[{"name":"a","command":["sh","-c","sleep `+marker+` & sleep `+marker+` & echo started > pid; wait"]}]}`, nil)
	x := newTestExchange(t, s, "grp")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		code, _ := RunAgent(ctx, AgentRun{Spec: s, RunID: "grp", Name: "a", Client: x.agentClient(t, "a", ""), KillGrace: time.Second})
		done <- code
	}()
	pidFile := filepath.Join(filepath.Dir(s.Path), "pid")
	for i := 0; i < 300; i++ {
		if _, err := os.Stat(pidFile); err == nil && len(sleepers(marker)) == 2 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(sleepers(marker)); n != 2 {
		t.Fatalf("%d of the agent's sleeps running before cancel, want 2 (the check below would prove nothing)", n)
	}
	start := time.Now()
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("RunAgent did not return after cancel")
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("stopping took %s, want under 5 s", took)
	}
	var left []int
	for range 40 {
		if left = sleepers(marker); len(left) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(left) > 0 {
		t.Errorf("the agent's children %v outlived it", left)
	}
}

// sleepers lists the pids of live `sleep N` processes (zombies excluded).
func sleepers(n string) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || string(cmdline) != "sleep\x00"+n+"\x00" {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if f := strings.Fields(string(st)); len(f) > 2 && f[2] == "Z" {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

func TestParseChildLine(t *testing.T) {
	tag := "6f1c4a58-8a0b-4a4e-9a55-0f6d1e0d1a11"
	good := map[string]func(ChildLine) bool{
		`{"serve":["echo","add"]}`: func(c ChildLine) bool { return len(c.Serve) == 2 && c.Serve[1] == "add" },
		`{"serve":[]}`:             func(c ChildLine) bool { return c.Serve != nil && len(c.Serve) == 0 },
		`{"to":"helper","action":"double","args":[4]}`: func(c ChildLine) bool {
			return c.To == "helper" && c.Action == "double" && string(c.Args[0]) == "4" && c.Kwargs != nil
		},
		`{"to":"h","action":"x","kwargs":{"a":[1]}}`:         func(c ChildLine) bool { return len(c.Args) == 0 && c.Args != nil && string(c.Kwargs["a"]) == "[1]" },
		`{"reply_to":"` + tag + `","result":{"sum":5}}`:      func(c ChildLine) bool { return c.ReplyTo == tag && string(c.Result) == `{"sum":5}` && c.Error == nil },
		`{"reply_to":"` + tag + `","result":null}`:           func(c ChildLine) bool { return string(c.Result) == "null" },
		`{"reply_to":"` + tag + `","error":"no luck"}`:       func(c ChildLine) bool { return c.Error != nil && *c.Error == "no luck" && c.Result == nil },
		`{"to":"a","body":{"kind":"mosaic-text","text":""}}`: func(c ChildLine) bool { return c.To == "a" && c.Body != nil },
		`{"to":"h","action":"x","call_id":"c-1"}`:            func(c ChildLine) bool { return c.Action == "x" && c.CallID == "c-1" },
		`{"to":"h","action":"x","call_id":null}`:             func(c ChildLine) bool { return c.Action == "x" && c.CallID == "" },
	}
	for in, ok := range good {
		c, err := ParseChildLine([]byte(in))
		if err != nil || !ok(c) {
			t.Errorf("%s: %+v %v", in, c, err)
		}
	}
	bad := map[string]string{
		`[1]`:                                               "not a JSON object",
		`{"serve":"add"}`:                                   "serve line",
		`{"serve":["add"],"to":"x"}`:                        "serve line",
		`{"serve":["two words"]}`:                           "not an identifier",
		`{"serve":["1st"]}`:                                 "not an identifier",
		`{"to":"h","action":"x","args":{"a":1}}`:            "call line",
		`{"to":"h","action":"x","kwargs":[1]}`:              "call line",
		`{"action":"x"}`:                                    `"to" must name an agent`,
		`{"to":"mosaic","action":"x"}`:                      `"to" must name an agent`,
		`{"to":"../x","action":"x"}`:                        `"to" must name an agent`,
		`{"to":"h","action":"a b"}`:                         "not an identifier",
		`{"to":"h","action":"x","body":{}}`:                 "call line",
		`{"reply_to":"7","result":1}`:                       "not a message tag",
		`{"result":1}`:                                      "not a message tag",
		`{"reply_to":"` + tag + `","result":1,"error":"e"}`: "either",
		`{"reply_to":"` + tag + `","error":""}`:             "non-empty string",
		`{"reply_to":"` + tag + `","error":5}`:              "answer line",
		`{"reply_to":"` + tag + `","result":1,"to":"x"}`:    "answer line",
		`{"to":"a"}`:                                        "body",
		`{"to":"h","action":"x","call_id":""}`:              "call_id",
		`{"to":"h","action":"x","call_id":7}`:               "call line",
		`{"to":"h","action":"x","call_id":"` + strings.Repeat("x", 257) + `"}`: "at most 256 bytes",
		`{"reply_to":"` + tag + `","result":1,"call_id":"c"}`:                  "answer line",
	}
	for in, want := range bad {
		if _, err := ParseChildLine([]byte(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", in, err, want)
		}
	}
}

func FuzzParseChildLine(f *testing.F) {
	f.Add(`{"serve":["a"]}`)
	f.Add(`{"to":"h","action":"x","args":[1],"kwargs":{}}`)
	f.Add(`{"to":"h","action":"x","args":[1],"call_id":"c1"}`)
	f.Add(`{"reply_to":"6f1c4a58-8a0b-4a4e-9a55-0f6d1e0d1a11","result":1}`)
	f.Add(`{"to":"a","body":{"kind":"x"}}`)
	f.Fuzz(func(t *testing.T, line string) {
		c, err := ParseChildLine([]byte(line))
		if err != nil {
			return
		}
		forms := 0
		if c.Serve != nil {
			forms++
		}
		if c.Action != "" {
			forms++
			if ValidateName(c.To) != nil || c.Args == nil || c.Kwargs == nil || len(c.CallID) > 256 {
				t.Fatalf("call accepted without a valid destination or arguments: %+v", c)
			}
		}
		if c.Body != nil {
			forms++
		}
		if c.Result != nil || c.Error != nil {
			forms++
			if _, err := uuid.Parse(c.ReplyTo); err != nil || (c.Result != nil) == (c.Error != nil) {
				t.Fatalf("answer accepted with bad tag or both/neither result and error: %+v", c)
			}
		}
		if forms != 1 {
			t.Fatalf("%q parsed into %d forms: %+v", line, forms, c)
		}
	})
}

const servingCampaign = `{
  "name": "serving", "initial_agent": "adder",
  "agents": [
    {"name": "adder", "command": ["python3", "adder.py"], "allowed_peers": ["helper"]},
    {"name": "helper", "command": ["x"], "allowed_peers": ["adder"]},
  ],
}`

// adder.py serves add/echo/fail/ask_helper over the fd 3 contract; ask_helper
// calls helper's "double" and answers with its result (or its error).
const adderScript = `import json, os, sys
out = os.fdopen(3, "w", buffering=1)
def send(o):
    out.write(json.dumps(o) + "\n")
send({"serve": ["add", "echo", "fail", "ask_helper"]})
asked = {}
for line in sys.stdin:
    m = json.loads(line)
    if m["kind"] == "request":
        a = m.get("action")
        if a == "add":
            send({"reply_to": m["tag"], "result": sum(m["args"])})
        elif a == "echo":
            send({"reply_to": m["tag"], "result": {"args": m["args"], "kwargs": m["kwargs"], "env_uid": os.environ["MOSAIC_AGENT_UID"], "peers": os.environ["MOSAIC_PEER_UIDS"]}})
        elif a == "fail":
            send({"reply_to": m["tag"], "error": "no luck with " + json.dumps(m["args"])})
        elif a == "ask_helper":
            send({"to": "helper", "action": "double", "args": m["args"]})
            asked["pending"] = m["tag"]
        else:
            print("unexpected request:", line.strip(), flush=True)
    elif "result" in m:
        send({"reply_to": asked.pop("pending"), "result": m["result"]})
    elif "error" in m:
        send({"reply_to": asked.pop("pending"), "error": "helper said: " + m["error"]})
    else:
        print("other:", line.strip(), flush=True)
`

// TestRunAgentServesActions: a wrapped command declares actions on fd 3 and
// answers Academy action requests through the wrapper: results and errors come
// back as action-response / user-error-response; an undeclared action and a
// pickled request are refused by the wrapper itself; a ping is answered
// without reaching the command; the command calls an action of another agent
// and gets its result as a decoded line; a shutdown-request stops it (exit 0)
// and terminates its mailbox.
func TestRunAgentServesActions(t *testing.T) {
	needPython(t)
	s := writeCampaign(t, servingCampaign, map[string]string{"adder.py": adderScript})
	const run = "serve-1"
	x := newTestExchange(t, s, run)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// helper: a native Go agent serving "double".
	hc := x.agentClient(t, "helper", "west")
	helperID := agent.AgentID(run, "helper")
	if err := hc.Register(ctx, helperID); err != nil {
		t.Fatal(err)
	}
	helper := agent.NewAgent(hc, helperID)
	helper.Handle("double", func(_ context.Context, _ agent.EntityID, args []json.RawMessage, _ map[string]json.RawMessage) (any, error) {
		var n int
		if err := json.Unmarshal(args[0], &n); err != nil {
			return nil, errors.New("double takes an integer")
		}
		return 2 * n, nil
	})
	hctx, hstop := context.WithCancel(ctx)
	defer hstop()
	go func() { _ = helper.Serve(hctx) }()

	var log, out syncBuf
	done := make(chan int, 1)
	go func() {
		code, err := RunAgent(ctx, AgentRun{Spec: s, RunID: run, Name: "adder", Site: "east", Client: x.agentClient(t, "adder", "east"),
			ExchangeURL: x.url, Token: x.agentTok("adder"), StartupTimeout: 10 * time.Second, Poll: 20 * time.Millisecond,
			Log: &log, Stdout: &out, Stderr: &out, KillGrace: 2 * time.Second})
		if err != nil {
			t.Errorf("RunAgent: %v", err)
		}
		done <- code
	}()
	op := agent.UserID("operator")
	oc := x.client(t, "")
	if err := oc.Register(ctx, op); err != nil {
		t.Fatal(err)
	}
	adder := agent.AgentID(run, "adder")
	if _, err := oc.WaitForPeers(ctx, run, []string{"adder"}, 10*time.Second, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if v, err := oc.Call(ctx, op, adder, "add", []any{2, 3, 4}, nil, 10*time.Second); err != nil || string(v) != "9" {
		t.Errorf("add: %s %v\n%s%s", v, err, log.String(), out.String())
	}
	v, err := oc.Call(ctx, op, adder, "echo", []any{"x", []int{1}}, map[string]any{"k": true}, 10*time.Second)
	wantEcho := `{"args":["x",[1]],"kwargs":{"k":true},"env_uid":"` + adder.UID.String() + `","peers":"helper=` + helperID.UID.String() + `"}`
	if err != nil || string(v) != wantEcho {
		t.Errorf("echo: %s %v, want %s", v, err, wantEcho)
	}
	var ae *agent.ActionError
	if _, err := oc.Call(ctx, op, adder, "fail", []any{1}, nil, 10*time.Second); !errors.As(err, &ae) || ae.Text != "no luck with [1]" {
		t.Errorf("fail: %v", err)
	}
	if _, err := oc.Call(ctx, op, adder, "mul", nil, nil, 10*time.Second); !errors.As(err, &ae) || !strings.Contains(ae.Text, `no action "mul"`) || !strings.Contains(ae.Text, "add, echo, fail, ask_helper") {
		t.Errorf("undeclared action: %v", err)
	}
	if v, err := oc.Call(ctx, op, adder, "ask_helper", []any{21}, nil, 10*time.Second); err != nil || string(v) != "42" {
		t.Errorf("ask_helper (adder calls helper.double): %s %v\n%s%s", v, err, log.String(), out.String())
	}
	if _, err := oc.Call(ctx, op, adder, "ask_helper", []any{"x"}, nil, 10*time.Second); !errors.As(err, &ae) || ae.Text != "helper said: double takes an integer" {
		t.Errorf("ask_helper with helper failing: %v", err)
	}
	pk, _ := agent.NewRequest(op, adder, json.RawMessage(`{"kind":"action-request","action":"add","serialization":"pickle","result_serialization":null,"exception_serialization":null,"pargs":"gAQ=","kargs":"gAQ="}`))
	if err := oc.Send(ctx, pk); err != nil {
		t.Fatal(err)
	}
	if r, err := oc.Receive(ctx, op, 10*time.Second); err != nil {
		t.Fatal(err)
	} else if _, err := r.Result(); !errors.As(err, &ae) || !strings.Contains(ae.Text, "accepts JSON arguments only") || !strings.Contains(ae.Text, "pickle") {
		t.Errorf("pickle: %v", err)
	}
	ping := agent.NewPing(op, adder)
	if err := oc.Send(ctx, ping); err != nil {
		t.Fatal(err)
	}
	if r, err := oc.Receive(ctx, op, 10*time.Second); err != nil || r.BodyKind() != agent.KindSuccessResponse || r.Header.Tag != ping.Header.Tag {
		t.Errorf("ping: %+v %v", r, err)
	}
	if err := oc.Send(ctx, agent.NewShutdown(op, adder, true)); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit status %d after a shutdown request, want 0\n%s", code, log.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the wrapper did not stop on a shutdown request\n%s", log.String())
	}
	if strings.Contains(out.String(), "unexpected") || strings.Contains(out.String(), "other:") {
		t.Errorf("the command saw messages the wrapper should have handled:\n%s", out.String())
	}
	for _, want := range []string{"serves actions [add echo fail ask_helper]", "refused action request add from operator", "shutdown requested by operator (terminate: true)", "mailbox terminated"} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("landmarks lack %q:\n%s", want, log.String())
		}
	}
	if st, _ := oc.Status(ctx, adder); st != agent.StatusTerminated {
		t.Errorf("adder's mailbox %s after shutdown", st)
	}
}

// TestRunAgentShutdownWithoutTerminate: terminate:false stops the command but
// leaves its mailbox open (for a restart).
func TestRunAgentShutdownWithoutTerminate(t *testing.T) {
	s := writeCampaign(t, `{"name":"solo","initial_agent":"a","agents":[{"name":"a","command":["sh","-c","exec sleep 60"]}]}`, nil)
	x := newTestExchange(t, s, "keep")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var log syncBuf
	done := make(chan int, 1)
	go func() {
		code, _ := RunAgent(ctx, AgentRun{Spec: s, RunID: "keep", Name: "a", Client: x.agentClient(t, "a", ""), Log: &log, KillGrace: time.Second})
		done <- code
	}()
	oc := x.client(t, "")
	op := agent.UserID("operator")
	if err := oc.Register(ctx, op); err != nil {
		t.Fatal(err)
	}
	if _, err := oc.WaitForPeers(ctx, "keep", []string{"a"}, 10*time.Second, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(log.String(), "started") && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if err := oc.Send(ctx, agent.NewShutdown(op, agent.AgentID("keep", "a"), false)); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit status %d, want 0\n%s", code, log.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no stop on shutdown\n%s", log.String())
	}
	if st, _ := oc.Status(ctx, agent.AgentID("keep", "a")); st != agent.StatusActive {
		t.Errorf("mailbox %s after shutdown with terminate:false, want ACTIVE\n%s", st, log.String())
	}
	if !strings.Contains(log.String(), "mailbox left open") {
		t.Errorf("landmarks: %s", log.String())
	}
}

// TestRunAgentAcademyProtocol: for an agent declared "protocol": "academy" the
// wrapper does not register the mailbox or pipe messages: the command gets its
// uid, its peers' uids and its own token, registers itself, and the wrapper
// reports that, passes its exit status through and terminates the mailbox.
func TestRunAgentAcademyProtocol(t *testing.T) {
	s := writeCampaign(t, `{"name":"acad","initial_agent":"py","agents":[
	  {"name":"py","protocol":"academy","allowed_peers":["w"],
	   "command":["sh","-c","echo uid=$MOSAIC_AGENT_UID peers=$MOSAIC_PEER_UIDS tok=$MOSAIC_EXCHANGE_TOKEN; read -r x || echo stdin-closed; while [ ! -f go ]; do sleep 0.05; done; exit 3"]},
	  {"name":"w","command":["x"]}]}`, nil)
	const run = "acad-1"
	x := newTestExchange(t, s, run)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var log, out syncBuf
	done := make(chan int, 1)
	go func() {
		code, err := RunAgent(ctx, AgentRun{Spec: s, RunID: run, Name: "py", Client: x.agentClient(t, "py", ""), ExchangeURL: x.url, Token: x.agentTok("py"),
			Poll: 20 * time.Millisecond, Log: &log, Stdout: &out, Stderr: &out, KillGrace: time.Second})
		if err != nil {
			t.Errorf("RunAgent: %v", err)
		}
		done <- code
	}()
	py := agent.AgentID(run, "py")
	want := "uid=" + py.UID.String() + " peers=w=" + AgentUID(run, "w").String() + " tok=" + x.agentTok("py") + "\nstdin-closed\n"
	for out.String() != want && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if out.String() != want {
		t.Fatalf("the command printed %q, want %q", out.String(), want)
	}
	oc := x.client(t, "")
	if st, _ := oc.Status(ctx, py); st != agent.StatusMissing {
		t.Errorf("the wrapper registered the Academy agent's mailbox (%s); the agent does that itself", st)
	}
	if err := x.agentClient(t, "py", "").Register(ctx, py); err != nil { // what the Python agent does
		t.Fatal(err)
	}
	for !strings.Contains(log.String(), "registered by the agent") && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(s.Path), "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 3 {
			t.Errorf("exit status %d, want the command's 3", code)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("RunAgent did not return")
	}
	if st, _ := oc.Status(ctx, py); st != agent.StatusTerminated {
		t.Errorf("mailbox %s after the agent exited, want TERMINATED\n%s", st, log.String())
	}
	for _, w := range []string{"started Academy agent sh", "it registers its own mailbox " + py.UID.String(), "mailbox " + py.UID.String() + " registered by the agent", "exited with status 3", "mailbox terminated"} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("landmarks lack %q:\n%s", w, log.String())
		}
	}
}

// TestRunAgentDeafCommandStillAnswers: a command that never reads its stdin
// (exec sleep) and 200 KB of messages: the wrapper still answers a ping,
// answers an action request "busy", reports the drops, and stops on a
// shutdown request (the listener once blocked on the full stdin pipe).
func TestRunAgentDeafCommandStillAnswers(t *testing.T) {
	s := writeCampaign(t, `{"name":"deaf","initial_agent":"deaf","agents":[
	  {"name":"deaf","command":["sh","deaf.sh"]}]}`, map[string]string{"deaf.sh": "printf '{\"serve\":[\"work\"]}\\n' >&3\nexec sleep 60\n"})
	const run = "deaf-1"
	x := newTestExchange(t, s, run)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	var log, out syncBuf
	done := make(chan int, 1)
	go func() {
		code, err := RunAgent(ctx, AgentRun{Spec: s, RunID: run, Name: "deaf", Client: x.agentClient(t, "deaf", ""), ExchangeURL: x.url, Token: x.agentTok("deaf"),
			Poll: 20 * time.Millisecond, Log: &log, Stdout: &out, Stderr: &out, KillGrace: time.Second, InboxBytes: 32 << 10})
		if err != nil {
			t.Errorf("RunAgent: %v", err)
		}
		done <- code
	}()
	op := agent.UserID("operator")
	oc := x.client(t, "")
	if err := oc.Register(ctx, op); err != nil {
		t.Fatal(err)
	}
	deaf := agent.AgentID(run, "deaf")
	if _, err := oc.WaitForPeers(ctx, run, []string{"deaf"}, 10*time.Second, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(log.String(), "serves actions [work]") && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	text := strings.Repeat("z", 1000)
	for range 200 { // 200 KB: the pipe (64 KiB) and the queue (32 KiB) fill up
		if err := oc.Send(ctx, agent.NewText(op, deaf, text)); err != nil {
			t.Fatal(err)
		}
	}
	// Wait until the wrapper has taken them all (the queue is full by then).
	for !strings.Contains(log.String(), "inbox full") && ctx.Err() == nil {
		time.Sleep(10 * time.Millisecond)
	}
	var ae *agent.ActionError
	// (An action request larger than any text line: none fits in what is left.)
	if _, err := oc.Call(ctx, op, deaf, "work", []any{strings.Repeat("w", 3000)}, nil, 5*time.Second); !errors.As(err, &ae) || !strings.Contains(ae.Text, "busy") {
		t.Errorf("action request to a deaf command: %v, want busy\n%s", err, log.String())
	}
	ping := agent.NewPing(op, deaf)
	if err := oc.Send(ctx, ping); err != nil {
		t.Fatal(err)
	}
	if r, err := oc.Receive(ctx, op, 5*time.Second); err != nil || r.Header.Tag != ping.Header.Tag || r.BodyKind() != agent.KindSuccessResponse {
		t.Fatalf("ping to a deaf command: %+v %v\n%s", r, err, log.String())
	}
	if err := oc.Send(ctx, agent.NewShutdown(op, deaf, true)); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit status %d after a shutdown request, want 0\n%s", code, log.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the wrapper ignored the shutdown request\n%s", log.String())
	}
	if !strings.Contains(log.String(), "dropped request mosaic-text from operator") || !strings.Contains(log.String(), "dropped action request work (answered busy) from operator") {
		t.Errorf("landmarks lack the drops:\n%s", log.String())
	}
}

// TestRunAgentCallIDEchoed: a command making two calls at once tells their
// answers apart by the "call_id" it gave, echoed on each response line.
func TestRunAgentCallIDEchoed(t *testing.T) {
	needPython(t)
	s := writeCampaign(t, `{"name":"calls","initial_agent":"caller","agents":[
	  {"name":"caller","command":["python3","caller.py"],"allowed_peers":["helper"]},
	  {"name":"helper","command":["x"],"allowed_peers":["caller"]}]}`, map[string]string{"caller.py": `import json, os, sys
out = os.fdopen(3, "w")
for n in (1, 2, 3):
    out.write(json.dumps({"to": "helper", "action": "slow_double", "args": [n], "call_id": "c%d" % n}) + "\n")
out.flush()
got = {}
for line in sys.stdin:
    m = json.loads(line)
    if m["kind"] == "response":
        got[m.get("call_id")] = m["result"]
    if len(got) == 3:
        break
print(json.dumps(got, sort_keys=True))
`})
	const run = "calls-1"
	x := newTestExchange(t, s, run)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hc := x.agentClient(t, "helper", "")
	helperID := agent.AgentID(run, "helper")
	if err := hc.Register(ctx, helperID); err != nil {
		t.Fatal(err)
	}
	helper := agent.NewAgent(hc, helperID)
	helper.Handle("slow_double", func(_ context.Context, _ agent.EntityID, args []json.RawMessage, _ map[string]json.RawMessage) (any, error) {
		var n int
		_ = json.Unmarshal(args[0], &n)
		time.Sleep(time.Duration(4-n) * 100 * time.Millisecond) // answers arrive in reverse order
		return 2 * n, nil
	})
	hctx, hstop := context.WithCancel(ctx)
	defer hstop()
	go func() { _ = helper.Serve(hctx) }()
	var log, out syncBuf
	code, err := RunAgent(ctx, AgentRun{Spec: s, RunID: run, Name: "caller", Client: x.agentClient(t, "caller", ""), ExchangeURL: x.url, Token: x.agentTok("caller"),
		StartupTimeout: 10 * time.Second, Poll: 20 * time.Millisecond, Log: &log, Stdout: &out, Stderr: &out, KillGrace: time.Second})
	if err != nil || code != 0 {
		t.Fatalf("RunAgent: %d %v\n%s%s", code, err, log.String(), out.String())
	}
	if want := `{"c1": 2, "c2": 4, "c3": 6}` + "\n"; out.String() != want {
		t.Errorf("the command matched %q, want %q\n%s", out.String(), want, log.String())
	}
}

// TestRunAgentAcademyCleanExitLeavesItsMailbox: an Academy agent that exits 0
// with its mailbox still ACTIVE (shut down with terminate: false) keeps it; one
// that terminated it itself is not terminated again; a failing one (exit 3,
// TestRunAgentAcademyProtocol) has it terminated by the wrapper.
func TestRunAgentAcademyCleanExitLeavesItsMailbox(t *testing.T) {
	for _, selfTerminate := range []bool{false, true} {
		s := writeCampaign(t, `{"name":"acad","initial_agent":"py","agents":[
		  {"name":"py","protocol":"academy","command":["sh","-c","while [ ! -f go ]; do sleep 0.05; done; exit 0"]}]}`, nil)
		run := fmt.Sprintf("acad-clean-%v", selfTerminate)
		x := newTestExchange(t, s, run)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		var log, out syncBuf
		done := make(chan int, 1)
		go func() {
			code, err := RunAgent(ctx, AgentRun{Spec: s, RunID: run, Name: "py", Client: x.agentClient(t, "py", ""), ExchangeURL: x.url, Token: x.agentTok("py"),
				Poll: 20 * time.Millisecond, Log: &log, Stdout: &out, Stderr: &out, KillGrace: time.Second})
			if err != nil {
				t.Errorf("RunAgent: %v", err)
			}
			done <- code
		}()
		py := agent.AgentID(run, "py")
		pc := x.agentClient(t, "py", "")
		if err := pc.Register(ctx, py); err != nil { // what the Python agent does
			t.Fatal(err)
		}
		for !strings.Contains(log.String(), "registered by the agent") && ctx.Err() == nil {
			time.Sleep(10 * time.Millisecond)
		}
		if selfTerminate {
			if err := pc.Terminate(ctx, py); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(s.Path), "go"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		select {
		case code := <-done:
			if code != 0 {
				t.Errorf("exit status %d", code)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("RunAgent did not return")
		}
		st, _ := x.client(t, "").Status(ctx, py)
		want, landmark := agent.StatusActive, "mailbox left open"
		if selfTerminate {
			want, landmark = agent.StatusTerminated, "mailbox terminated by the agent"
		}
		if st != want || !strings.Contains(log.String(), landmark) {
			t.Errorf("self-terminate %v: mailbox %s (want %s), landmarks lack %q:\n%s", selfTerminate, st, want, landmark, log.String())
		}
		cancel()
	}
}

// needPython skips without python3, except under CI=true, which installs it.
func needPython(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("python3"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("python3 not installed; CI installs it (.ci/run)")
		}
		t.Skip("python3 not installed")
	}
}
