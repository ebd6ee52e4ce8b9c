package exchange

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
)

// bigMsg is a request of about size bytes from src to dest.
func bigMsg(src, dest EntityID, size int) string {
	return academyMsg(src, dest, KindRequest, uuid.New(), `{"kind":"mosaic-text","text":"`+strings.Repeat("x", size)+`"}`)
}

func held(t *testing.T, h *harness) int64 {
	t.Helper()
	n, err := h.srv.Backend().HeldBytes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// flood sends n messages of size bytes to dests (round robin) and returns how
// many were accepted; every refusal must be want with a text naming limit.
func flood(t *testing.T, h *harness, src EntityID, dests []EntityID, n, size, want int, limit string) int {
	t.Helper()
	ok := 0
	for i := range n { // bounded
		code, text := h.call("PUT", "/message", h.tokA, map[string]any{"message": bigMsg(src, dests[i%len(dests)], size)})
		switch code {
		case 200:
			ok++
		case want:
			if !strings.Contains(text, limit) {
				t.Fatalf("refusal %d does not name %s: %q", want, limit, text)
			}
		default:
			t.Fatalf("message %d: %d %s", i, code, text)
		}
	}
	return ok
}

// TestQuotaFloodMemory reproduces finding 3 of issue 14 (150 × 1 MB messages
// to one mailbox and 3,000 mailboxes were all accepted) against the default
// quotas, and checks the bytes the backend holds stay within them.
func TestQuotaFloodMemory(t *testing.T) {
	h := newHarness(t, NewMemory(), Config{})
	u, a := ent("u", RoleUser), ent("a", RoleAgent)
	h.register(h.tokA, u, "")
	h.register(h.tokA, a, "")
	const mb = 1_000_000
	ok := flood(t, h, u, []EntityID{a}, 150, mb, 413, fmt.Sprintf("MaxQueuedBytes=%d", DefaultMaxQueuedBytes))
	if ok == 0 || ok == 150 {
		t.Fatalf("%d of 150 messages accepted", ok)
	}
	if n := held(t, h); n > DefaultMaxQueuedBytes || n < int64(ok)*mb {
		t.Fatalf("held %d bytes after %d accepted messages (limit %d)", n, ok, DefaultMaxQueuedBytes)
	}
	// Draining makes room again, and the accounting follows.
	h.recv(h.tokA, a, 1)
	h.send(h.tokA, bigMsg(u, a, mb), 200)
	h.expect("DELETE", "/mailbox", h.tokA, map[string]any{"mailbox": a.Encode()}, 200)
	// u now holds the MAILBOX_TERMINATED replies to its requests.
	h.expect("DELETE", "/mailbox", h.tokA, map[string]any{"mailbox": u.Encode()}, 200)
	if n := held(t, h); n != 0 {
		t.Fatalf("held %d bytes after the mailbox was terminated", n)
	}
	created := 2
	for i := range 3000 { // bounded
		code, text := h.call("POST", "/mailbox", h.tokA, map[string]any{"mailbox": ent(fmt.Sprint("m", i), RoleAgent).Encode()})
		if code == 200 {
			created++
			continue
		}
		if code != 429 || !strings.Contains(text, "MaxMailboxesPerRun=1000") {
			t.Fatalf("mailbox %d: %d %s", i, code, text)
		}
	}
	if created != DefaultMaxMailboxesPerRun {
		t.Fatalf("run has %d mailboxes, want the limit %d", created, DefaultMaxMailboxesPerRun)
	}
	// Another run is not affected by this run's count.
	h.register(h.tokB, ent("b", RoleAgent), "")
}

// runQuotaSuite checks every quota on a backend with small limits.
func runQuotaSuite(t *testing.T, newBackend func(t *testing.T) Backend) {
	t.Run("TotalBytes", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{MaxTotalBytes: 100 << 10, MaxQueuedBytes: 64 << 10})
		u := ent("u", RoleUser)
		h.register(h.tokA, u, "")
		var dests []EntityID
		for i := range 3 {
			d := ent(fmt.Sprint("d", i), RoleAgent)
			h.register(h.tokA, d, "")
			dests = append(dests, d)
		}
		ok := flood(t, h, u, dests, 60, 4000, 413, "MaxTotalBytes=102400")
		if n := held(t, h); ok == 60 || n > 100<<10 || n < int64(ok)*4000 {
			t.Fatalf("%d accepted, held %d", ok, n)
		}
		for _, d := range dests { // drain: the held figure goes back to 0
			for range ok { // bounded
				if code, _ := h.call("GET", "/message", h.tokA, map[string]any{"mailbox": d.Encode(), "timeout": 0}); code != 200 {
					break
				}
			}
		}
		if n := held(t, h); n != 0 {
			t.Fatalf("held %d after draining", n)
		}
	})
	t.Run("MailboxBytes", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{MaxQueuedBytes: 64 << 10})
		u, a := ent("u", RoleUser), ent("a", RoleAgent)
		h.register(h.tokA, u, "")
		h.register(h.tokA, a, "")
		per := len(bigMsg(u, a, 4000))
		if ok := flood(t, h, u, []EntityID{a}, 30, 4000, 413, "MaxQueuedBytes=65536"); ok != (64<<10)/per {
			t.Fatalf("%d accepted, want %d", ok, (64<<10)/per)
		}
		// A blocking receive (BLPOP on Redis) releases the bytes too.
		h.recv(h.tokA, a, 2)
		h.send(h.tokA, bigMsg(u, a, 4000), 200)
	})
	t.Run("QueuedAndPending", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{MaxQueuedMessages: 20})
		u, a := ent("u", RoleUser), ent("a", RoleAgent)
		h.register(h.tokA, u, "")
		h.register(h.tokA, a, "")
		if ok := flood(t, h, u, []EntityID{a}, 25, 10, 429, "MaxQueuedMessages=20"); ok != 20 {
			t.Fatalf("%d accepted, want 20", ok)
		}
		got := h.recv(h.tokA, a, 1)
		// The queue has room, but 20 requests are still unanswered.
		if text := h.send(h.tokA, bigMsg(u, a, 10), 429); !strings.Contains(text, "unanswered") {
			t.Errorf("pending refusal %q", text)
		}
		m, _ := ParseMessage([]byte(got))
		h.send(h.tokA, academyMsg(a, u, KindResponse, m.Header.Tag, `{"kind":"success-response"}`), 200)
		h.send(h.tokA, bigMsg(u, a, 10), 200)
	})
	t.Run("MailboxesPerRun", func(t *testing.T) {
		h := newHarness(t, newBackend(t), Config{MaxMailboxesPerRun: 10})
		n := 0
		for i := range 30 { // bounded
			code, text := h.call("POST", "/mailbox", h.tokA, map[string]any{"mailbox": ent(fmt.Sprint("m", i), RoleAgent).Encode()})
			switch {
			case code == 200:
				n++
			case code != 429 || !strings.Contains(text, "MaxMailboxesPerRun=10"):
				t.Fatalf("mailbox %d: %d %s", i, code, text)
			}
		}
		if n != 10 {
			t.Fatalf("%d mailboxes created, want 10", n)
		}
		h.register(h.tokB, ent("other-run", RoleAgent), "")
	})
}

func TestQuotaMemory(t *testing.T) {
	runQuotaSuite(t, func(*testing.T) Backend { return NewMemory() })
}

func TestQuotaRedis(t *testing.T) {
	url := startRedis(t)
	n := 0
	runQuotaSuite(t, func(t *testing.T) Backend {
		n++
		return newRedisBackend(t, url, "q"+strings.ReplaceAll(t.Name(), "/", "-")+":"+string(rune('a'+n))+":")
	})
}
