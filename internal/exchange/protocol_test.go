package exchange

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

func TestParseEntityID(t *testing.T) {
	uid := "6ba7b810-9dad-11d1-80b4-00c04fd430c8"
	for in, want := range map[string]string{
		`{"uid":"` + uid + `","name":"a","role":"agent"}`: "a/agent",
		`{"uid":"` + uid + `","name":null,"role":"user"}`: "-/user",
		`{"uid":"` + uid + `"}`:                           "-/agent",
		`{"uid":"` + uid + `","role":"admin"}`:            "error:role",
		`{"name":"a"}`:                                    "error:no uid",
		`{"uid":"zz"}`:                                    "error:EntityId",
		`{"uid":"` + uid + `","extra":1}`:                 "error:EntityId",
		`[]`:                                              "error:EntityId",
		``:                                                "error:EntityId",
	} {
		id, err := ParseEntityID(in)
		got := id.NameOr("-") + "/" + id.Role
		if err != nil {
			if !strings.HasPrefix(want, "error:") || !strings.Contains(err.Error(), strings.TrimPrefix(want, "error:")) {
				t.Errorf("%s: error %v, want %s", in, err, want)
			}
			continue
		}
		if got != want || id.UID.String() != uid {
			t.Errorf("%s: got %s %s, want %s", in, got, id.UID, want)
		}
	}
	// Encode matches pydantic's model_dump_json (compact, uid/name/role order).
	name := "planner"
	id := EntityID{UID: uuid.MustParse(uid), Name: &name, Role: RoleAgent}
	if got := id.Encode(); got != `{"uid":"`+uid+`","name":"planner","role":"agent"}` {
		t.Errorf("Encode = %s", got)
	}
}

func TestParseMessage(t *testing.T) {
	a, b := ent("a", RoleAgent), ent("b", RoleUser)
	good := academyMsg(a, b, KindRequest, uuid.New(), `{"action":"go","kind":"action-request"}`)
	m, err := ParseMessage([]byte(good))
	if err != nil || m.BodyKind != "action-request" || m.Header.Src.UID != a.UID || m.Header.Dest.Role != RoleUser || string(m.Raw) != good {
		t.Fatalf("good message: %+v %v", m, err)
	}
	for name, in := range map[string]string{
		"not json":       `{`,
		"no header":      `{"body":{"kind":"x"}}`,
		"bad src":        strings.Replace(good, `"role":"agent"`, `"role":"x"`, 1),
		"no tag":         `{"header":{"src":` + a.Encode() + `,"dest":` + b.Encode() + `,"kind":"request"},"body":{"kind":"x"}}`,
		"bad kind":       strings.Replace(good, `"kind":"request"`, `"kind":"other"`, 1),
		"nil tag":        academyMsg(a, b, KindRequest, uuid.Nil, `{"kind":"ping-request"}`),
		"no body":        `{"header":` + strings.TrimSuffix(strings.TrimPrefix(good, `{"header":`), `,"body":{"action":"go","kind":"action-request"}}`) + `}`,
		"body kind type": strings.Replace(good, `"kind":"action-request"`, `"kind":3`, 1),
	} {
		if _, err := ParseMessage([]byte(in)); err == nil {
			t.Errorf("%s: accepted %s", name, in)
		}
	}
}

func FuzzParseMessage(f *testing.F) {
	a, b := ent("a", RoleAgent), ent("b", RoleUser)
	f.Add([]byte(academyMsg(a, b, KindRequest, uuid.New(), `{"kind":"ping-request"}`)))
	f.Add([]byte(academyMsg(a, b, KindResponse, uuid.New(), `{"kind":"academy-error-response","error_code":0,"mailbox_id":null}`)))
	f.Add([]byte(`{"header":null,"body":{}}`))
	f.Add([]byte(academyMsg(a, b, KindRequest, uuid.Nil, `{"kind":"ping-request"}`)))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseMessage(data)
		if err != nil {
			return
		}
		if m.Header.Tag == uuid.Nil {
			t.Fatalf("accepted a nil tag: %s", data)
		}
		// Accepted messages are compact single-line JSON that parse again to
		// the same header (they are delivered as one SSE data line).
		if strings.ContainsAny(string(m.Raw), "\n\r") {
			t.Fatalf("raw has a newline: %q", m.Raw)
		}
		again, err := ParseMessage(m.Raw)
		if err != nil || again.Header.Tag != m.Header.Tag || again.BodyKind != m.BodyKind {
			t.Fatalf("round trip: %v", err)
		}
		_, _ = ParseEntityID(m.Header.Src.Encode())
		r := terminatedReply(m.Header, m.Header.Dest)
		if _, err := ParseMessage(r.Raw); err != nil {
			t.Fatalf("terminated reply does not parse: %v", err)
		}
	})
}

// TestSharedRedis runs two exchange servers on one Redis: a mailbox registered
// through one is reachable through the other (an exchange shared by many users).
func TestSharedRedis(t *testing.T) {
	url := startRedis(t)
	h1 := newHarness(t, newRedisBackend(t, url, "shared:"), Config{})
	h2 := newHarness(t, newRedisBackend(t, url, "shared:"), Config{})
	tok := h1.tokA // tokens live in Redis, so h2 accepts h1's
	a, u := ent("a", RoleAgent), ent("u", RoleUser)
	h1.register(tok, a, "")
	h2.register(tok, u, "")
	if st := h2.status(tok, a); st != StatusActive {
		t.Fatalf("status through the other server: %s", st)
	}
	done := make(chan string, 1)
	go func() { done <- h1.recv(tok, a, 10) }()
	time.Sleep(100 * time.Millisecond)
	m, _ := pingReq(u, a)
	h2.send(tok, m, 200)
	select {
	case got := <-done:
		if got != m {
			t.Fatalf("got %s", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("receive on server 1 not woken by send on server 2")
	}
	if err := h1.srv.RegisterCampaign(context.Background(), "run-a", campaignAB()); err != nil {
		t.Fatal(err)
	}
	// The policy registered through server 1 is enforced by server 2.
	h2.expect("POST", "/mailbox", tok, map[string]any{"mailbox": ent("intruder", RoleAgent).Encode()}, 403)
	if n := len(h2.srv.Timeline("run-a")); n != 1 {
		t.Errorf("shared timeline has %d records", n)
	}
	var tl []MessageRecord
	raw, _ := json.Marshal(h1.srv.Timeline("run-a"))
	_ = json.Unmarshal(raw, &tl)
	if len(tl) != 1 || tl[0].Kind != "ping-request" {
		t.Errorf("timeline JSON round trip %+v", tl)
	}
}

func campaignAB() model.Campaign {
	return model.Campaign{Name: "ab", Agents: []model.CampaignAgent{{Name: "a", AllowedPeers: []string{"b"}}, {Name: "b"}}}
}

// TestTimelineCap checks both backends keep only the newest records (the cap is
// lowered from TimelineCap to keep the test fast).
func TestTimelineCap(t *testing.T) {
	const limit = 200
	url := startRedis(t)
	mem := NewMemory()
	mem.tlCap = limit
	rb := newRedisBackend(t, url, "cap:").(*Redis)
	rb.tlCap = limit
	for name, be := range map[string]Backend{"memory": mem, "redis": rb} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			a := ent("a", RoleAgent)
			if _, _, err := be.Create(ctx, MailboxRecord{ID: a, Run: "r"}, Limits{}); err != nil {
				t.Fatal(err)
			}
			raw, _ := pingReq(a, a)
			msg, _ := ParseMessage([]byte(raw))
			n := 3*limit + 7
			for i := range n {
				if _, err := be.Put(ctx, msg, MessageRecord{Run: "r", Size: i}, Limits{}); err != nil {
					t.Fatal(err)
				}
			}
			recs, err := be.Records(ctx, "r")
			if err != nil {
				t.Fatal(err)
			}
			if len(recs) != limit || recs[len(recs)-1].Size != n-1 || recs[0].Size != n-limit {
				t.Fatalf("%d records, first %d last %d", len(recs), recs[0].Size, recs[len(recs)-1].Size)
			}
		})
	}
}
