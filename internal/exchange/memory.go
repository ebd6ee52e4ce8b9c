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
	boxes    map[uuid.UUID]*memBox
	runs     map[string][]uuid.UUID
	timeline map[string][]MessageRecord
	policies map[string]RunPolicy
	tokens   map[string]string
	tlCap    int // records kept per run (TimelineCap)
}

type memBox struct {
	rec        MailboxRecord
	queue      [][]byte
	wake       chan struct{} // closed and replaced on every put/terminate
	pending    map[uuid.UUID]Header
	outgoing   int64
	completed  int64
	lastActive time.Time
}

// NewMemory returns an empty in-memory backend.
func NewMemory() *Memory {
	return &Memory{
		boxes:    map[uuid.UUID]*memBox{},
		runs:     map[string][]uuid.UUID{},
		timeline: map[string][]MessageRecord{},
		policies: map[string]RunPolicy{},
		tokens:   map[string]string{},
		tlCap:    TimelineCap,
	}
}

// Create implements Backend.
func (m *Memory) Create(_ context.Context, rec MailboxRecord) (MailboxRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.boxes[rec.ID.UID]; ok {
		return b.rec, false, nil
	}
	rec.Status = StatusActive
	m.boxes[rec.ID.UID] = &memBox{rec: rec, wake: make(chan struct{}), pending: map[uuid.UUID]Header{}}
	m.runs[rec.Run] = append(m.runs[rec.Run], rec.ID.UID)
	return rec, true, nil
}

// Lookup implements Backend.
func (m *Memory) Lookup(_ context.Context, uid uuid.UUID) (MailboxRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[uid]
	if !ok {
		return MailboxRecord{}, fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	return b.rec, nil
}

// List implements Backend.
func (m *Memory) List(_ context.Context, run string) ([]MailboxRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MailboxRecord, 0, len(m.runs[run]))
	for _, uid := range m.runs[run] {
		out = append(out, m.boxes[uid].rec)
	}
	return out, nil
}

// Terminate implements Backend.
func (m *Memory) Terminate(_ context.Context, uid uuid.UUID) ([]Header, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[uid]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	if b.rec.Status == StatusTerminated {
		return nil, nil
	}
	b.rec.Status = StatusTerminated
	b.queue = nil
	pending := make([]Header, 0, len(b.pending))
	for _, h := range b.pending {
		pending = append(pending, h)
	}
	b.pending = map[uuid.UUID]Header{}
	close(b.wake)
	b.wake = make(chan struct{})
	return pending, nil
}

// Put implements Backend.
func (m *Memory) Put(_ context.Context, msg Message, rec MessageRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[msg.Header.Dest.UID]
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, msg.Header.Dest.UID)
	}
	if b.rec.Status == StatusTerminated {
		return fmt.Errorf("%w: %s", ErrTerminated, msg.Header.Dest.UID)
	}
	b.queue = append(b.queue, msg.Raw)
	tl := append(m.timeline[rec.Run], rec)
	if len(tl) > m.tlCap+m.tlCap/4 { // trim in batches: amortised O(1)
		tl = append([]MessageRecord(nil), tl[len(tl)-m.tlCap:]...)
	}
	m.timeline[rec.Run] = tl
	if src, ok := m.boxes[msg.Header.Src.UID]; ok {
		src.lastActive = rec.Time
	}
	switch msg.Header.Kind {
	case KindRequest:
		b.pending[msg.Header.Tag] = msg.Header
		if src, ok := m.boxes[msg.Header.Src.UID]; ok {
			src.outgoing++
		}
	case KindResponse:
		if src, ok := m.boxes[msg.Header.Src.UID]; ok {
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
func (m *Memory) Get(ctx context.Context, uid uuid.UUID, wait time.Duration) ([]byte, error) {
	var timer <-chan time.Time
	if wait >= 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timer = t.C
	}
	for {
		m.mu.Lock()
		b, ok := m.boxes[uid]
		if !ok {
			m.mu.Unlock()
			return nil, fmt.Errorf("%w: %s", ErrNotFound, uid)
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
func (m *Memory) Touch(_ context.Context, uid uuid.UUID, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if b, ok := m.boxes[uid]; ok {
		b.lastActive = at
	}
	return nil
}

// LastActive implements Backend.
func (m *Memory) LastActive(_ context.Context, uid uuid.UUID) (time.Time, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[uid]
	if !ok {
		return time.Time{}, false, fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	return b.lastActive, !b.lastActive.IsZero(), nil
}

// Stats implements Backend, computed like Academy's PythonBackend.agent_stats.
func (m *Memory) Stats(_ context.Context, uid uuid.UUID) (AgentStats, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	b, ok := m.boxes[uid]
	if !ok {
		return AgentStats{}, fmt.Errorf("%w: %s", ErrNotFound, uid)
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
func (m *Memory) SetToken(_ context.Context, hash, run string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tokens[hash] = run
	return nil
}

// DeleteToken implements Backend.
func (m *Memory) DeleteToken(_ context.Context, hash string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tokens, hash)
	return nil
}

// TokenRun implements Backend.
func (m *Memory) TokenRun(_ context.Context, hash string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.tokens[hash]
	return r, ok, nil
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
