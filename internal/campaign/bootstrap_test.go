package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
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
