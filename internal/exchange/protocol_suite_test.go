package exchange

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// runProtocolSuite runs the whole protocol test suite against a backend
// factory; every backend must pass it unchanged (parity).
func runProtocolSuite(t *testing.T, newBackend func(t *testing.T) Backend) {
	t.Run("Auth", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{})
		body := map[string]any{"mailbox": ent("a", RoleAgent).Encode()}
		if code, _ := h.call("GET", "/mailbox", "", body); code != 401 {
			t.Errorf("no Authorization: %d, want 401", code)
		}
		if code, _ := h.call("GET", "/mailbox", "not-a-token", body); code != 403 {
			t.Errorf("unknown token: %d, want 403", code)
		}
		if code, _ := h.call("GET", "/mailbox", "Basic abc", body); code != 403 {
			t.Errorf("garbage token: %d, want 403", code)
		}
		if code, _ := h.call("GET", "/mailbox", h.tokA, body); code != 200 {
			t.Fatalf("valid token: %d", code)
		}
		if err := h.srv.RevokeToken(context.Background(), h.tokA); err != nil {
			t.Fatal(err)
		}
		if code, _ := h.call("GET", "/mailbox", h.tokA, body); code != 403 {
			t.Errorf("revoked token: %d, want 403", code)
		}
		if code, _ := h.call("GET", "/mailbox", h.tokB, body); code != 200 {
			t.Errorf("other run's token revoked too: %d", code)
		}
		basic, _ := http.NewRequest("GET", h.url+"/mailbox", strings.NewReader(`{"mailbox":`+jsonString(ent("a", RoleAgent).Encode())+`}`))
		basic.Header.Set("Authorization", "Basic dXNlcjpwdw==")
		if resp, err := h.hc.Do(basic); err != nil || resp.StatusCode != 401 {
			t.Errorf("Basic auth: %v %v, want 401", resp, err)
		} else {
			resp.Body.Close()
		}
		req := h.open(context.Background(), "GET", "/discover", "", map[string]any{})
		req.Body.Close()
		if req.StatusCode != 401 {
			t.Errorf("discover without token: %d", req.StatusCode)
		}
	})

	t.Run("AnonymousRun", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{AnonymousRun: "run-a"})
		a := ent("a", RoleAgent)
		h.register("", a, "")
		if st := h.status(h.tokA, a); st != StatusActive {
			t.Errorf("anonymous registration not in run-a: %s", st)
		}
	})

	t.Run("BadRequests", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{})
		for _, tc := range []struct{ name, method, path, body string }{
			{"not json", "POST", "/mailbox", "{"},
			{"array", "POST", "/mailbox", "[]"},
			{"no mailbox", "POST", "/mailbox", "{}"},
			{"mailbox not string", "POST", "/mailbox", `{"mailbox": {"uid": "x"}}`},
			{"mailbox bad json", "GET", "/mailbox", `{"mailbox": "{"}`},
			{"mailbox no uid", "GET", "/mailbox", `{"mailbox": "{\"name\":\"a\"}"}`},
			{"mailbox bad uid", "GET", "/mailbox", `{"mailbox": "{\"uid\":\"nope\"}"}`},
			{"mailbox bad role", "GET", "/mailbox", `{"mailbox": "{\"uid\":\"6ba7b810-9dad-11d1-80b4-00c04fd430c8\",\"role\":\"admin\"}"}`},
			{"mailbox extra field", "GET", "/mailbox", `{"mailbox": "{\"uid\":\"6ba7b810-9dad-11d1-80b4-00c04fd430c8\",\"x\":1}"}`},
			{"agent not string", "POST", "/mailbox", `{"mailbox": "{\"uid\":\"6ba7b810-9dad-11d1-80b4-00c04fd430c8\"}", "agent": 3}`},
			{"timeout not number", "GET", "/message", `{"mailbox": "{\"uid\":\"6ba7b810-9dad-11d1-80b4-00c04fd430c8\"}", "timeout": "soon"}`},
			{"no message", "PUT", "/message", `{}`},
			{"message not json", "PUT", "/message", `{"message": "{"}`},
			{"message no header", "PUT", "/message", `{"message": "{\"body\":{\"kind\":\"x\"}}"}`},
			{"discover bad flag", "GET", "/discover", `{"agent": "A", "allow_subclasses": "yes"}`},
		} {
			if code, text := h.call(tc.method, tc.path, h.tokA, tc.body); code != 400 {
				t.Errorf("%s: %d (%s), want 400", tc.name, code, text)
			}
		}
		a, b := ent("a", RoleAgent), ent("b", RoleAgent)
		h.register(h.tokA, a, "")
		h.register(h.tokA, b, "")
		for name, m := range map[string]string{
			"bad header kind":   academyMsg(a, b, "gossip", [16]byte{1}, `{"kind":"x"}`),
			"body without kind": academyMsg(a, b, KindRequest, [16]byte{1}, `{"text":"x"}`),
			"body not object":   academyMsg(a, b, KindRequest, [16]byte{1}, `"hi"`),
		} {
			if code, text := h.call("PUT", "/message", h.tokA, map[string]any{"message": m}); code != 400 {
				t.Errorf("%s: %d (%s), want 400", name, code, text)
			}
		}
		if code, _ := h.call("POST", "/discover", h.tokA, "{}"); code != 405 {
			t.Errorf("POST /discover: %d, want 405", code)
		}
	})

	t.Run("RegisterStatusRuns", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{})
		a := ent("a", RoleAgent)
		if st := h.status(h.tokA, a); st != StatusMissing {
			t.Fatalf("unknown mailbox status %q, want MISSING (200)", st)
		}
		h.register(h.tokA, a, "")
		h.register(h.tokA, a, "") // idempotent
		if st := h.status(h.tokA, a); st != StatusActive {
			t.Fatalf("status %q, want ACTIVE", st)
		}
		// Mailboxes are namespaced by run: to run-b the uid is unknown, and
		// nothing run-b does with it reaches run-a's mailbox.
		body := map[string]any{"mailbox": a.Encode(), "timeout": 0.05}
		if st := h.status(h.tokB, a); st != StatusMissing {
			t.Errorf("run-b sees run-a's mailbox: %s", st)
		}
		for _, r := range []struct {
			method, path string
			want         int
		}{
			{"GET", "/mailbox/heartbeat", 404}, {"GET", "/mailbox/stats", 404}, {"GET", "/message", 404},
			{"GET", "/mailbox/listen", 404}, {"DELETE", "/mailbox", 200}, {"POST", "/mailbox", 200}, {"DELETE", "/mailbox", 200},
		} {
			if code, text := h.call(r.method, r.path, h.tokB, body); code != r.want {
				t.Errorf("run-b %s %s with run-a's uid: %d (%s), want %d", r.method, r.path, code, text, r.want)
			}
		}
		if st := h.status(h.tokB, a); st != StatusTerminated {
			t.Errorf("run-b's own mailbox of that uid: %s, want TERMINATED", st)
		}
		if st := h.status(h.tokA, a); st != StatusActive {
			t.Fatalf("other run could change the mailbox: %s", st)
		}
	})

	t.Run("SendReceive", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{})
		a, b := ent("a", RoleAgent), ent("b", RoleUser)
		h.register(h.tokA, a, "")
		h.register(h.tokA, b, "")
		// Pretty-printed on the way in, compact on the way out.
		m, _ := pingReq(b, a)
		var pretty map[string]any
		_ = json.Unmarshal([]byte(m), &pretty)
		pj, _ := json.MarshalIndent(pretty, "", "  ")
		h.send(h.tokA, string(pj), 200)
		got := h.recv(h.tokA, a, 5)
		var gm, wm map[string]any
		_ = json.Unmarshal([]byte(got), &gm)
		_ = json.Unmarshal([]byte(m), &wm)
		if strings.Contains(got, "\n") || !jsonEqual(gm, wm) {
			t.Fatalf("received %s, want compact %s", got, m)
		}
		// FIFO
		m1, _ := pingReq(b, a)
		m2, _ := pingReq(b, a)
		h.send(h.tokA, m1, 200)
		h.send(h.tokA, m2, 200)
		if r1, r2 := h.recv(h.tokA, a, 1), h.recv(h.tokA, a, 1); r1 != m1 || r2 != m2 {
			t.Fatalf("order: got %s, %s", r1, r2)
		}
		start := time.Now()
		if code, text := h.call("GET", "/message", h.tokA, map[string]any{"mailbox": a.Encode(), "timeout": 0.1}); code != 408 {
			t.Fatalf("empty receive: %d (%s), want 408", code, text)
		}
		if el := time.Since(start); el < 90*time.Millisecond || el > 3*time.Second {
			t.Errorf("timeout 0.1 s took %s", el)
		}
		if code, _ := h.call("GET", "/message", h.tokA, map[string]any{"mailbox": ent("x", RoleAgent).Encode(), "timeout": 0.1}); code != 404 {
			t.Errorf("receive on unknown mailbox: %d, want 404", code)
		}
		// Blocking receive wakes on a later send.
		done := make(chan string, 1)
		go func() { done <- h.recv(h.tokA, a, 10) }()
		time.Sleep(100 * time.Millisecond)
		m3, _ := pingReq(b, a)
		h.send(h.tokA, m3, 200)
		select {
		case got := <-done:
			if got != m3 {
				t.Errorf("blocking receive got %s", got)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("blocking receive did not wake")
		}
		// Destination errors.
		ghost := ent("ghost", RoleAgent)
		m4, _ := pingReq(b, ghost)
		h.send(h.tokA, m4, 404)
		other := ent("other", RoleAgent)
		h.register(h.tokB, other, "")
		m5, _ := pingReq(b, other)
		h.send(h.tokA, m5, 404) // run-b's mailbox does not exist in run-a
		// A sender whose header does not match its registered mailbox is refused.
		liar := "a-renamed"
		m6, _ := pingReq(EntityID{UID: b.UID, Name: &liar, Role: RoleAgent}, a) // b is the user "b"
		h.send(h.tokA, m6, 403)
	})

	t.Run("SizeLimit", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{MaxMessageBytes: 1024})
		a, b := ent("a", RoleAgent), ent("b", RoleAgent)
		h.register(h.tokA, a, "")
		h.register(h.tokA, b, "")
		ok := academyMsg(a, b, KindRequest, [16]byte{1}, `{"kind":"mosaic-text","text":"`+strings.Repeat("x", 500)+`"}`)
		h.send(h.tokA, ok, 200)
		big := academyMsg(a, b, KindRequest, [16]byte{2}, `{"kind":"mosaic-text","text":"`+strings.Repeat("x", 2000)+`"}`)
		if text := h.send(h.tokA, big, 413); !strings.Contains(text, "larger than limit 1024") {
			t.Errorf("413 text %q", text)
		}
		huge := academyMsg(a, b, KindRequest, [16]byte{3}, `{"kind":"mosaic-text","text":"`+strings.Repeat("x", 200<<10)+`"}`)
		h.send(h.tokA, huge, 413)
		// Default limit is 1 MiB.
		h2 := newHarness(t, newBackend(t), Config{})
		h2.register(h2.tokA, a, "")
		h2.register(h2.tokA, b, "")
		h2.send(h2.tokA, academyMsg(a, b, KindRequest, [16]byte{4}, `{"kind":"t","text":"`+strings.Repeat("x", 1000<<10)+`"}`), 200)
		h2.send(h2.tokA, academyMsg(a, b, KindRequest, [16]byte{5}, `{"kind":"t","text":"`+strings.Repeat("x", 1<<20)+`"}`), 413)
	})

	t.Run("Terminate", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{})
		a, b := ent("a", RoleAgent), ent("b", RoleAgent)
		h.register(h.tokA, a, "")
		h.register(h.tokA, b, "")
		req, tag := pingReq(a, b)
		h.send(h.tokA, req, 200)
		h.expect("DELETE", "/mailbox", h.tokA, map[string]any{"mailbox": b.Encode()}, 200)
		h.expect("DELETE", "/mailbox", h.tokA, map[string]any{"mailbox": b.Encode()}, 200) // again: no-op
		h.expect("DELETE", "/mailbox", h.tokA, map[string]any{"mailbox": ent("x", RoleAgent).Encode()}, 200)
		if st := h.status(h.tokA, b); st != StatusTerminated {
			t.Fatalf("status %s, want TERMINATED", st)
		}
		// The pending request was answered with MAILBOX_TERMINATED.
		var reply struct {
			Header Header
			Body   struct {
				ErrorCode int      `json:"error_code"`
				MailboxID EntityID `json:"mailbox_id"`
				Kind      string
			}
		}
		if err := json.Unmarshal([]byte(h.recv(h.tokA, a, 2)), &reply); err != nil {
			t.Fatal(err)
		}
		if reply.Header.Tag != tag || reply.Header.Kind != KindResponse || reply.Header.Src.UID != b.UID || reply.Header.Dest.UID != a.UID ||
			reply.Body.Kind != "academy-error-response" || reply.Body.ErrorCode != 0 || reply.Body.MailboxID.UID != b.UID {
			t.Fatalf("error reply %+v", reply)
		}
		m, _ := pingReq(a, b)
		h.send(h.tokA, m, StatusTerminatedCode)
		h.expect("GET", "/message", h.tokA, map[string]any{"mailbox": b.Encode(), "timeout": 0.1}, StatusTerminatedCode)
		h.expect("GET", "/mailbox/listen", h.tokA, map[string]any{"mailbox": b.Encode(), "timeout": 0.1}, StatusTerminatedCode)
		h.expect("POST", "/mailbox", h.tokA, map[string]any{"mailbox": b.Encode()}, StatusTerminatedCode)
		// A blocked receiver is released with 419.
		c := ent("c", RoleAgent)
		h.register(h.tokA, c, "")
		done := make(chan int, 1)
		go func() {
			code, _ := h.call("GET", "/message", h.tokA, map[string]any{"mailbox": c.Encode(), "timeout": 10})
			done <- code
		}()
		time.Sleep(150 * time.Millisecond)
		h.expect("DELETE", "/mailbox", h.tokA, map[string]any{"mailbox": c.Encode()}, 200)
		select {
		case code := <-done:
			if code != StatusTerminatedCode {
				t.Errorf("blocked receive ended with %d, want 419", code)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("blocked receive not released by terminate")
		}
	})

	t.Run("Discover", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{})
		base, sub, other, dead := ent("base", RoleAgent), ent("sub", RoleAgent), ent("other", RoleAgent), ent("dead", RoleAgent)
		h.register(h.tokA, base, "m.Base")
		h.register(h.tokA, sub, "m.Sub,m.Base")
		h.register(h.tokA, other, "m.Other")
		h.register(h.tokA, dead, "m.Base")
		h.register(h.tokA, ent("user", RoleUser), "")
		h.register(h.tokB, ent("b-base", RoleAgent), "m.Base")
		h.expect("DELETE", "/mailbox", h.tokA, map[string]any{"mailbox": dead.Encode()}, 200)
		disc := func(body map[string]any) []string {
			var out struct {
				AgentIDs string `json:"agent_ids"`
			}
			_ = json.Unmarshal([]byte(h.expect("GET", "/discover", h.tokA, body, 200)), &out)
			if out.AgentIDs == "" {
				return nil
			}
			return strings.Split(out.AgentIDs, ",")
		}
		if got := disc(map[string]any{"agent": "m.Base", "allow_subclasses": true}); !sameSet(got, base.UID.String(), sub.UID.String()) {
			t.Errorf("subclasses: %v", got)
		}
		if got := disc(map[string]any{"agent": "m.Base", "allow_subclasses": false}); !sameSet(got, base.UID.String()) {
			t.Errorf("exact: %v", got)
		}
		if got := disc(map[string]any{"agent": "m.None", "allow_subclasses": true}); len(got) != 0 {
			t.Errorf("none: %v", got)
		}
		if got := disc(map[string]any{}); !sameSet(got, base.UID.String(), sub.UID.String(), other.UID.String()) {
			t.Errorf("all agents of run: %v", got)
		}
	})

	t.Run("HeartbeatStats", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{})
		a, b := ent("a", RoleAgent), ent("b", RoleAgent)
		h.register(h.tokA, a, "")
		h.register(h.tokA, b, "")
		var hb struct{ Heartbeat *float64 }
		_ = json.Unmarshal([]byte(h.expect("GET", "/mailbox/heartbeat", h.tokA, map[string]any{"mailbox": a.Encode()}, 200)), &hb)
		if hb.Heartbeat == nil || *hb.Heartbeat < 0 || *hb.Heartbeat > 60 {
			t.Errorf("heartbeat after register: %v", hb.Heartbeat)
		}
		h.expect("GET", "/mailbox/heartbeat", h.tokA, map[string]any{"mailbox": ent("x", RoleAgent).Encode()}, 404)
		h.expect("GET", "/mailbox/stats", h.tokA, map[string]any{"mailbox": ent("x", RoleAgent).Encode()}, 404)
		stats := func(id EntityID) AgentStats {
			var s AgentStats
			_ = json.Unmarshal([]byte(h.expect("GET", "/mailbox/stats", h.tokA, map[string]any{"mailbox": id.Encode()}, 200)), &s)
			return s
		}
		req, tag := pingReq(a, b)
		h.send(h.tokA, req, 200)
		if s := stats(b); s != (AgentStats{Incoming: 1, Queued: 1}) {
			t.Errorf("b after request: %+v", s)
		}
		h.recv(h.tokA, b, 1)
		if s := stats(b); s != (AgentStats{Incoming: 1, InProgress: 1}) {
			t.Errorf("b in progress: %+v", s)
		}
		h.send(h.tokA, academyMsg(b, a, KindResponse, tag, `{"kind":"success-response"}`), 200)
		if s := stats(b); s != (AgentStats{Incoming: 1, Completed: 1}) {
			t.Errorf("b completed: %+v", s)
		}
		if s := stats(a); s.Outgoing != 1 || s.Queued != 1 {
			t.Errorf("a: %+v", s)
		}
	})

	t.Run("Listen", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{PingInterval: 60 * time.Millisecond})
		a, u := ent("a", RoleAgent), ent("u", RoleUser)
		h.register(h.tokA, a, "")
		h.register(h.tokA, u, "")
		h.expect("GET", "/mailbox/listen", h.tokA, map[string]any{"mailbox": ent("x", RoleAgent).Encode(), "timeout": 1}, 404)
		m1, _ := pingReq(u, a)
		m2, _ := pingReq(u, a)
		h.send(h.tokA, m1, 200) // queued before the stream opens
		start := time.Now()
		resp := h.open(context.Background(), "GET", "/mailbox/listen", h.tokA, map[string]any{"mailbox": a.Encode(), "timeout": 0.6})
		defer resp.Body.Close()
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("listen: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		go func() {
			time.Sleep(250 * time.Millisecond)
			h.send(h.tokA, m2, 200)
		}()
		events := sseEvents(t, resp.Body, 1000) // until the server ends the stream
		el := time.Since(start)
		if el < 500*time.Millisecond || el > 5*time.Second {
			t.Errorf("stream with timeout 0.6 s lasted %s", el)
		}
		var data []string
		pings := 0
		for _, e := range events {
			if d, ok := strings.CutPrefix(e, "data:"); ok {
				data = append(data, d)
			} else if e == "comment:ping" {
				pings++
			}
		}
		if len(data) != 2 || data[0] != m1 || data[1] != m2 {
			t.Fatalf("data events %q, want the two messages in order", data)
		}
		if pings < 2 {
			t.Errorf("got %d pings in %s with a 60 ms interval; events %q", pings, el, events)
		}
		if events[0] != "data:"+m1 {
			t.Errorf("queued message not first: %q", events)
		}

		// Terminating the mailbox ends an open stream without a timeout.
		resp2 := h.open(context.Background(), "GET", "/mailbox/listen", h.tokA, map[string]any{"mailbox": a.Encode()})
		defer resp2.Body.Close()
		go func() {
			time.Sleep(200 * time.Millisecond)
			h.expect("DELETE", "/mailbox", h.tokA, map[string]any{"mailbox": a.Encode()}, 200)
		}()
		ended := make(chan []string, 1)
		go func() { ended <- sseEvents(t, resp2.Body, 1000) }()
		select {
		case ev := <-ended:
			for _, e := range ev {
				if strings.HasPrefix(e, "data:") {
					t.Errorf("unexpected data after terminate: %s", e)
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatal("stream did not end when the mailbox was terminated")
		}
	})

	// Dedupe: PUT /message is idempotent within the window (a sender's retry after a
	// lost answer): the same message (run, dest, src, tag, kind) twice is queued,
	// tracked and recorded once; a different kind, sender or destination with the
	// same tag is another message; after the window (or beyond the entries kept per
	// mailbox) it is delivered again; a duplicate is not refused by the quota its
	// first copy filled; a server restarted on the same backend still knows it; every
	// answer advertises it, and a server with de-duplication off neither advertises
	// nor de-duplicates.
	t.Run("Dedupe", func(t *testing.T) {
		var mu sync.Mutex
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
		be := newBackend(t)
		h := newHarness(t, be, Config{Now: clock, DedupeWindow: time.Minute})
		a, b, c := ent("a", RoleAgent), ent("b", RoleAgent), ent("c", RoleAgent)
		for _, id := range []EntityID{a, b, c} {
			h.register(h.tokA, id, "")
		}
		empty := func(id EntityID) {
			t.Helper()
			if code, text := h.call("GET", "/message", h.tokA, map[string]any{"mailbox": id.Encode(), "timeout": 0.05}); code != 408 {
				t.Errorf("mailbox %s not empty: %d %s", id.NameOr(""), code, text)
			}
		}
		req, tag := pingReq(a, b)
		h.send(h.tokA, req, 200)
		advance(30 * time.Second)
		h.send(h.tokA, req, 200) // the retry: success, not queued again
		if got := h.recv(h.tokA, b, 1); got != req {
			t.Fatalf("received %s", got)
		}
		empty(b)
		if tl := h.srv.Timeline("run-a"); len(tl) != 1 {
			t.Errorf("timeline has %d records for one message sent twice, want 1: %+v", len(tl), tl)
		}
		var st AgentStats
		_ = json.Unmarshal([]byte(h.expect("GET", "/mailbox/stats", h.tokA, map[string]any{"mailbox": a.Encode()}, 200)), &st)
		if st.Outgoing != 1 {
			t.Errorf("sender's stats %+v: the duplicate counted as a second request", st)
		}
		// Same tag, another message: the response (other kind, src and dest), the same
		// sender's response to b (other kind only), another sender's request to b.
		resp := academyMsg(b, a, KindResponse, tag, `{"kind":"success-response"}`)
		sameTagResp := academyMsg(a, b, KindResponse, tag, `{"kind":"success-response"}`)
		otherSrc := academyMsg(c, b, KindRequest, tag, `{"kind":"ping-request"}`)
		for _, m := range []string{resp, sameTagResp, otherSrc, resp, sameTagResp, otherSrc} {
			h.send(h.tokA, m, 200)
		}
		if got := h.recv(h.tokA, a, 1); got != resp {
			t.Errorf("a received %s, want the response", got)
		}
		if r1, r2 := h.recv(h.tokA, b, 1), h.recv(h.tokA, b, 1); r1 != sameTagResp || r2 != otherSrc {
			t.Errorf("b received %s, %s; want the same-tag response and the other sender's request", r1, r2)
		}
		empty(a)
		empty(b)
		// Nobody can pre-empt another sender's message by using its tag first: c
		// sends with a tag a will use; a's message still arrives (src is in the key,
		// and the exchange checks src against the credential: SendAsAnotherAgent).
		future := uuid.New()
		squat := academyMsg(c, b, KindRequest, future, `{"kind":"ping-request"}`)
		genuine := academyMsg(a, b, KindRequest, future, `{"kind":"ping-request"}`)
		h.send(h.tokA, squat, 200)
		h.send(h.tokA, genuine, 200)
		if r1, r2 := h.recv(h.tokA, b, 1), h.recv(h.tokA, b, 1); r1 != squat || r2 != genuine {
			t.Errorf("b received %s, %s; want both", r1, r2)
		}
		// A server restarted on the same backend still recognises the retry.
		h2 := newHarness(t, be, Config{Now: clock, DedupeWindow: time.Minute})
		h2.send(h2.tokA, otherSrc, 200)
		empty(b)
		// After the window the same message is a new one (documented).
		advance(61 * time.Second)
		h.send(h.tokA, req, 200)
		if got := h.recv(h.tokA, b, 1); got != req {
			t.Errorf("after the window: received %s, want the message again", got)
		}
		if tl := h.srv.Timeline("run-a"); len(tl) != 7 {
			t.Errorf("timeline has %d records, want 7", len(tl))
		}

		// Quotas: a duplicate of the message that filled the queue is a success, a new
		// message is refused; beyond DedupeEntries the oldest is forgotten.
		hq := newHarness(t, newBackend(t), Config{Now: clock, MaxQueuedMessages: 2, DedupeEntries: 2})
		hq.register(hq.tokA, a, "")
		hq.register(hq.tokA, b, "")
		// (responses: unanswered requests would count against the quota too)
		m1 := academyMsg(a, b, KindResponse, uuid.New(), `{"kind":"success-response"}`)
		m2 := academyMsg(a, b, KindResponse, uuid.New(), `{"kind":"success-response"}`)
		m3 := academyMsg(a, b, KindResponse, uuid.New(), `{"kind":"success-response"}`)
		// (the clock moves between sends: "oldest" is by the time accepted)
		send := func(m string, want int) { t.Helper(); advance(time.Second); hq.send(hq.tokA, m, want) }
		send(m1, 200)
		send(m2, 200)
		send(m2, 200) // the queue is full, but this one is in it already
		send(m3, 429)
		if r1, r2 := hq.recv(hq.tokA, b, 1), hq.recv(hq.tokA, b, 1); r1 != m1 || r2 != m2 {
			t.Errorf("received %s, %s", r1, r2)
		}
		send(m3, 200) // remembered: m2, m3
		send(m1, 200) // m1 was forgotten (2 entries per mailbox): queued again
		send(m3, 200) // still remembered
		if r1, r2 := hq.recv(hq.tokA, b, 1), hq.recv(hq.tokA, b, 1); r1 != m3 || r2 != m1 {
			t.Errorf("received %s, %s; want m3 then m1 again", r1, r2)
		}

		// Advertised on every answer, also refusals; not by a server with it off.
		for _, tc := range []struct {
			h    *harness
			tok  string
			want string
		}{{h, h.tokA, "60"}, {h, "", "60"}, {h, "not-a-token", "60"}} {
			resp := tc.h.open(context.Background(), "GET", "/mailbox", tc.tok, map[string]any{"mailbox": a.Encode()})
			resp.Body.Close()
			if got := resp.Header.Get(agent.DedupeHeader); got != tc.want {
				t.Errorf("answer %d with token %q: %s=%q, want %q", resp.StatusCode, tc.tok, agent.DedupeHeader, got, tc.want)
			}
		}
		off := newHarness(t, newBackend(t), Config{DedupeWindow: -1})
		off.register(off.tokA, a, "")
		off.register(off.tokA, b, "")
		r := off.open(context.Background(), "PUT", "/message", off.tokA, map[string]any{"message": req})
		r.Body.Close()
		if r.StatusCode != 200 || r.Header.Get(agent.DedupeHeader) != "" {
			t.Errorf("de-duplication off: %d with %s=%q, want 200 and no header", r.StatusCode, agent.DedupeHeader, r.Header.Get(agent.DedupeHeader))
		}
		off.send(off.tokA, req, 200)
		if r1, r2 := off.recv(off.tokA, b, 1), off.recv(off.tokA, b, 1); r1 != req || r2 != req {
			t.Errorf("de-duplication off: received %s, %s; want the message twice", r1, r2)
		}
	})

	// DedupeBounds: what a mailbox remembers is bounded per sender, so a busy sender
	// never makes it forget another sender's messages (before, one bound per mailbox
	// shared by all senders), and per mailbox as a memory guard (the oldest of any
	// sender goes); bounds <= 0 are the defaults, never unbounded; a repeat to a
	// mailbox terminated after its first copy was queued is answered 200, a new
	// message 419 (before, the repeat was 419: the sender reported a queued message
	// as refused); an all-zero tag is refused (400), not collapsed into one message.
	t.Run("DedupeBounds", func(t *testing.T) {
		var mu sync.Mutex
		now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
		clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
		advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
		h := newHarness(t, newBackend(t), Config{Now: clock, DedupeEntries: 2, DedupeMailboxEntries: 5})
		a, b, c := ent("a", RoleAgent), ent("b", RoleAgent), ent("c", RoleAgent)
		for _, id := range []EntityID{a, b, c} {
			h.register(h.tokA, id, "")
		}
		resp := func(src EntityID) string {
			return academyMsg(src, b, KindResponse, uuid.New(), `{"kind":"success-response"}`)
		}
		send := func(m string, want int) { t.Helper(); advance(time.Millisecond); h.send(h.tokA, m, want) }
		drain := func(want ...string) {
			t.Helper()
			for i, w := range want {
				if got := h.recv(h.tokA, b, 1); got != w {
					t.Fatalf("message %d: received %s, want %s", i, got, w)
				}
			}
			if code, text := h.call("GET", "/message", h.tokA, map[string]any{"mailbox": b.Encode(), "timeout": 0.05}); code != 408 {
				t.Fatalf("more queued than %d messages: %d %s", len(want), code, text)
			}
		}
		a1 := resp(a)
		send(a1, 200)
		cs := []string{resp(c), resp(c), resp(c)}
		for _, m := range cs { // c, busy: forgets its own oldest, never a's
			send(m, 200)
		}
		send(a1, 200)    // a's retry: still known
		send(cs[0], 200) // c's oldest: forgotten (2 per sender), queued again
		drain(a1, cs[0], cs[1], cs[2], cs[0])
		// The mailbox bound (5), a memory guard: remembered are a1 (a), cs[2] and
		// cs[0] (c); d's two and a's second make six, so the oldest of any sender,
		// a1, goes — though a's own bound (2) would have kept it; a1 queued again
		// makes the oldest, cs[2], go, and cs[0] (sent after it) is still known.
		d := ent("d", RoleAgent)
		h.register(h.tokA, d, "")
		d1, d2, a2 := resp(d), resp(d), resp(a)
		for _, m := range []string{d1, d2, a2, a1, cs[0]} {
			send(m, 200)
		}
		drain(d1, d2, a2, a1)
		// Terminated after the first copy was queued: the repeat is a success.
		req, _ := pingReq(a, b)
		send(req, 200)
		h.expect("DELETE", "/mailbox", h.tokA, map[string]any{"mailbox": b.Encode()}, 200)
		send(req, 200)
		fresh, _ := pingReq(a, b)
		send(fresh, StatusTerminatedCode)
		// All-zero tag: refused with a clear error.
		nilTag := academyMsg(a, c, KindRequest, uuid.Nil, `{"kind":"ping-request"}`)
		if text := h.send(h.tokA, nilTag, 400); !strings.Contains(text, "nil UUID") {
			t.Errorf("nil tag refused with %q, want it to say the tag is the nil UUID", text)
		}

		// Bounds <= 0 are the defaults (before, negative meant no bound): the first of
		// DefaultDedupeEntries+1 messages of one sender is forgotten.
		be := newBackend(t)
		ctx := context.Background()
		for _, id := range []EntityID{a, b} {
			if _, _, err := be.Create(ctx, MailboxRecord{ID: id, Run: "r"}, Limits{}); err != nil {
				t.Fatal(err)
			}
		}
		for _, bound := range []int64{0, -1} {
			lim := Limits{DedupeWindow: time.Minute, DedupeEntries: bound, DedupeMailboxEntries: bound}
			var first Message
			for i := range DefaultDedupeEntries + 1 {
				msg, err := ParseMessage([]byte(academyMsg(a, b, KindResponse, uuid.New(), `{"kind":"success-response"}`)))
				if err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = msg
				}
				if _, err := be.Put(ctx, msg, MessageRecord{Run: "r", Time: now.Add(time.Duration(i) * time.Millisecond)}, lim); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := be.Put(ctx, first, MessageRecord{Run: "r", Time: now.Add(time.Second)}, lim); err != nil {
				t.Fatal(err)
			}
			st, err := be.Stats(ctx, "r", b.UID)
			if err != nil {
				t.Fatal(err)
			}
			if want := int64(DefaultDedupeEntries + 2); st.Queued != want {
				t.Errorf("bounds %d: %d queued, want %d (the first message forgotten after %d newer ones)", bound, st.Queued, want, DefaultDedupeEntries)
			}
			for range st.Queued {
				if _, err := be.Get(ctx, "r", b.UID, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
	})

	t.Run("Peers", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{})
		ctx := context.Background()
		c := model.Campaign{Name: "chat", InitialAgent: "a", Agents: []model.CampaignAgent{
			{Name: "a", AllowedPeers: []string{"b"}, Site: "aurora"},
			{Name: "b", Site: "crux"},
			{Name: "c", AllowedPeers: []string{"a"}},
		}}
		if err := h.srv.RegisterCampaign(ctx, "run-a", c); err != nil {
			t.Fatal(err)
		}
		if err := h.srv.SetAgentSite(ctx, "run-a", "c", "polaris"); err != nil {
			t.Fatal(err)
		}
		a, b, cc, u := agentEnt("run-a", "a"), agentEnt("run-a", "b"), agentEnt("run-a", "c"), ent("operator", RoleUser)
		ta, tb, tc := h.agentTok("run-a", "a"), h.agentTok("run-a", "b"), h.agentTok("run-a", "c")
		h.register(ta, a, "")
		h.register(tb, b, "")
		h.register(tc, cc, "")
		h.register(h.tokA, u, "")
		intruder := agentEnt("run-a", "intruder")
		if text := h.expect("POST", "/mailbox", h.tokA, map[string]any{"mailbox": intruder.Encode()}, 403); !strings.Contains(text, "intruder") {
			t.Errorf("undeclared agent refusal %q", text)
		}
		h.expect("POST", "/mailbox", h.agentTok("run-a", "intruder"), map[string]any{"mailbox": intruder.Encode()}, 403)
		req, tag := pingReq(a, b)
		h.send(ta, req, 200) // a -> b allowed
		back, _ := pingReq(b, a)
		if text := h.send(tb, back, 403); !strings.Contains(text, "allowed_peers") {
			t.Errorf("b -> a request refusal %q", text)
		}
		h.send(tb, academyMsg(b, a, KindResponse, tag, `{"kind":"success-response"}`), 200) // reply allowed
		toC, _ := pingReq(a, cc)
		h.send(ta, toC, 403)
		cToA, _ := pingReq(cc, a)
		h.send(tc, cToA, 200)
		fromOp, _ := pingReq(u, b)
		h.send(h.tokA, fromOp, 200) // operators may message anyone
		h.send(tb, academyMsg(b, u, KindResponse, [16]byte{9}, `{"kind":"success-response"}`), 200)
		stranger := ent("stranger", RoleUser)
		fromStranger, _ := pingReq(stranger, b)
		h.send(h.tokA, fromStranger, 403) // unregistered sender in a campaign run
		// run-b has no campaign: no policy.
		x, y := ent("x", RoleAgent), ent("y", RoleAgent)
		h.register(h.tokB, x, "")
		h.register(h.tokB, y, "")
		m, _ := pingReq(x, y)
		h.send(h.tokB, m, 200)

		// Timeline and per-site counts.
		tl := h.srv.Timeline("run-a")
		if len(tl) != 5 {
			t.Fatalf("timeline has %d records, want 5: %+v", len(tl), tl)
		}
		first := tl[0]
		if first.Src != "a" || first.Dest != "b" || first.SrcSite != "aurora" || first.DestSite != "crux" || first.Kind != "ping-request" ||
			first.Size != len(req) || first.Run != "run-a" || first.SrcUID != a.UID || first.Tag != tag || first.Time.IsZero() || !first.CrossSite() {
			t.Errorf("first record %+v", first)
		}
		if tl[1].Kind != "success-response" || tl[1].Src != "b" {
			t.Errorf("second record %+v", tl[1])
		}
		if tl[2].SrcSite != "polaris" {
			t.Errorf("site override not applied: %+v", tl[2])
		}
		counts, err := h.srv.SiteCounts(ctx, "run-a")
		if err != nil {
			t.Fatal(err)
		}
		bySite := map[string]SiteCount{}
		for _, c := range counts {
			bySite[c.Site] = c
		}
		if bySite["aurora"].Sent != 1 || bySite["aurora"].CrossSite != 1 || bySite["crux"].Sent != 2 || bySite["crux"].Received != 2 ||
			bySite["polaris"].Sent != 1 || bySite[""].Mailboxes != 1 || bySite["aurora"].Mailboxes != 1 {
			t.Errorf("site counts %+v", counts)
		}
		if len(h.srv.Timeline("run-b")) != 1 {
			t.Errorf("run-b timeline %+v", h.srv.Timeline("run-b"))
		}
	})
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

func sameSet(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	m := map[string]bool{}
	for _, g := range got {
		m[g] = true
	}
	for _, w := range want {
		if !m[w] {
			return false
		}
	}
	return true
}

func TestProtocolMemory(t *testing.T) {
	runProtocolSuite(t, func(*testing.T) Backend { return NewMemory() })
}

func TestProtocolRedis(t *testing.T) {
	url := startRedis(t)
	n := 0
	runProtocolSuite(t, func(t *testing.T) Backend {
		n++
		return newRedisBackend(t, url, "test"+strings.ReplaceAll(t.Name(), "/", "-")+":"+string(rune('a'+n))+":")
	})
}
