package exchange

import (
	"context"
	"errors"
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

// MailboxRecord is what the exchange knows about one mailbox.
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

// Backend stores mailboxes, queues and exchange metadata. Implementations must be
// safe for concurrent use; the Redis one may be shared by several servers.
type Backend interface {
	// Create registers a mailbox; if the uid exists it returns the existing record
	// and created=false (registration is idempotent).
	Create(ctx context.Context, rec MailboxRecord) (existing MailboxRecord, created bool, err error)
	// Lookup returns the record with its status, or ErrNotFound.
	Lookup(ctx context.Context, uid uuid.UUID) (MailboxRecord, error)
	// List returns the mailboxes of a run with their status.
	List(ctx context.Context, run string) ([]MailboxRecord, error)
	// Terminate marks the mailbox terminated, drops its queue, wakes its receivers
	// and returns the headers of requests sent to it that were never answered.
	// Terminating a terminated mailbox returns no headers. ErrNotFound if unknown.
	Terminate(ctx context.Context, uid uuid.UUID) ([]Header, error)
	// Put appends a message to dest's queue, tracks request/response pairs,
	// marks the sender active at rec.Time and appends rec to rec.Run's timeline,
	// all or nothing: a message is in the timeline iff it was delivered.
	Put(ctx context.Context, m Message, rec MessageRecord) error
	// Get marks the mailbox active and pops its next message, waiting up to
	// wait (wait < 0: until ctx ends).
	Get(ctx context.Context, uid uuid.UUID, wait time.Duration) ([]byte, error)
	// Touch records activity of a mailbox (for GET /mailbox/heartbeat).
	Touch(ctx context.Context, uid uuid.UUID, at time.Time) error
	// LastActive returns the last Touch time, ok=false if never touched.
	LastActive(ctx context.Context, uid uuid.UUID) (t time.Time, ok bool, err error)
	// Stats returns the mailbox's counters.
	Stats(ctx context.Context, uid uuid.UUID) (AgentStats, error)
	// Records returns the run's timeline in the order recorded.
	Records(ctx context.Context, run string) ([]MessageRecord, error)
	// SetPolicy stores (replaces) the policy of a run.
	SetPolicy(ctx context.Context, run string, p RunPolicy) error
	// Policy returns the policy of a run, ok=false if none was registered.
	Policy(ctx context.Context, run string) (p RunPolicy, ok bool, err error)
	// SetToken binds a token hash to a run.
	SetToken(ctx context.Context, tokenHash, run string) error
	// DeleteToken removes a token hash (revocation).
	DeleteToken(ctx context.Context, tokenHash string) error
	// TokenRun returns the run a token hash is bound to.
	TokenRun(ctx context.Context, tokenHash string) (run string, ok bool, err error)
	// Close releases the backend's resources.
	Close() error
}
