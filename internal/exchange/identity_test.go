package exchange

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// chatCampaign is the example campaign's shape: the coordinator talks to both
// workers, each worker only to the coordinator.
func chatCampaign() model.Campaign {
	return model.Campaign{Name: "federated-chat", InitialAgent: "coordinator", Agents: []model.CampaignAgent{
		{Name: "coordinator", AllowedPeers: []string{"worker-a", "worker-b"}},
		{Name: "worker-a", AllowedPeers: []string{"coordinator"}},
		{Name: "worker-b", AllowedPeers: []string{"coordinator"}},
	}}
}

func holderBody(id EntityID, instance string, pid int) map[string]any {
	return map[string]any{"mailbox": id.Encode(), "holder": map[string]any{"instance": instance, "host": "node-7", "pid": pid}}
}

// runIdentitySuite reproduces finding 2 of issue 14 (one run token for every
// agent, allowed_peers checked against the src written in the message) and
// checks each hole is closed; every backend must pass it.
func runIdentitySuite(t *testing.T, newBackend func(t *testing.T) Backend) {
	setup := func(t *testing.T, cfg Config) (*harness, map[string]EntityID, map[string]string) {
		h := newHarness(t, newBackend(t), cfg)
		// The token exists first, the campaign comes second (the other order
		// is TestIdentityOrder's).
		if err := h.srv.RegisterCampaign(context.Background(), "run-a", chatCampaign()); err != nil {
			t.Fatal(err)
		}
		ids, toks := map[string]EntityID{}, map[string]string{}
		for _, n := range []string{"coordinator", "worker-a", "worker-b"} {
			ids[n], toks[n] = agentEnt("run-a", n), h.agentTok("run-a", n)
			h.expect("POST", "/mailbox", toks[n], holderBody(ids[n], n+"-1", 100), 200)
		}
		return h, ids, toks
	}

	t.Run("SendAsAnotherAgent", func(t *testing.T) {
		h, ids, toks := setup(t, Config{})
		// worker-a may not reach worker-b; as "coordinator" it could.
		forged, _ := pingReq(ids["coordinator"], ids["worker-b"])
		if text := h.send(toks["worker-a"], forged, 403); !strings.Contains(text, "worker-a") {
			t.Errorf("refusal does not name the authenticated agent: %q", text)
		}
		// The name alone cannot be forged either.
		name := "coordinator"
		renamed, _ := pingReq(EntityID{UID: ids["worker-a"].UID, Name: &name, Role: RoleAgent}, ids["worker-b"])
		h.send(toks["worker-a"], renamed, 403)
		// allowed_peers applies to the authenticated identity.
		direct, _ := pingReq(ids["worker-a"], ids["worker-b"])
		if text := h.send(toks["worker-a"], direct, 403); !strings.Contains(text, "allowed_peers") {
			t.Errorf("peer refusal %q", text)
		}
		ok, _ := pingReq(ids["worker-a"], ids["coordinator"])
		h.send(toks["worker-a"], ok, 200)
		// The run token does not send as an agent.
		h.send(h.tokA, forged, 403)
		if n := len(h.srv.Timeline("run-a")); n != 1 {
			t.Errorf("timeline has %d messages, want only the allowed one", n)
		}
	})

	t.Run("UserMailboxNeedsOperator", func(t *testing.T) {
		h, ids, toks := setup(t, Config{})
		u := ent("fake-operator", RoleUser)
		if text := h.expect("POST", "/mailbox", toks["worker-a"], map[string]any{"mailbox": u.Encode()}, 403); !strings.Contains(text, "user mailboxes") {
			t.Errorf("refusal %q", text)
		}
		// It cannot send from an unregistered user id, nor from one the operator made.
		m, _ := pingReq(u, ids["worker-b"])
		h.send(toks["worker-a"], m, 403)
		op := ent("mosaic", RoleUser)
		h.register(h.tokA, op, "")
		m2, _ := pingReq(op, ids["worker-b"])
		h.send(toks["worker-a"], m2, 403)
		h.send(h.tokA, m2, 200) // the operator may, from its user mailbox
	})

	t.Run("ReadAnotherMailbox", func(t *testing.T) {
		h, ids, toks := setup(t, Config{})
		m, _ := pingReq(ids["worker-a"], ids["coordinator"])
		h.send(toks["worker-a"], m, 200)
		coord := map[string]any{"mailbox": ids["coordinator"].Encode(), "timeout": 0.1}
		for _, path := range []string{"/message", "/mailbox/listen", "/mailbox/heartbeat", "/mailbox/stats"} {
			if code, text := h.call("GET", path, toks["worker-a"], coord); code != 403 {
				t.Errorf("worker-a GET %s on coordinator's mailbox: %d (%s), want 403", path, code, text)
			}
		}
		// The run token sees status and stats, not the messages.
		h.expect("GET", "/mailbox/stats", h.tokA, coord, 200)
		h.expect("GET", "/message", h.tokA, coord, 403)
		// Status of peers stays open to every agent of the run (rendezvous).
		if st := h.status(toks["worker-a"], ids["coordinator"]); st != StatusActive {
			t.Errorf("peer status %s", st)
		}
		// The message is still there for its owner.
		if got := h.recv(toks["coordinator"], ids["coordinator"], 1); got != m {
			t.Errorf("coordinator got %s", got)
		}
	})

	t.Run("DeleteAnotherMailbox", func(t *testing.T) {
		h, ids, toks := setup(t, Config{})
		h.expect("DELETE", "/mailbox", toks["worker-a"], map[string]any{"mailbox": ids["coordinator"].Encode()}, 403)
		if st := h.status(h.tokA, ids["coordinator"]); st != StatusActive {
			t.Fatalf("coordinator is %s after worker-a's DELETE", st)
		}
		h.expect("POST", "/mailbox", toks["coordinator"], holderBody(ids["coordinator"], "coordinator-1", 100), 200)
		// Its own DELETE works (Academy semantics): later registration is 419
		// until the operator reopens it for a restart.
		h.expect("DELETE", "/mailbox", toks["worker-a"], map[string]any{"mailbox": ids["worker-a"].Encode()}, 200)
		h.expect("POST", "/mailbox", toks["worker-a"], holderBody(ids["worker-a"], "worker-a-2", 101), StatusTerminatedCode)
		h.expect("POST", "/mailbox", h.tokA, map[string]any{"mailbox": ids["worker-a"].Encode()}, 200)
		if st := h.status(h.tokA, ids["worker-a"]); st != StatusActive {
			t.Fatalf("reopened mailbox is %s", st)
		}
		h.expect("POST", "/mailbox", toks["worker-a"], holderBody(ids["worker-a"], "worker-a-2", 101), 200)
		// The operator terminates any mailbox of the run (teardown).
		h.expect("DELETE", "/mailbox", h.tokA, map[string]any{"mailbox": ids["worker-b"].Encode()}, 200)
	})

	t.Run("RegisterOnlyOwnUID", func(t *testing.T) {
		h, ids, toks := setup(t, Config{})
		h.expect("POST", "/mailbox", toks["worker-a"], map[string]any{"mailbox": ids["worker-b"].Encode()}, 403)
		other := agentEnt("run-a", "worker-c") // undeclared
		h.expect("POST", "/mailbox", toks["worker-a"], map[string]any{"mailbox": other.Encode()}, 403)
		// Its own uid under another name is refused too.
		name := "coordinator"
		h.expect("POST", "/mailbox", toks["worker-a"], map[string]any{"mailbox": EntityID{UID: ids["worker-a"].UID, Name: &name, Role: RoleAgent}.Encode()}, 403)
		// The run token does not create agent mailboxes in a campaign run.
		fresh := newHarness(t, newBackend(t), Config{})
		if err := fresh.srv.RegisterCampaign(context.Background(), "run-a", chatCampaign()); err != nil {
			t.Fatal(err)
		}
		fresh.expect("POST", "/mailbox", fresh.tokA, map[string]any{"mailbox": agentEnt("run-a", "coordinator").Encode()}, 403)
	})

	t.Run("SecondLiveHolder", func(t *testing.T) {
		h, ids, toks := setup(t, Config{})
		text := h.expect("POST", "/mailbox", toks["coordinator"], holderBody(ids["coordinator"], "coordinator-2", 200), 409)
		for _, want := range []string{"coordinator-1", "node-7", "pid 100"} {
			if !strings.Contains(text, want) {
				t.Errorf("409 text %q does not name the holder (%s)", text, want)
			}
		}
		// A stock client without holder cannot take it over either.
		h.expect("POST", "/mailbox", toks["coordinator"], map[string]any{"mailbox": ids["coordinator"].Encode()}, 409)
		// The same instance re-registers at once (idempotent).
		h.expect("POST", "/mailbox", toks["coordinator"], holderBody(ids["coordinator"], "coordinator-1", 100), 200)
	})

	t.Run("CrashedAgentReregisters", func(t *testing.T) {
		h, ids, toks := setup(t, Config{LeaseTTL: time.Second})
		h.expect("POST", "/mailbox", toks["coordinator"], holderBody(ids["coordinator"], "coordinator-2", 200), 409)
		// coordinator-1 crashed: no receive, heartbeat or send renews its lease.
		time.Sleep(1200 * time.Millisecond)
		h.expect("POST", "/mailbox", toks["coordinator"], holderBody(ids["coordinator"], "coordinator-2", 200), 200)
		h.expect("POST", "/mailbox", toks["coordinator"], holderBody(ids["coordinator"], "coordinator-1", 100), 409)
	})

	t.Run("LeaseRenewedByReceive", func(t *testing.T) {
		h, ids, toks := setup(t, Config{LeaseTTL: time.Second})
		// A long blocking receive of the holder keeps its lease alive.
		done := make(chan int, 1)
		go func() {
			code, _ := h.call("GET", "/message", toks["worker-b"], map[string]any{"mailbox": ids["worker-b"].Encode(), "timeout": 2})
			done <- code
		}()
		time.Sleep(1500 * time.Millisecond)
		h.expect("POST", "/mailbox", toks["worker-b"], holderBody(ids["worker-b"], "worker-b-2", 300), 409)
		if code := <-done; code != 408 {
			t.Errorf("receive ended %d, want 408", code)
		}
	})

	t.Run("LeaseRenewedByHeartbeat", func(t *testing.T) {
		h, ids, toks := setup(t, Config{LeaseTTL: time.Second})
		hb := map[string]any{"mailbox": ids["worker-a"].Encode()}
		for range 5 { // 1.5 s of heartbeats, each within the 1 s lease
			time.Sleep(300 * time.Millisecond)
			h.expect("GET", "/mailbox/heartbeat", toks["worker-a"], hb, 200)
		}
		h.expect("POST", "/mailbox", toks["worker-a"], holderBody(ids["worker-a"], "worker-a-2", 301), 409)
		// The operator's heartbeat query does not keep a crashed agent alive.
		for range 5 {
			time.Sleep(300 * time.Millisecond)
			h.expect("GET", "/mailbox/heartbeat", h.tokA, hb, 200)
		}
		h.expect("POST", "/mailbox", toks["worker-a"], holderBody(ids["worker-a"], "worker-a-2", 301), 200)
	})

	t.Run("NoSquattingAcrossRuns", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{})
		ctx := context.Background()
		// run-b has a campaign of its own; run-a's coordinator uid is
		// deterministic, so run-b's holders know it.
		if err := h.srv.RegisterCampaign(ctx, "run-b", chatCampaign()); err != nil {
			t.Fatal(err)
		}
		target := agentEnt("run-a", "coordinator")
		h.expect("POST", "/mailbox", h.tokB, map[string]any{"mailbox": target.Encode()}, 403)
		h.expect("POST", "/mailbox", h.agentTok("run-b", "coordinator"), map[string]any{"mailbox": target.Encode()}, 403)
		// A run without campaign (open) registers the uid in its own namespace
		// only: run-a is untouched.
		h3 := newHarness(t, newBackend(t), Config{})
		h3.register(h3.tokB, target, "")
		if err := h3.srv.RegisterCampaign(ctx, "run-a", chatCampaign()); err != nil {
			t.Fatal(err)
		}
		if st := h3.status(h3.tokA, target); st != StatusMissing {
			t.Fatalf("run-a sees run-b's registration: %s", st)
		}
		h3.expect("POST", "/mailbox", h3.agentTok("run-a", "coordinator"), holderBody(target, "c-1", 1), 200)
		op := ent("mosaic", RoleUser)
		h3.register(h3.tokA, op, "")
		m, _ := pingReq(op, target)
		h3.send(h3.tokA, m, 200)
		h3.expect("GET", "/message", h3.tokB, map[string]any{"mailbox": target.Encode(), "timeout": 0.1}, 408) // run-b's own, empty
		if got := h3.recv(h3.agentTok("run-a", "coordinator"), target, 1); got != m {
			t.Errorf("run-a's coordinator got %s", got)
		}
	})

	t.Run("RunTokenCannotSquatAgentUID", func(t *testing.T) {
		// Before worker-a starts, the run token makes a user mailbox under
		// worker-a's (deterministic) uid to read what peers send it.
		h := newHarness(t, newBackend(t), Config{})
		if err := h.srv.RegisterCampaign(context.Background(), "run-a", chatCampaign()); err != nil {
			t.Fatal(err)
		}
		wa := agentEnt("run-a", "worker-a")
		for _, name := range []string{"worker-a", "spy"} {
			squat := EntityID{UID: wa.UID, Name: &name, Role: RoleUser}
			text := h.expect("POST", "/mailbox", h.tokA, map[string]any{"mailbox": squat.Encode()}, 403)
			if !strings.Contains(text, `"worker-a"`) || !strings.Contains(text, "declared") {
				t.Errorf("refusal %q does not say the uid is declared agent worker-a's", text)
			}
		}
		if st := h.status(h.tokA, wa); st != StatusMissing {
			t.Fatalf("worker-a's uid is %s after the refused squat", st)
		}
		h.expect("POST", "/mailbox", h.agentTok("run-a", "worker-a"), holderBody(wa, "worker-a-1", 1), 200)
		h.expect("GET", "/message", h.tokA, map[string]any{"mailbox": wa.Encode(), "timeout": 0.1}, 403)
		// Other user mailboxes are still the operator's to make.
		h.register(h.tokA, ent("mosaic", RoleUser), "")
	})

	t.Run("RegistrationMustMatchRecord", func(t *testing.T) {
		// A run without campaign: the operator registers any mailbox, but a
		// uid keeps the role and name it was registered with.
		h := newHarness(t, newBackend(t), Config{})
		wa := agentEnt("run-a", "worker-a")
		name := "worker-a"
		squat := EntityID{UID: wa.UID, Name: &name, Role: RoleUser}
		h.register(h.tokA, squat, "")
		if text := h.expect("POST", "/mailbox", h.tokA, map[string]any{"mailbox": wa.Encode()}, 409); !strings.Contains(text, "role user") || !strings.Contains(text, "role agent") {
			t.Errorf("role conflict %q does not name both roles", text)
		}
		other := "worker-b"
		text := h.expect("POST", "/mailbox", h.tokA, map[string]any{"mailbox": EntityID{UID: wa.UID, Name: &other, Role: RoleUser}.Encode()}, 409)
		if !strings.Contains(text, `"worker-a"`) || !strings.Contains(text, `"worker-b"`) || strings.Contains(text, "role user") {
			t.Errorf("name conflict %q does not name just the two names", text)
		}
		h.register(h.tokA, squat, "") // the same registration again is idempotent
		// The campaign arrives after the squat: worker-a's own registration
		// is refused, it does not silently take the user mailbox.
		if err := h.srv.RegisterCampaign(context.Background(), "run-a", chatCampaign()); err != nil {
			t.Fatal(err)
		}
		if text := h.expect("POST", "/mailbox", h.agentTok("run-a", "worker-a"), holderBody(wa, "worker-a-1", 1), 409); !strings.Contains(text, "role user") {
			t.Errorf("agent registration over a user mailbox: %q", text)
		}
		h.expect("POST", "/mailbox", h.tokA, map[string]any{"mailbox": wa.Encode()}, 409) // nor "reopened" as an agent
		// Nor do the coordinator's messages to worker-a land in the user mailbox.
		co := agentEnt("run-a", "coordinator")
		h.expect("POST", "/mailbox", h.agentTok("run-a", "coordinator"), holderBody(co, "coordinator-1", 2), 200)
		m, _ := pingReq(co, wa)
		if text := h.send(h.agentTok("run-a", "coordinator"), m, 403); !strings.Contains(text, "dest") {
			t.Errorf("send to worker-a's uid held by a user mailbox: %q", text)
		}
		h.expect("GET", "/message", h.tokA, map[string]any{"mailbox": squat.Encode(), "timeout": 0.1}, 408)
	})

	t.Run("Revoke", func(t *testing.T) {
		h, ids, toks := setup(t, Config{})
		if err := h.srv.RevokeToken(context.Background(), h.tokA); err != nil {
			t.Fatal(err)
		}
		h.expect("GET", "/mailbox", toks["worker-a"], map[string]any{"mailbox": ids["worker-a"].Encode()}, 403)
	})
}

func TestIdentityMemory(t *testing.T) {
	runIdentitySuite(t, func(*testing.T) Backend { return NewMemory() })
}

func TestIdentityRedis(t *testing.T) {
	url := startRedis(t)
	n := 0
	runIdentitySuite(t, func(t *testing.T) Backend {
		n++
		return newRedisBackend(t, url, "id"+strings.ReplaceAll(t.Name(), "/", "-")+":"+string(rune('a'+n))+":")
	})
}

// TestIdentityOrder: agent tokens work whichever of the campaign and the run
// token the server learns first; a token derived from another run token, or
// for another run, is refused; the bearer scheme is case-insensitive.
func TestIdentityOrder(t *testing.T) {
	ctx := context.Background()
	srv := NewServer(Config{})
	if err := srv.RegisterCampaign(ctx, "r", chatCampaign()); err != nil {
		t.Fatal(err)
	}
	op, err := srv.IssueToken(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, srv: srv, hc: newHarness(t, NewMemory(), Config{}).hc}
	h.url = serveTest(t, srv)
	id := agentEnt("r", "worker-a")
	h.expect("POST", "/mailbox", agent.AgentToken(op, "r", id.UID), map[string]any{"mailbox": id.Encode()}, 200)
	for name, tok := range map[string]string{
		"other operator": agent.AgentToken("mxt_other", "r", id.UID),
		"other run":      agent.AgentToken(op, "r2", id.UID),
		"other agent":    agent.AgentToken(op, "r", agent.UID("r", "worker-b")),
	} {
		if code, _ := h.call("GET", "/mailbox/stats", tok, map[string]any{"mailbox": id.Encode()}); code != 403 {
			t.Errorf("%s: %d, want 403", name, code)
		}
	}
	if err := srv.AddToken(ctx, "mxa_looks_like_an_agent", "r"); err == nil {
		t.Error("a run token with the agent prefix was accepted")
	}
	for _, scheme := range []string{"bearer", "BEARER", "Bearer"} {
		code, text, err := rawCallAuth(h.url+"/mailbox", scheme+" "+op, `{"mailbox":`+jsonString(id.Encode())+`}`)
		if err != nil || code != 200 {
			t.Errorf("scheme %q: %d %s %v", scheme, code, text, err)
		}
	}
	if code, _, _ := rawCallAuth(h.url+"/mailbox", "Basic "+op, `{"mailbox":`+jsonString(id.Encode())+`}`); code != 401 {
		t.Errorf("Basic scheme: %d, want 401", code)
	}
}
