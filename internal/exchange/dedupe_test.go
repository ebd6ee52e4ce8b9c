package exchange

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
)

// TestMemoryDedupeIsBounded: the in-memory dedupe set of a mailbox never holds more
// than DedupeEntries messages of one sender, forgets those older than the window, and a message
// remembered with a time the clock has since passed by the window is a new one even
// when it is not the oldest entry (clocks need not be monotonic).
func TestMemoryDedupeIsBounded(t *testing.T) {
	m := NewMemory()
	ctx := context.Background()
	a, b := ent("a", RoleAgent), ent("b", RoleAgent)
	for _, id := range []EntityID{a, b} {
		if _, _, err := m.Create(ctx, MailboxRecord{ID: id, Run: "r"}, Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	lim := Limits{DedupeWindow: time.Minute, DedupeEntries: 8}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	put := func(tag uuid.UUID, at time.Time) {
		t.Helper()
		msg, err := ParseMessage([]byte(academyMsg(a, b, KindResponse, tag, `{"kind":"success-response"}`)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Put(ctx, msg, MessageRecord{Run: "r", Time: at}, lim); err != nil {
			t.Fatal(err)
		}
	}
	box := m.boxes[boxKey{"r", b.UID}]
	for i := range 100 {
		put(uuid.New(), t0.Add(time.Duration(i)*time.Millisecond))
		if d := box.dd; len(d.seen) > 8 || len(d.order) > 2*8+64 || len(d.bySrc[a.UID].order) > 2*8+64 {
			t.Fatalf("after %d puts: %d remembered (%d in order), bound 8", i+1, len(d.seen), len(d.order))
		}
	}
	if len(box.queue) != 100 {
		t.Fatalf("%d queued, want 100 distinct messages", len(box.queue))
	}
	put(uuid.New(), t0.Add(2*time.Minute)) // every earlier one is past the window now
	box = m.boxes[boxKey{"r", b.UID}]
	if len(box.dd.seen) != 1 {
		t.Errorf("%d remembered after the window passed, want 1", len(box.dd.seen))
	}
	// Non-monotonic: an entry that is not the oldest but itself past the window.
	late := uuid.New()
	put(late, t0.Add(time.Minute))                  // behind the entry at 2 min, so not the oldest
	put(late, t0.Add(2*time.Minute+30*time.Second)) // 90 s after it: past the window, a new message
	if got := len(box.queue); got != 103 {
		t.Errorf("%d queued, want 103: a repeat past the window was dropped", got)
	}
}

// TestMemoryDedupeForgetsIdleMailboxes: a mailbox nobody sends to any more does not
// keep its dedupe entries for ever: Puts to other mailboxes sweep a bounded number
// of mailboxes each, and forget what is past the window. (Before, the entries of an
// idle mailbox were forgotten only by the next Put to it.)
func TestMemoryDedupeForgetsIdleMailboxes(t *testing.T) {
	m := NewMemory()
	ctx := context.Background()
	a, busy := ent("a", RoleAgent), ent("busy", RoleAgent)
	idle := make([]EntityID, 5)
	for i := range idle {
		idle[i] = ent("idle", RoleAgent)
	}
	for _, id := range append([]EntityID{a, busy}, idle...) {
		if _, _, err := m.Create(ctx, MailboxRecord{ID: id, Run: "r"}, Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	lim := Limits{DedupeWindow: time.Minute}
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	put := func(dest EntityID, at time.Time) {
		t.Helper()
		msg, err := ParseMessage([]byte(academyMsg(a, dest, KindResponse, uuid.New(), `{"kind":"success-response"}`)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Put(ctx, msg, MessageRecord{Run: "r", Time: at}, lim); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range idle {
		for range 10 {
			put(id, t0)
		}
	}
	for i := range 10 { // past the window: each Put sweeps ddSweepPerPut mailboxes
		put(busy, t0.Add(2*time.Minute+time.Duration(i)*time.Second))
	}
	for i, id := range idle {
		if d := m.boxes[boxKey{"r", id.UID}].dd; d != nil {
			t.Errorf("idle mailbox %d still remembers %d messages past the window", i, len(d.seen))
		}
	}
	if len(m.ddBoxes) != 1 {
		t.Errorf("%d mailboxes tracked for the sweep, want 1 (busy)", len(m.ddBoxes))
	}
}
