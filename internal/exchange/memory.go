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
	held     int64     // bytes of queued messages, all mailboxes
	tlCap    int       // records kept per run (TimelineCap)
	ddBoxes  []*memBox // mailboxes that remember messages for de-duplication (sweep)
	ddNext   int       // sweep's next index in ddBoxes
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
	dd         *memDedupe // messages Put de-duplicates (Limits.DedupeWindow); nil: none
}

// memDedupe is what a mailbox remembers for de-duplication: every message
// accepted within the window, at most Limits.DedupeEntries per sender and
// Limits.DedupeMailboxEntries in all. The orders are oldest first and may hold
// entries already forgotten (lazy deletion: an entry is live iff seen has its key
// with its time); they are compacted when mostly dead, so they stay bounded.
type memDedupe struct {
	seen  map[ddKey]time.Time
	order []ddEntry // every sender's, by time accepted: the window and the mailbox bound
	bySrc map[uuid.UUID]*srcSeen
}

type srcSeen struct {
	order []ddEntry // this sender's: its bound
	n     int       // live entries
}

// ddKey is dedupeID as a map key.
type ddKey struct {
	src, tag uuid.UUID
	kind     string
}

type ddEntry struct {
	k  ddKey
	at time.Time
}

func ddKeyOf(h Header) ddKey { return ddKey{h.Src.UID, h.Tag, h.Kind} }

func (d *memDedupe) live(e ddEntry) bool {
	at, ok := d.seen[e.k]
	return ok && at.Equal(e.at)
}

func (d *memDedupe) drop(e ddEntry) {
	delete(d.seen, e.k)
	if s := d.bySrc[e.k.src]; s != nil {
		if s.n--; s.n <= 0 {
			delete(d.bySrc, e.k.src)
		}
	}
}

// has reports whether k was accepted less than the window before now (a
// remembered time the clock has since passed by the window is not a repeat, even
// when it is not the oldest entry: clocks need not be monotonic).
func (d *memDedupe) has(k ddKey, now time.Time, lim Limits) bool {
	at, ok := d.seen[k]
	return ok && now.Sub(at) < lim.DedupeWindow
}

func (d *memDedupe) add(k ddKey, now time.Time, lim Limits) {
	if old, ok := d.seen[k]; ok { // a repeat past the window: it is remembered anew
		d.drop(ddEntry{k, old})
	}
	e := ddEntry{k, now}
	d.seen[k] = now
	d.order = append(d.order, e)
	s := d.bySrc[k.src]
	if s == nil {
		s = &srcSeen{}
		d.bySrc[k.src] = s
	}
	s.n++
	s.order = append(s.order, e)
	// The sender's bound: it forgets its own oldest, never another sender's.
	for len(s.order) > 0 && s.n > int(lim.dedupeEntries()) { // bounded: each turn pops one
		if f := s.order[0]; d.live(f) {
			d.drop(f)
		}
		s.order[0] = ddEntry{}
		s.order = s.order[1:]
	}
	if len(s.order) > 2*s.n+64 {
		s.order = d.compact(s.order)
	}
	d.forget(now, lim)
}

// forget drops the entries older than the window (at now) and, beyond the
// mailbox bound, the oldest of any sender. Amortised O(1) per accepted message:
// every entry is popped once.
func (d *memDedupe) forget(now time.Time, lim Limits) {
	for len(d.order) > 0 { // bounded: each turn pops one entry
		e := d.order[0]
		live := d.live(e)
		if live && now.Sub(e.at) < lim.DedupeWindow && len(d.seen) <= int(lim.dedupeMailboxEntries()) {
			break
		}
		if live {
			d.drop(e)
		}
		d.order[0] = ddEntry{}
		d.order = d.order[1:] // append reallocates with the live part only: bounded
	}
	if len(d.order) > 2*len(d.seen)+64 {
		d.order = d.compact(d.order)
	}
}

// compact returns the live entries of order.
func (d *memDedupe) compact(order []ddEntry) []ddEntry {
	out := make([]ddEntry, 0, len(order)/2)
	for _, e := range order {
		if d.live(e) {
			out = append(out, e)
		}
	}
	return out
}

// ddSweepPerPut is how many other mailboxes one Put sweeps of expired dedupe
// entries, so that an idle mailbox (nobody sends to it any more) does not keep them
// for ever; the work per Put stays bounded.
const ddSweepPerPut = 2

// sweep forgets expired dedupe entries of the next ddSweepPerPut mailboxes that
// have any (round robin), and stops tracking those left with none.
func (m *Memory) sweep(now time.Time, lim Limits) {
	for range min(ddSweepPerPut, len(m.ddBoxes)) {
		if m.ddNext >= len(m.ddBoxes) {
			m.ddNext = 0
		}
		b := m.ddBoxes[m.ddNext]
		b.dd.forget(now, lim)
		if len(b.dd.seen) > 0 {
			m.ddNext++
			continue
		}
		b.dd = nil // swap-remove: the last one takes its place in the ring
		last := len(m.ddBoxes) - 1
		m.ddBoxes[m.ddNext] = m.ddBoxes[last]
		m.ddBoxes[last] = nil
		m.ddBoxes = m.ddBoxes[:last]
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
func (m *Memory) Put(_ context.Context, msg Message, rec MessageRecord, lim Limits) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	dest := msg.Header.Dest.UID
	b, ok := m.boxes[boxKey{rec.Run, dest}]
	if !ok {
		return false, notFound(rec.Run, dest)
	}
	// A repeat is recognised before the mailbox's status: a retry of a message
	// queued before the mailbox was terminated is answered as its first copy was.
	id := ddKeyOf(msg.Header)
	if lim.DedupeWindow > 0 {
		m.sweep(rec.Time, lim)
		if b.dd != nil && b.dd.has(id, rec.Time, lim) {
			return false, nil // accepted before: a sender's retry
		}
	}
	if b.rec.Status == StatusTerminated {
		return false, fmt.Errorf("%w: %s", ErrTerminated, dest)
	}
	size := int64(len(msg.Raw))
	switch {
	case lim.MaxQueuedMessages > 0 && int64(len(b.queue)) >= lim.MaxQueuedMessages:
		return false, quotaCount("MaxQueuedMessages", "max-queued-messages", lim.MaxQueuedMessages, fmt.Sprintf("mailbox %s has %d messages queued", dest, len(b.queue)))
	case lim.MaxQueuedMessages > 0 && msg.Header.Kind == KindRequest && int64(len(b.pending)) >= lim.MaxQueuedMessages:
		return false, quotaCount("MaxQueuedMessages", "max-queued-messages", lim.MaxQueuedMessages, fmt.Sprintf("mailbox %s has %d requests unanswered", dest, len(b.pending)))
	case lim.MaxQueuedBytes > 0 && b.bytes+size > lim.MaxQueuedBytes:
		return false, quotaSize("MaxQueuedBytes", "max-queued-bytes", lim.MaxQueuedBytes, fmt.Sprintf("mailbox %s holds %d bytes, the message has %d", dest, b.bytes, size))
	case lim.MaxTotalBytes > 0 && m.held+size > lim.MaxTotalBytes:
		return false, quotaSize("MaxTotalBytes", "max-total-bytes", lim.MaxTotalBytes, fmt.Sprintf("the exchange holds %d bytes, the message has %d", m.held, size))
	}
	if lim.DedupeWindow > 0 {
		if b.dd == nil {
			b.dd = &memDedupe{seen: map[ddKey]time.Time{}, bySrc: map[uuid.UUID]*srcSeen{}}
			m.ddBoxes = append(m.ddBoxes, b)
		}
		b.dd.add(id, rec.Time, lim)
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
	return true, nil
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
