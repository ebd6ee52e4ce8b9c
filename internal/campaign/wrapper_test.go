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
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

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
