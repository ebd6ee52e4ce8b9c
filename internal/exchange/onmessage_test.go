package exchange

import (
	"strings"
	"sync/atomic"
	"testing"
)

// TestOnMessageCountsAcceptedSends: the metrics hook is called once per message the
// exchange accepted, never for a refused one (here: over MaxMessageBytes).
func TestOnMessageCountsAcceptedSends(t *testing.T) {
	var n atomic.Int64
	h := newHarness(t, NewMemory(), Config{MaxMessageBytes: 4 << 10, OnMessage: func() { n.Add(1) }})
	u, a := ent("u", RoleUser), ent("a", RoleAgent)
	h.register(h.tokA, u, "")
	h.register(h.tokA, a, "")
	h.send(h.tokA, bigMsg(u, a, 100), 200)
	h.send(h.tokA, bigMsg(u, a, 200), 200)
	code, text := h.call("PUT", "/message", h.tokA, map[string]any{"message": bigMsg(u, a, 8<<10)})
	if code != 413 || !strings.Contains(text, "limit") {
		t.Fatalf("an oversized message: %d %s", code, text)
	}
	if got := n.Load(); got != 2 {
		t.Fatalf("OnMessage called %d times, want 2 (two accepted, one refused)", got)
	}
}
