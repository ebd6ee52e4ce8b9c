package exchange

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
)

// runTimelineRouteSuite: GET /run/timeline answers the run's delivered
// messages and per-site counts to the run's operator only; agent tokens, other
// runs' tokens and no token see nothing of it. Every backend must pass it.
func runTimelineRouteSuite(t *testing.T, newBackend func(t *testing.T) Backend) {
	h := newHarness(t, newBackend(t), Config{})
	ctx := context.Background()
	if err := h.srv.RegisterCampaign(ctx, "run-a", chatCampaign()); err != nil {
		t.Fatal(err)
	}
	for n, s := range map[string]string{"coordinator": "alpha", "worker-a": "beta", "worker-b": "beta"} {
		if err := h.srv.SetAgentSite(ctx, "run-a", n, s); err != nil {
			t.Fatal(err)
		}
	}
	ids, toks := map[string]EntityID{}, map[string]string{}
	for _, n := range []string{"coordinator", "worker-a", "worker-b"} {
		ids[n], toks[n] = agentEnt("run-a", n), h.agentTok("run-a", n)
		h.expect("POST", "/mailbox", toks[n], holderBody(ids[n], n+"-1", 100), 200)
	}
	m1, _ := pingReq(ids["coordinator"], ids["worker-a"])
	h.send(toks["coordinator"], m1, 200)
	m2, _ := pingReq(ids["worker-a"], ids["coordinator"])
	h.send(toks["worker-a"], m2, 200)
	refused, _ := pingReq(ids["worker-a"], ids["worker-b"]) // not an allowed peer: never delivered
	h.send(toks["worker-a"], refused, 403)

	var tl agent.Timeline
	for _, body := range []any{nil, map[string]any{}} { // the body is optional
		if err := json.Unmarshal([]byte(h.expect("GET", agent.TimelinePath, h.tokA, body, 200)), &tl); err != nil {
			t.Fatal(err)
		}
		if tl.Run != "run-a" || len(tl.Messages) != 2 {
			t.Fatalf("timeline %+v, want run-a's 2 delivered messages", tl)
		}
	}
	if m := tl.Messages[0]; m.Src != "coordinator" || m.Dest != "worker-a" || m.SrcSite != "alpha" || m.DestSite != "beta" || !m.CrossSite() || m.Kind != "ping-request" {
		t.Errorf("first record %+v", m)
	}
	counts := map[string]agent.SiteCount{}
	for _, c := range tl.Counts {
		counts[c.Site] = c
	}
	if a, b := counts["alpha"], counts["beta"]; a.Mailboxes != 1 || a.Sent != 1 || a.Received != 1 || a.CrossSite != 1 || b.Mailboxes != 2 || b.Sent != 1 || b.Received != 1 {
		t.Errorf("counts %+v", tl.Counts)
	}
	// Agents, strangers and other runs' operators get nothing of run-a.
	if text := h.expect("GET", agent.TimelinePath, toks["worker-a"], map[string]any{}, 403); !strings.Contains(text, "run's token") {
		t.Errorf("agent refusal %q does not say which token to use", text)
	}
	h.expect("GET", agent.TimelinePath, "", map[string]any{}, 401)
	h.expect("GET", agent.TimelinePath, "mxt_not-a-token", map[string]any{}, 403)
	var other agent.Timeline
	if err := json.Unmarshal([]byte(h.expect("GET", agent.TimelinePath, h.tokB, nil, 200)), &other); err != nil {
		t.Fatal(err)
	}
	if other.Run != "run-b" || len(other.Messages) != 0 || other.Messages == nil {
		t.Errorf("run-b's operator sees %+v, want its own empty timeline", other)
	}
	// Malformed bodies and methods.
	h.expect("GET", agent.TimelinePath, h.tokA, "[1,2]", 400)
	h.expect("GET", agent.TimelinePath, h.tokA, "{", 400)
	if code, _ := h.call("POST", agent.TimelinePath, h.tokA, map[string]any{}); code != 405 {
		t.Errorf("POST %s: %d, want 405", agent.TimelinePath, code)
	}

	// The SDK reads the same, and says which token to use when refused.
	op, err := agent.New(h.url, h.tokA)
	if err != nil {
		t.Fatal(err)
	}
	got, err := op.Timeline(ctx)
	if err != nil || len(got.Messages) != 2 || len(got.Counts) != len(tl.Counts) {
		t.Fatalf("Client.Timeline: %+v %v", got, err)
	}
	ag, _ := agent.New(h.url, toks["worker-a"])
	if _, err := ag.Timeline(ctx); !errors.Is(err, agent.ErrForbidden) || !strings.Contains(err.Error(), "run's token") {
		t.Errorf("Client.Timeline with an agent token: %v", err)
	}
}

func TestTimelineRouteMemory(t *testing.T) {
	runTimelineRouteSuite(t, func(*testing.T) Backend { return NewMemory() })
}

func TestTimelineRouteRedis(t *testing.T) {
	url := startRedis(t)
	runTimelineRouteSuite(t, func(t *testing.T) Backend { return newRedisBackend(t, url, "tl:") })
}

// TestNewRedisHidesThePassword: a Redis URL that does not parse is reported
// without its password.
func TestNewRedisHidesThePassword(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, u := range []string{"redis://:s3cret@127.0.0.1:notaport/0", "http://:s3cret@127.0.0.1:1/0", "redis://:s3cret@[::1/0"} {
		_, err := NewRedis(ctx, u, "")
		if err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("NewRedis(%q): %v", u, err)
		}
	}
}
