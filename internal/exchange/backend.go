package exchange

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/google/uuid"
)

// Backend errors. Backends return them (possibly wrapped); the server maps them to
// HTTP status codes.
var (
	ErrNotFound   = errors.New("mailbox not found")
	ErrTerminated = errors.New("mailbox terminated")
	ErrTimeout    = errors.New("no message before the timeout")
)

// MailboxRecord is what the exchange knows about one mailbox. Mailboxes are
// namespaced by run: the same uid in two runs is two unrelated mailboxes, so
// one run can never register, read or squat a mailbox of another.
type MailboxRecord struct {
	ID      EntityID  `json:"id"`
	Run     string    `json:"run"`
	Agent   []string  `json:"agent,omitempty"` // agent class MRO, most specific first
	Site    string    `json:"site,omitempty"`
	Created time.Time `json:"created"`
	Status  Status    `json:"-"` // filled by Lookup/List
}

// RunPolicy is the part of a campaign the exchange enforces for one run.
type RunPolicy struct {
	Campaign string              `json:"campaign,omitempty"`
	Peers    map[string][]string `json:"peers"`           // agent name -> allowed peers
	Sites    map[string]string   `json:"sites,omitempty"` // agent name -> site
}

// TokenInfo is what a token hash stands for: the run's operator, or one agent
// of the run (Agent non-zero).
type TokenInfo struct {
	Run   string    `json:"run"`
	Agent uuid.UUID `json:"agent,omitempty"`
	Name  string    `json:"name,omitempty"`
}

// Operator reports whether the token is the run's operator token.
func (t TokenInfo) Operator() bool { return t.Agent == uuid.Nil }

// Holder identifies the live registrant of a mailbox (a Mosaic extension of
// POST /mailbox; stock Academy clients send none).
type Holder struct {
	Instance string `json:"instance"`
	Host     string `json:"host,omitempty"`
	PID      int    `json:"pid,omitempty"`
}

// String describes the holder for error messages.
func (h Holder) String() string {
	s := "instance " + h.Instance
	if h.Host != "" {
		s += " on host " + h.Host
	}
	if h.PID > 0 {
		s += fmt.Sprintf(", pid %d", h.PID)
	}
	return s
}

// Limits are the quotas a backend enforces on Create and Put (<= 0: none), and
// how Put de-duplicates (DedupeWindow <= 0: it does not).
type Limits struct {
	MaxQueuedMessages  int64 // per mailbox: queued messages, and unanswered requests
	MaxQueuedBytes     int64 // per mailbox: bytes of queued messages
	MaxMailboxesPerRun int64 // mailboxes (any status) of one run
	MaxTotalBytes      int64 // bytes of queued messages in the whole backend
	// DedupeWindow is how long Put remembers a message it accepted, so that the
	// same message put again (a sender's retry) is not queued twice. DedupeEntries
	// bounds the messages remembered per destination mailbox and sender (its oldest
	// are forgotten first, so a busy sender never makes the exchange forget another
	// sender's messages); DedupeMailboxEntries bounds those of one mailbox from all
	// senders (a memory guard: beyond it the oldest, whoever sent it, is forgotten).
	// <= 0 means DefaultDedupeEntries and DefaultDedupeMailboxEntries: they cannot
	// be unbounded.
	DedupeWindow         time.Duration
	DedupeEntries        int64
	DedupeMailboxEntries int64
}

// Default de-duplication bounds (Limits.DedupeEntries, Limits.DedupeMailboxEntries).
const (
	DefaultDedupeEntries        = 256    // per destination mailbox and sender
	DefaultDedupeMailboxEntries = 65_536 // per destination mailbox, all senders
)

func (l Limits) dedupeEntries() int64 {
	if l.DedupeEntries <= 0 {
		return DefaultDedupeEntries
	}
	return l.DedupeEntries
}

func (l Limits) dedupeMailboxEntries() int64 {
	if l.DedupeMailboxEntries <= 0 {
		return DefaultDedupeMailboxEntries
	}
	return l.DedupeMailboxEntries
}

// dedupeID is what makes a message the same message for Put: its sender, tag and
// kind (a request and its response share the tag but differ in kind, and in sender
// and destination). With the destination mailbox (run and uid) it is the dedupe key.
// The sender is part of it so that nobody can suppress another sender's message by
// putting one with its tag first: the exchange checks src against the credential.
func dedupeID(h Header) string { return h.Src.UID.String() + ":" + dedupeSrcID(h) }

// dedupeSrcID is dedupeID within the sender's own set (Redis dds:…).
func dedupeSrcID(h Header) string { return h.Tag.String() + ":" + h.Kind }

// QuotaError is a refusal by a quota; Status is 429 for counts and 413 for
// sizes.
type QuotaError struct {
	Limit  string // the Config field, e.g. "MaxQueuedBytes"
	Flag   string // the `mosaic exchange serve` flag that sets it
	Value  int64
	Status int
	What   string // e.g. "mailbox 1c3…: 64 messages queued"
}

// Error implements error.
func (e *QuotaError) Error() string {
	return fmt.Sprintf("exchange quota %s=%d reached (%s); the receiver must drain its mailbox first, or the operator raises --%s", e.Limit, e.Value, e.What, e.Flag)
}

func quotaCount(limit, flag string, v int64, what string) error {
	return &QuotaError{Limit: limit, Flag: flag, Value: v, Status: http.StatusTooManyRequests, What: what}
}

func quotaSize(limit, flag string, v int64, what string) error {
	return &QuotaError{Limit: limit, Flag: flag, Value: v, Status: http.StatusRequestEntityTooLarge, What: what}
}

// ClaimResult is the answer of Backend.Claim.
type ClaimResult struct {
	OK         bool      // the caller now holds the mailbox
	Holder     Holder    // the live holder that refused the claim (OK=false)
	LastActive time.Time // when that holder was last seen
}

// Backend stores mailboxes, queues and exchange metadata. Implementations must be
// safe for concurrent use; the Redis one may be shared by several servers.
// Every mailbox operation names the run: mailboxes are namespaced by run.
type Backend interface {
	// Create registers a mailbox; if the uid exists in the run it returns the
	// existing record and created=false (registration is idempotent). A
	// *QuotaError when the run has lim.MaxMailboxesPerRun mailboxes.
	Create(ctx context.Context, rec MailboxRecord, lim Limits) (existing MailboxRecord, created bool, err error)
	// Lookup returns the record with its status, or ErrNotFound.
	Lookup(ctx context.Context, run string, uid uuid.UUID) (MailboxRecord, error)
	// List returns the mailboxes of a run with their status.
	List(ctx context.Context, run string) ([]MailboxRecord, error)
	// Terminate marks the mailbox terminated, drops its queue, wakes its receivers
	// and returns the headers of requests sent to it that were never answered.
	// Terminating a terminated mailbox returns no headers. ErrNotFound if unknown.
	Terminate(ctx context.Context, run string, uid uuid.UUID) ([]Header, error)
	// Reopen makes a terminated mailbox active again, with no holder.
	Reopen(ctx context.Context, run string, uid uuid.UUID) error
	// Claim makes h the mailbox's holder and marks it active at now, unless
	// another holder (a different non-empty instance) was active within ttl.
	Claim(ctx context.Context, run string, uid uuid.UUID, h Holder, now time.Time, ttl time.Duration) (ClaimResult, error)
	// Put appends a message to dest's queue (in rec.Run), tracks
	// request/response pairs, marks the sender active at rec.Time and appends
	// rec to rec.Run's timeline, all or nothing: a message is in the timeline
	// iff it was delivered. A *QuotaError when a limit of lim would be passed.
	//
	// Put is idempotent within lim.DedupeWindow (when > 0): a message with the
	// dedupe key (run, dest uid, src uid, tag, kind) of one accepted less than that
	// long before (by rec.Time) and still among the last lim.DedupeEntries
	// remembered for dest from that sender is answered with success and not queued, tracked or
	// recorded again — before any quota check, so a retry is not refused by the
	// queue its first copy filled, and before the destination's status, so a retry
	// of a message queued before the mailbox was terminated is answered as its
	// first copy was. The key is remembered iff the message was queued, in the same
	// atomic step. Later than the window (or beyond the entries kept per sender
	// and per mailbox) the same message is delivered again; a new message to a
	// terminated destination is refused (ErrTerminated). queued reports whether
	// this call queued the message (false for such a repeat).
	Put(ctx context.Context, m Message, rec MessageRecord, lim Limits) (queued bool, err error)
	// Get marks the mailbox active and pops its next message, waiting up to
	// wait (wait < 0: until ctx ends).
	Get(ctx context.Context, run string, uid uuid.UUID, wait time.Duration) ([]byte, error)
	// Touch records activity of a mailbox (for GET /mailbox/heartbeat).
	Touch(ctx context.Context, run string, uid uuid.UUID, at time.Time) error
	// LastActive returns the last Touch time, ok=false if never touched.
	LastActive(ctx context.Context, run string, uid uuid.UUID) (t time.Time, ok bool, err error)
	// Stats returns the mailbox's counters.
	Stats(ctx context.Context, run string, uid uuid.UUID) (AgentStats, error)
	// Records returns the run's timeline in the order recorded.
	Records(ctx context.Context, run string) ([]MessageRecord, error)
	// SetPolicy stores (replaces) the policy of a run.
	SetPolicy(ctx context.Context, run string, p RunPolicy) error
	// Policy returns the policy of a run, ok=false if none was registered.
	Policy(ctx context.Context, run string) (p RunPolicy, ok bool, err error)
	// SetToken binds a token hash to what it stands for.
	SetToken(ctx context.Context, tokenHash string, info TokenInfo) error
	// DeleteToken removes a token hash (revocation).
	DeleteToken(ctx context.Context, tokenHash string) error
	// Token returns what a token hash stands for.
	Token(ctx context.Context, tokenHash string) (info TokenInfo, ok bool, err error)
	// HeldBytes returns the bytes of queued messages the backend holds (the
	// figure MaxTotalBytes bounds).
	HeldBytes(ctx context.Context) (int64, error)
	// Close releases the backend's resources.
	Close() error
}
