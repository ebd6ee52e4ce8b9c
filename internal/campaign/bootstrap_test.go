package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

// TestBootstrapRefusesAnUndeclaredRecipientAtOnce: no waiting for a mailbox
// that can never exist.
func TestBootstrapRefusesAnUndeclaredRecipientAtOnce(t *testing.T) {
	s := writeCampaign(t, pairCampaign, nil)
	x := newTestExchange(t, s, "boot-0")
	start := time.Now()
	err := Bootstrap(context.Background(), x.client(t, ""), s, "boot-0", BootstrapOptions{Recipient: "nobody", Timeout: time.Minute})
	if !errors.Is(err, ErrNotDeclared) || !strings.Contains(err.Error(), `"nobody"`) || !strings.Contains(err.Error(), "declared: ping, pong") {
		t.Errorf("err %v; want ErrNotDeclared naming nobody and the declared agents", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("refused after %s, want at once", d)
	}
}

const academyBootCampaign = `{
  "name": "acad-boot", "initial_agent": "py", "user_task": "count the atoms", "bootstrap_action": "start_task",
  "agents": [{"name": "py", "command": ["x"], "protocol": "academy"}],
}`

// TestBootstrapAcademyRecipient: an Academy initial agent gets the task as an
// action request of the configured action with the task as its one positional
// argument; its answer (or its error) is logged (or returned); no answer in
// time is not an error.
func TestBootstrapAcademyRecipient(t *testing.T) {
	s := writeCampaign(t, academyBootCampaign, nil)
	const run = "boot-1"
	x := newTestExchange(t, s, run)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pc := x.agentClient(t, "py", "")
	py := agent.AgentID(run, "py")
	if err := pc.Register(ctx, py); err != nil {
		t.Fatal(err)
	}
	mode := make(chan string, 3)
	got := make(chan agent.Message, 3)
	go func() { // the Academy agent, by hand: read the request, answer per mode
		for range 3 {
			m, err := pc.Receive(ctx, py, 10*time.Second)
			if err != nil {
				return
			}
			got <- m
			var r agent.Message
			switch <-mode {
			case "ok":
				call, _ := m.DecodeAction()
				var task string
				_ = json.Unmarshal(call.Args[0], &task)
				r, _ = m.ActionResult(map[string]string{"done": task})
			case "fail":
				r, _ = m.UserError("Traceback (most recent call last):\nValueError: no atoms")
			default:
				continue // never answers
			}
			_ = pc.Send(ctx, r)
		}
	}()
	var log syncBuf
	mode <- "ok"
	if err := Bootstrap(ctx, x.client(t, ""), s, run, BootstrapOptions{Log: &log, Timeout: 5 * time.Second}); err != nil {
		t.Fatalf("bootstrap: %v\n%s", err, log.String())
	}
	m := <-got
	var body map[string]any
	_ = json.Unmarshal(m.Body, &body)
	if body["kind"] != "action-request" || body["action"] != "start_task" || body["pargs"] != `["count the atoms"]` || body["kargs"] != "{}" || body["serialization"] != "json" {
		t.Errorf("bootstrap request body %s", m.Body)
	}
	if m.Header.Src.Role != agent.RoleUser || m.Header.Src.NameOr("") != OperatorName {
		t.Errorf("bootstrap sent from %+v", m.Header.Src)
	}
	for _, w := range []string{"sent the user task to Academy agent py as action start_task", `py answered: {"done":"count the atoms"}`} {
		if !strings.Contains(log.String(), w) {
			t.Errorf("log lacks %q:\n%s", w, log.String())
		}
	}
	mode <- "fail"
	err := Bootstrap(ctx, x.client(t, ""), s, run, BootstrapOptions{Timeout: 5 * time.Second})
	var ae *agent.ActionError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "start_task action failed") || !strings.Contains(err.Error(), "ValueError: no atoms") {
		t.Errorf("a failing action: %v", err)
	}
	<-got
	log = syncBuf{}
	mode <- "silent"
	start := time.Now()
	if err := Bootstrap(ctx, x.client(t, ""), s, run, BootstrapOptions{Log: &log, Timeout: 5 * time.Second, AnswerTimeout: 300 * time.Millisecond}); err != nil {
		t.Errorf("no answer in time must not fail the bootstrap: %v", err)
	}
	if d := time.Since(start); d < 300*time.Millisecond || d > 5*time.Second {
		t.Errorf("returned after %s", d)
	}
	if !strings.Contains(log.String(), "no answer from py within 300ms; its start_task action keeps running") {
		t.Errorf("log: %s", log.String())
	}
}

// TestExampleAcademyChatRuns runs examples/campaigns/academy-chat.jsonc through
// the real wrapper (RunAgent, one per agent and site) on an in-process
// exchange, without the rig: the Python Academy-protocol planner registers
// itself, gets the task as receive_message, calls the wrapped calculator's
// add/echo, answers the bootstrap and shuts the calculator down; both exit 0
// with their mailboxes terminated, and the timeline is tagged by site.
func TestExampleAcademyChatRuns(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		rigenv.Missing(t, "python3 not installed; install it with apt-get install python3 to run this test")
	}
	s, err := Load(filepath.Join(exampleDir, "academy-chat.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(Strict); err != nil {
		t.Fatalf("example campaign is invalid: %v", err)
	}
	if !s.IsAcademy("planner") || s.IsAcademy("calculator") || s.BootstrapActionName() != "receive_message" {
		t.Fatalf("example: planner must be the Academy agent, calculator wrapped, action receive_message")
	}
	const run = "acad-example"
	x := newTestExchange(t, s, run)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type res struct {
		code int
		err  error
	}
	logs := map[string]*syncBuf{"planner": {}, "calculator": {}}
	results := map[string]chan res{"planner": make(chan res, 1), "calculator": make(chan res, 1)}
	for name, site := range map[string]string{"planner": "aurora", "calculator": "crux"} {
		go func() {
			code, err := RunAgent(ctx, AgentRun{Spec: s, RunID: run, Name: name, Site: site, Client: x.agentClient(t, name, site),
				ExchangeURL: x.url, Token: x.agentTok(name), StartupTimeout: 30 * time.Second, Poll: 20 * time.Millisecond,
				Log: logs[name], Stdout: logs[name], Stderr: logs[name], KillGrace: 2 * time.Second})
			results[name] <- res{code, err}
		}()
	}
	var boot syncBuf
	if err := Bootstrap(ctx, x.client(t, ""), s, run, BootstrapOptions{Timeout: 30 * time.Second, Poll: 20 * time.Millisecond, Log: &boot}); err != nil {
		t.Fatalf("bootstrap: %v\n%s\n%s", err, logs["planner"], logs["calculator"])
	}
	if !strings.Contains(boot.String(), `planner answered: {"task": "Add 2 and 3, then report.", "sum": 5`) {
		t.Errorf("bootstrap log:\n%s", boot.String())
	}
	for _, name := range []string{"planner", "calculator"} {
		select {
		case r := <-results[name]:
			if r.code != 0 || r.err != nil {
				t.Errorf("%s: status %d, %v\n%s", name, r.code, r.err, logs[name])
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s did not finish\n%s", name, logs[name])
		}
		if st, _ := x.client(t, "").Status(ctx, agent.AgentID(run, name)); st != agent.StatusTerminated {
			t.Errorf("%s's mailbox is %s after it exited", name, st)
		}
	}
	if !strings.Contains(logs["planner"].String(), "calculator says 2 + 3 = 5") || !strings.Contains(logs["calculator"].String(), "shutdown requested by planner") {
		t.Errorf("logs:\n%s\n%s", logs["planner"], logs["calculator"])
	}
	cross := 0
	for _, m := range x.srv.Timeline(run) {
		if m.Src == "planner" && m.Dest == "calculator" && m.Kind == agent.KindActionRequest && (m.SrcSite != "aurora" || m.DestSite != "crux") {
			t.Errorf("planner's call tagged %s -> %s", m.SrcSite, m.DestSite)
		}
		if m.CrossSite() {
			cross++
		}
	}
	if cross < 6 { // add, echo, mul and their answers, plus the shutdown request
		t.Errorf("%d cross-site messages in the timeline, want at least 6: %+v", cross, x.srv.Timeline(run))
	}
}
