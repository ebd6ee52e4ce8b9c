package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Team mode (docs/TEAM.md): several `mosaic serve` replicas share one store and elect
// one leader, the only one that probes, dispatches and monitors. The election is a
// lease row (leader_lease, migration 0007) taken and renewed with one conditional
// UPDATE in one transaction: the row is taken when it is free, expired, or already
// ours. Its token is the fencing token: it grows by one whenever the holder changes,
// and every claim of a submission (CreateAttempt) commits only while the claimer's
// token is still the row's, so a deposed leader cannot start a job after another
// replica took over (ErrFenced).
//
// Clocks: expires_at is written with the holder's clock and compared with the
// acquirer's. The holder stops acting at its own local deadline, measured on its
// monotonic clock from the start of its last successful renewal: TTL minus a quarter
// of it, the allowance for clock skew between replicas. So as long as the replicas'
// clocks agree within TTL/4 (NTP keeps them within milliseconds), a holder that
// cannot renew (store unreachable, process paused) has stopped before any other
// replica can see its lease expired.

// ErrFenced is returned by a claim (CreateAttempt) of a replica whose fencing token is
// no longer the lease's: another replica leads now, and this one must stop acting.
var ErrFenced = errors.New("this replica is no longer the leader (its fencing token is stale); it stops dispatching and another replica carries on")

// LeaderName is the lease of the core's engine (probing, dispatch, monitoring).
const LeaderName = "core"

// LeaderState is the lease row.
type LeaderState struct {
	Name      string    `json:"name"`
	Holder    string    `json:"holder"` // the holder's replica id ("" if never held)
	Addr      string    `json:"addr"`   // the holder's advertised URL
	Token     int64     `json:"token"`  // fencing token, grows with every change of holder
	ExpiresAt time.Time `json:"expires_at"`
	RenewedAt time.Time `json:"renewed_at"`
}

// LeaderConfig says who competes for a lease and how long a renewal lasts.
type LeaderConfig struct {
	Name   string // the lease (LeaderName)
	Holder string // this replica's id, unique per process start
	Addr   string // this replica's advertised URL, for followers to forward to
	TTL    time.Duration
	// Clock is the wall clock written into expires_at and compared with it; nil =
	// time.Now. Tests move it by hand.
	Clock func() time.Time
}

// Elector takes and renews one lease for one replica. Step is called every TTL/3;
// Leading says whether this replica may act now.
type Elector struct {
	st  *Store
	cfg LeaderConfig

	mu       sync.Mutex
	token    int64     // the token of our holding; 0 when not leading
	deadline time.Time // local: stop acting at this instant unless renewed
	lastOK   time.Time // when the last successful renewal started
}

// NewElector makes an elector for cfg on this store and turns fencing on: from now
// on, claims commit only with the token of a current holding (SetFenceToken).
func (s *Store) NewElector(cfg LeaderConfig) (*Elector, error) {
	if cfg.Name == "" || cfg.Holder == "" {
		return nil, fmt.Errorf("store: leader lease needs a name and a holder id")
	}
	if cfg.TTL <= 0 {
		return nil, fmt.Errorf("store: leader lease TTL %s: want a positive duration", cfg.TTL)
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	s.fenced.Store(true)
	s.fenceName.Store(&cfg.Name)
	return &Elector{st: s, cfg: cfg}, nil
}

// skewAllowance is the part of the TTL a holder gives up to clock skew.
func skewAllowance(ttl time.Duration) time.Duration { return ttl / 4 }

// Step takes the lease if it is free, expired or ours (renewing it), in one
// transaction, and reports the row after the attempt and whether we hold it. A
// failure to reach the store leaves the local deadline as it was: the holder keeps
// acting until that deadline and stops there.
func (e *Elector) Step(ctx context.Context) (LeaderState, bool, error) {
	start := e.cfg.Clock()
	st, ok, err := e.st.tryLead(ctx, e.cfg, start)
	e.mu.Lock()
	defer e.mu.Unlock()
	if err != nil {
		return st, e.leadingLocked(e.cfg.Clock()), err
	}
	if !ok {
		e.token, e.deadline = 0, time.Time{}
		e.st.fenceToken.Store(0)
		return st, false, nil
	}
	e.token = st.Token
	e.deadline = start.Add(e.cfg.TTL - skewAllowance(e.cfg.TTL))
	e.lastOK = start
	e.st.fenceToken.Store(st.Token)
	return st, true, nil
}

// Leading reports whether this replica holds the lease and its local deadline has
// not passed. Past the deadline it also drops the store's fence token, so no claim of
// this replica commits any more.
func (e *Elector) Leading() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.leadingLocked(e.cfg.Clock())
}

func (e *Elector) leadingLocked(now time.Time) bool {
	if e.token == 0 {
		return false
	}
	if !now.Before(e.deadline) {
		e.token, e.deadline = 0, time.Time{}
		e.st.fenceToken.Store(0)
		return false
	}
	return true
}

// Deadline is when this replica stops acting unless it renews (zero if not leading).
func (e *Elector) Deadline() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.deadline
}

// Token is the fencing token of our holding (0 when not leading).
func (e *Elector) Token() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.token
}

// LastRenewal is when the last successful renewal started (zero if none yet).
func (e *Elector) LastRenewal() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lastOK
}

// Resign gives the lease up if we hold it (expires it now, so a follower takes over
// on its next step instead of after the TTL) and stops acting.
func (e *Elector) Resign(ctx context.Context) error {
	e.mu.Lock()
	e.token, e.deadline = 0, time.Time{}
	e.st.fenceToken.Store(0)
	e.mu.Unlock()
	_, err := e.st.db.ExecContext(ctx, `UPDATE leader_lease SET expires_at=0 WHERE name=? AND holder=?`, e.cfg.Name, e.cfg.Holder)
	if err != nil {
		return fmt.Errorf("store: give up the leader lease: %w", err)
	}
	return nil
}

// tryLead is the conditional take-or-renew.
func (s *Store) tryLead(ctx context.Context, c LeaderConfig, now time.Time) (LeaderState, bool, error) {
	var st LeaderState
	var ok bool
	err := s.leaseTx(ctx, func(tx *txn) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO leader_lease (name) VALUES (?) ON CONFLICT (name) DO NOTHING`, c.Name); err != nil {
			return fmt.Errorf("store: leader lease %s: %w", c.Name, err)
		}
		res, err := tx.ExecContext(ctx, `UPDATE leader_lease SET
				token = CASE WHEN holder=? THEN token ELSE token+1 END,
				holder=?, addr=?, expires_at=?, renewed_at=?
			WHERE name=? AND (holder=? OR expires_at<=?)`,
			c.Holder, c.Holder, c.Addr, nanos(now.Add(c.TTL)), nanos(now), c.Name, c.Holder, nanos(now))
		if err != nil {
			return fmt.Errorf("store: take the leader lease %s: %w", c.Name, err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		ok = n == 1
		st, err = readLeader(ctx, tx, c.Name)
		return err
	})
	if err != nil {
		return LeaderState{}, false, err
	}
	return st, ok, nil
}

// leaseTx runs fn in one transaction without the store's writer lock (tx takes it on
// PostgreSQL to order event ids): a lease step touches only the lease row, whose own
// row lock orders acquirers, and must not queue behind a burst of task writes past
// the holder's deadline. On SQLite every write transaction takes the database's
// write lock at BEGIN, as tx does.
func (s *Store) leaseTx(ctx context.Context, fn func(*txn) error) error {
	return s.inTx(ctx, false, fn)
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *row
}

func readLeader(ctx context.Context, q queryRower, name string) (LeaderState, error) {
	var st LeaderState
	var exp, ren int64
	err := q.QueryRowContext(ctx, `SELECT name, holder, addr, token, expires_at, renewed_at FROM leader_lease WHERE name=?`, name).
		Scan(&st.Name, &st.Holder, &st.Addr, &st.Token, &exp, &ren)
	if errors.Is(err, sql.ErrNoRows) {
		return LeaderState{Name: name}, nil
	}
	if err != nil {
		return LeaderState{}, fmt.Errorf("store: read the leader lease %s: %w", name, err)
	}
	if exp > 0 {
		st.ExpiresAt = fromNanos(exp)
	}
	if ren > 0 {
		st.RenewedAt = fromNanos(ren)
	}
	return st, nil
}

// Leader reads the lease row (a zero holder if it was never taken).
func (s *Store) Leader(ctx context.Context, name string) (LeaderState, error) {
	return readLeader(ctx, s.db, name)
}

// SetFenceToken sets the token this replica's claims carry (0: not leading, every
// claim fails with ErrFenced). An Elector sets it; tests may too.
func (s *Store) SetFenceToken(tok int64) { s.fenceToken.Store(tok) }

// fence is the claim check inside a transaction: without fencing (laptop mode, no
// Elector) it returns token 0 and nil; with it, it confirms the lease row still
// carries our token, taking the row's lock (an UPDATE) so that a takeover running at
// the same time either commits before us (and we fail) or waits for our claim (and
// its recovery sees it).
func (s *Store) fence(ctx context.Context, tx *txn) (int64, error) {
	if !s.fenced.Load() {
		return 0, nil
	}
	tok := s.fenceToken.Load()
	name := LeaderName
	if p := s.fenceName.Load(); p != nil {
		name = *p
	}
	if tok == 0 {
		return 0, ErrFenced
	}
	res, err := tx.ExecContext(ctx, `UPDATE leader_lease SET token=token WHERE name=? AND token=?`, name, tok)
	if err != nil {
		return 0, fmt.Errorf("store: check the leader lease: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return 0, fmt.Errorf("%w (token %d)", ErrFenced, tok)
	}
	return tok, nil
}

// CheckFence confirms, before a call that changes something at a site (a cancel),
// that this replica still holds the lease with its token: nil in laptop mode or
// when it does, ErrFenced when it was deposed.
func (s *Store) CheckFence(ctx context.Context) error {
	if !s.fenced.Load() {
		return nil
	}
	return s.tx(ctx, func(tx *txn) error {
		_, err := s.fence(ctx, tx)
		return err
	})
}

// ClaimToken is the fencing token of the leader that claimed attempt n of a task (0
// in laptop mode).
func (s *Store) ClaimToken(ctx context.Context, taskID string, n int) (int64, error) {
	var tok int64
	err := s.db.QueryRowContext(ctx, `SELECT claim_token FROM attempts WHERE task_id=? AND n=?`, taskID, n).Scan(&tok)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("attempt %s/%d: %w", taskID, n, ErrNotFound)
	}
	return tok, err
}

// fenceState is the Store's part of fencing (embedded in Store).
type fenceState struct {
	fenced     atomic.Bool
	fenceName  atomic.Pointer[string]
	fenceToken atomic.Int64
}
