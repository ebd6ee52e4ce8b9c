package exchange

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Memory is the in-process Backend (the default). State is lost on restart.
type Memory struct {
	mu       sync.Mutex
	boxes    map[boxKey]*memBox
	runs     map[string][]uuid.UUID
	timeline map[string][]MessageRecord
	policies map[string]RunPolicy
	tokens   map[string]TokenInfo
	held     int64 // bytes of queued messages, all mailboxes
	tlCap    int   // records kept per run (TimelineCap)
}

// boxKey namespaces mailboxes by run.
type boxKey struct {
	run string
	uid uuid.UUID
}

type memBox struct {
	rec        MailboxRecord
	queue      [][]byte
	bytes      int64         // bytes in queue
	wake       chan struct{} // closed and replaced on every put/terminate
	pending    map[uuid.UUID]Header
	outgoing   int64
	completed  int64
	lastActive time.Time
	holder     Holder
	seen       map[string]time.Time // dedupeID -> when accepted (Limits.DedupeWindow)
	seenOrder  []seenEntry          // the same, oldest first: expiry and the count bound
}

type seenEntry struct {
	id string
	at time.Time
}

// forget drops remembered messages older than the window (at now) and beyond
// the count bound.
func (b *memBox) forget(now time.Time, lim Limits) {
	for len(b.seenOrder) > 0 {
		e := b.seenOrder[0]
		if now.Sub(e.at) < lim.DedupeWindow && (lim.DedupeEntries <= 0 || int64(len(b.seenOrder)) <= lim.DedupeEntries) {
			return
		}
		if b.seen[e.id].Equal(e.at) {
			delete(b.seen, e.id)
		}
		b.seenOrder[0] = seenEntry{}
		b.seenOrder = b.seenOrder[1:] // append reallocates with the live part only: bounded
	}
}

// NewMemory returns an empty in-memory backend.
func NewMemory() *Memory {
	return &Memory{
		boxes:    map[boxKey]*memBox{},
		runs:     map[string][]uuid.UUID{},
		timeline: map[string][]MessageRecord{},
		policies: map[string]RunPolicy{},
		tokens:   map[string]TokenInfo{},
		tlCap:    TimelineCap,
	}
}

func notFound(run string, uid uuid.UUID) error {
	return fmt.Errorf("%w: %s in run %s", ErrNotFound, uid, run)
}

// Create implements Backend.
func (m *Memory) Create(_ context.Context, rec MailboxRecord, lim Limits) (MailboxRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := boxKey{rec.Run, rec.ID.UID}
	if b, ok := m.boxes[k]; ok {
		return b.rec, false, nil
	}
	if lim.MaxMailboxesPerRun > 0 && int64(len(m.runs[rec.Run])) >= lim.MaxMailboxesPerRun {
		return MailboxRecord{}, false, quotaCount("MaxMailboxesPerRun", "max-mailboxes-per-run", lim.MaxMailboxesPerRun,
			fmt.Sprintf("run %s has %d mailboxes", rec.Run, len(m.runs[rec.Run])))
	}
	rec.Status = StatusActive
	m.boxes[k] = &memBox{rec: rec, wake: make(chan struct{}), pending: map[uuid.UUID]Header{}}
	m.runs[rec.Run] = append(m.runs[rec.Run], rec.ID.UID)
	return rec, true, nil
}

// Lookup implements Backend.
func (m *Memory) Lookup(_ context.Context, run string, uid uuid.UUID) (MailboxRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[boxKey{run, uid}]
	if !ok {
		return MailboxRecord{}, notFound(run, uid)
	}
	return b.rec, nil
}

// List implements Backend.
func (m *Memory) List(_ context.Context, run string) ([]MailboxRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MailboxRecord, 0, len(m.runs[run]))
	for _, uid := range m.runs[run] {
		out = append(out, m.boxes[boxKey{run, uid}].rec)
	}
	return out, nil
}

// Terminate implements Backend.
func (m *Memory) Terminate(_ context.Context, run string, uid uuid.UUID) ([]Header, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[boxKey{run, uid}]
	if !ok {
		return nil, notFound(run, uid)
	}
	if b.rec.Status == StatusTerminated {
		return nil, nil
	}
	b.rec.Status = StatusTerminated
	m.held -= b.bytes
	b.queue, b.bytes = nil, 0
	b.holder = Holder{}
	pending := make([]Header, 0, len(b.pending))
	for _, h := range b.pending {
		pending = append(pending, h)
	}
	b.pending = map[uuid.UUID]Header{}
	close(b.wake)
	b.wake = make(chan struct{})
	return pending, nil
}

// Reopen implements Backend.
func (m *Memory) Reopen(_ context.Context, run string, uid uuid.UUID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[boxKey{run, uid}]
	if !ok {
		return notFound(run, uid)
	}
	b.rec.Status = StatusActive
	b.holder = Holder{}
	b.lastActive = time.Time{}
	return nil
}

// Claim implements Backend.
func (m *Memory) Claim(_ context.Context, run string, uid uuid.UUID, h Holder, now time.Time, ttl time.Duration) (ClaimResult, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[boxKey{run, uid}]
	if !ok {
		return ClaimResult{}, notFound(run, uid)
	}
	live := b.holder.Instance != "" && now.Sub(b.lastActive) < ttl
	if live && b.holder.Instance != h.Instance {
		return ClaimResult{Holder: b.holder, LastActive: b.lastActive}, nil
	}
	b.holder = h
	b.lastActive = now
	return ClaimResult{OK: true}, nil
}

// Put implements Backend.
func (m *Memory) Put(_ context.Context, msg Message, rec MessageRecord, lim Limits) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	dest := msg.Header.Dest.UID
	b, ok := m.boxes[boxKey{rec.Run, dest}]
	if !ok {
		return notFound(rec.Run, dest)
	}
	if b.rec.Status == StatusTerminated {
		return fmt.Errorf("%w: %s", ErrTerminated, dest)
	}
	id := dedupeID(msg.Header)
	if lim.DedupeWindow > 0 {
		b.forget(rec.Time, lim)
		if at, dup := b.seen[id]; dup && rec.Time.Sub(at) < lim.DedupeWindow {
			return nil // accepted before: a sender's retry
		}
	}
	size := int64(len(msg.Raw))
	switch {
	case lim.MaxQueuedMessages > 0 && int64(len(b.queue)) >= lim.MaxQueuedMessages:
		return quotaCount("MaxQueuedMessages", "max-queued-messages", lim.MaxQueuedMessages, fmt.Sprintf("mailbox %s has %d messages queued", dest, len(b.queue)))
	case lim.MaxQueuedMessages > 0 && msg.Header.Kind == KindRequest && int64(len(b.pending)) >= lim.MaxQueuedMessages:
		return quotaCount("MaxQueuedMessages", "max-queued-messages", lim.MaxQueuedMessages, fmt.Sprintf("mailbox %s has %d requests unanswered", dest, len(b.pending)))
	case lim.MaxQueuedBytes > 0 && b.bytes+size > lim.MaxQueuedBytes:
		return quotaSize("MaxQueuedBytes", "max-queued-bytes", lim.MaxQueuedBytes, fmt.Sprintf("mailbox %s holds %d bytes, the message has %d", dest, b.bytes, size))
	case lim.MaxTotalBytes > 0 && m.held+size > lim.MaxTotalBytes:
		return quotaSize("MaxTotalBytes", "max-total-bytes", lim.MaxTotalBytes, fmt.Sprintf("the exchange holds %d bytes, the message has %d", m.held, size))
	}
	if lim.DedupeWindow > 0 {
		if b.seen == nil {
			b.seen = map[string]time.Time{}
		}
		b.seen[id] = rec.Time
		b.seenOrder = append(b.seenOrder, seenEntry{id, rec.Time})
		b.forget(rec.Time, lim)
	}
	b.queue = append(b.queue, msg.Raw)
	b.bytes += size
	m.held += size
	tl := append(m.timeline[rec.Run], rec)
	if len(tl) > m.tlCap+m.tlCap/4 { // trim in batches: amortised O(1)
		tl = append([]MessageRecord(nil), tl[len(tl)-m.tlCap:]...)
	}
	m.timeline[rec.Run] = tl
	src, hasSrc := m.boxes[boxKey{rec.Run, msg.Header.Src.UID}]
	if hasSrc {
		src.lastActive = rec.Time
	}
	switch msg.Header.Kind {
	case KindRequest:
		b.pending[msg.Header.Tag] = msg.Header
		if hasSrc {
			src.outgoing++
		}
	case KindResponse:
		if hasSrc {
			if _, was := src.pending[msg.Header.Tag]; was {
				delete(src.pending, msg.Header.Tag)
				src.completed++
			}
		}
	}
	close(b.wake)
	b.wake = make(chan struct{})
	return nil
}

// Get implements Backend.
func (m *Memory) Get(ctx context.Context, run string, uid uuid.UUID, wait time.Duration) ([]byte, error) {
	var timer <-chan time.Time
	if wait >= 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	k := boxKey{run, uid}
	for {
		m.mu.Lock()
		b, ok := m.boxes[k]
		if !ok {
			m.mu.Unlock()
			return nil, notFound(run, uid)
		}
		if b.rec.Status == StatusTerminated {
			m.mu.Unlock()
			return nil, fmt.Errorf("%w: %s", ErrTerminated, uid)
		}
		b.lastActive = time.Now()
		if len(b.queue) > 0 {
			raw := b.queue[0]
			b.queue[0] = nil
			b.queue = b.queue[1:]
			b.bytes -= int64(len(raw))
			m.held -= int64(len(raw))
			m.mu.Unlock()
			return raw, nil
		}
		wake := b.wake
		m.mu.Unlock()
		if wait == 0 {
			return nil, ErrTimeout
		}
		select {
		case <-wake:
		case <-timer:
			return nil, ErrTimeout
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Touch implements Backend.
func (m *Memory) Touch(_ context.Context, run string, uid uuid.UUID, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.boxes[boxKey{run, uid}]; ok {
		b.lastActive = at
	}
	return nil
}

// LastActive implements Backend.
func (m *Memory) LastActive(_ context.Context, run string, uid uuid.UUID) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[boxKey{run, uid}]
	if !ok {
		return time.Time{}, false, notFound(run, uid)
	}
	return b.lastActive, !b.lastActive.IsZero(), nil
}

// Stats implements Backend, computed like Academy's PythonBackend.agent_stats.
func (m *Memory) Stats(_ context.Context, run string, uid uuid.UUID) (AgentStats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[boxKey{run, uid}]
	if !ok {
		return AgentStats{}, notFound(run, uid)
	}
	return makeStats(int64(len(b.queue)), int64(len(b.pending)), b.completed, b.outgoing), nil
}

func makeStats(queued, pending, completed, outgoing int64) AgentStats {
	return AgentStats{
		Incoming:   completed + pending,
		Outgoing:   outgoing,
		Completed:  completed,
		InProgress: max(0, pending-queued),
		Queued:     queued,
	}
}

// Records implements Backend.
func (m *Memory) Records(_ context.Context, run string) ([]MessageRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	tl := m.timeline[run]
	return append([]MessageRecord(nil), tl[max(0, len(tl)-m.tlCap):]...), nil
}

// SetPolicy implements Backend.
func (m *Memory) SetPolicy(_ context.Context, run string, p RunPolicy) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.policies[run] = p
	return nil
}

// Policy implements Backend.
func (m *Memory) Policy(_ context.Context, run string) (RunPolicy, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.policies[run]
	return p, ok, nil
}

// SetToken implements Backend.
func (m *Memory) SetToken(_ context.Context, hash string, info TokenInfo) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens[hash] = info
	return nil
}

// DeleteToken implements Backend.
func (m *Memory) DeleteToken(_ context.Context, hash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tokens, hash)
	return nil
}

// Token implements Backend.
func (m *Memory) Token(_ context.Context, hash string) (TokenInfo, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.tokens[hash]
	return r, ok, nil
}

// HeldBytes implements Backend.
func (m *Memory) HeldBytes(context.Context) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.held, nil
}

// Close implements Backend.
func (m *Memory) Close() error { return nil }

// sortRecords orders mailboxes by creation time, then uid.
func sortRecords(recs []MailboxRecord) {
	slices.SortFunc(recs, func(a, b MailboxRecord) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.ID.UID.String(), b.ID.UID.String())
	})
}
