package core

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// Team mode (docs/TEAM.md): several `mosaic serve` replicas share one store. Each
// serves the API and the UI; exactly one, the leader (holding the store's leader
// lease, store/leader.go), probes, dispatches, monitors and continues tasks. A
// follower answers store-backed reads itself and forwards the rest to the leader
// (internal/api/forward.go). When the leader dies, a follower takes the lease within
// two probe ticks, adopts the simulated sites' work directories, and runs the
// engine's recovery: in-flight jobs are re-adopted by their tags, tasks the old
// leader stored but never dispatched are placed, and attempts it claimed are
// settled by tag, never submitted twice.
//
// A leader that loses the lease while alive (it could not renew in time) stops
// acting and then exits (Deposed): it cannot hand its in-process simulated jobs
// over, and a fresh process joins as a follower (systemd restarts it). Its jobs keep
// running, like after kill -9, and the new leader adopts them.

// LeaseTTL is the leader lease's time to live for a probe tick: a follower takes over
// at most TTL (the lease running out) plus TTL/3 (its next try) after the leader's
// last renewal, within two ticks.
func LeaseTTL(tick time.Duration) time.Duration { return tick }

// replica is a core's team-mode state.
type replica struct {
	id      string // this replica's holder id
	addr    string // its advertised URL
	ttl     time.Duration
	elector *store.Elector

	known      atomic.Pointer[store.LeaderState] // the lease row as last read
	storeErr   atomic.Pointer[string]            // the last lease step's error, nil after a good one
	changes    atomic.Int64                      // changes of holder this replica saw
	lastToken  atomic.Int64
	tookOverIn atomic.Int64 // nanoseconds from the old lease's expiry to our takeover, last time

	deposeOnce sync.Once
	deposed    chan struct{}
}

// newReplicaID names a replica uniquely per process start: host, pid, random.
func newReplicaID() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// enableReplica turns this core into a team-mode replica advertising addr.
func (c *Core) enableReplica(addr string) error {
	if c.store == nil {
		return errors.New("team mode needs a store")
	}
	ttl := LeaseTTL(c.collector.Tick())
	r := &replica{id: newReplicaID(), addr: addr, ttl: ttl, deposed: make(chan struct{})}
	el, err := c.store.NewElector(store.LeaderConfig{Name: store.LeaderName, Holder: r.id, Addr: addr, TTL: ttl, Clock: c.clock})
	if err != nil {
		return err
	}
	r.elector = el
	c.replica = r
	c.engine.SetLeadership(el.Leading, ttl+submitCallBound(c))
	return nil
}

// submitCallBound is how long one submit call of this core's sites may take: a
// simulated site answers in process; a batch site's sbatch over ssh is bounded by the
// transport's command timeout (two minutes).
func submitCallBound(c *Core) time.Duration {
	if allSim(c.cat) {
		return 5 * time.Second
	}
	return 2 * time.Minute
}

// Leadership says what this replica is.
type Leadership struct {
	// Role is "single" (laptop mode: one core owns the store), "leader" or "follower".
	Role    string `json:"role"`
	Replica string `json:"replica,omitempty"` // this replica's id
	// Leader is the leader's advertised URL ("" when no replica holds the lease).
	Leader string `json:"leader,omitempty"`
	// Token is the lease's fencing token as last read.
	Token int64 `json:"lease_token,omitempty"`
	// RenewLag is how long ago the lease was last renewed (by whoever holds it).
	RenewLag time.Duration `json:"-"`
	// Changes counts the changes of holder this replica saw.
	Changes int64 `json:"leader_changes,omitempty"`
	// TakeoverLag is, on a leader that took over, the time from the old lease's expiry
	// to the takeover.
	TakeoverLag time.Duration `json:"-"`
	// StoreErr is why the last lease step failed ("" when it succeeded): this replica
	// cannot reach the store.
	StoreErr string `json:"store_error,omitempty"`
}

// Leadership reports this replica's role and what it knows of the leader.
func (c *Core) Leadership() Leadership {
	if c == nil || c.replica == nil {
		return Leadership{Role: "single"}
	}
	r := c.replica
	l := Leadership{Role: "follower", Replica: r.id, Changes: r.changes.Load(), TakeoverLag: time.Duration(r.tookOverIn.Load())}
	if r.elector.Leading() {
		l.Role = "leader"
	}
	if e := r.storeErr.Load(); e != nil {
		l.StoreErr = *e
	}
	if st := r.known.Load(); st != nil {
		l.Token = st.Token
		if st.Holder != "" && c.clock().Before(st.ExpiresAt) {
			l.Leader = st.Addr
		}
		if !st.RenewedAt.IsZero() {
			l.RenewLag = c.clock().Sub(st.RenewedAt)
		}
	}
	if l.Role == "leader" {
		l.Leader = r.addr
	}
	return l
}

// Replicated reports whether this core is a team-mode replica.
func (c *Core) Replicated() bool { return c != nil && c.replica != nil }

// Leading reports whether this core may act: always in laptop mode; in team mode
// while it holds the leader lease.
func (c *Core) Leading() bool { return c == nil || c.replica == nil || c.replica.elector.Leading() }

// Deposed is closed when this replica lost the lease while leading, or a single core
// lost its store's owner lease (its lock file replaced, its PostgreSQL session ended);
// the process should then exit without stopping its jobs (serve does). Nil when there
// is no lease to lose (an in-memory store).
func (c *Core) Deposed() <-chan struct{} {
	if c.replica == nil {
		return c.leaseLost
	}
	return c.replica.deposed
}

// takeOverer is a provider that must take over state when its replica becomes the
// leader (a simulated site's work directory: simprov.TakeOver).
type takeOverer interface{ TakeOver() error }

// takeOverSites makes this replica the owner of the sites' local state.
func (c *Core) takeOverSites() error {
	var errs []error
	for _, p := range c.collector.Providers() {
		if t, ok := p.(takeOverer); ok {
			if err := t.TakeOver(); err != nil {
				errs = append(errs, fmt.Errorf("system %s: %w", p.System(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// runReplica competes for the lease every TTL/3 and runs the leader's work while it
// holds it, until ctx ends or the lease is lost (then Deposed is closed).
func (c *Core) runReplica(ctx context.Context) {
	r := c.replica
	every := r.ttl / 3
	var (
		leadCancel context.CancelFunc
		leadDone   chan struct{}
	)
	stop := func() {
		if leadCancel == nil {
			return
		}
		leadCancel()
		select {
		case <-leadDone:
		case <-time.After(closeWait):
			c.log.Warn("leader work still running after the grace period", "grace", closeWait)
		}
		leadCancel = nil
	}
	defer func() {
		stop()
		if r.elector.Leading() {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			if err := r.elector.Resign(rctx); err != nil {
				c.log.Warn("could not give the leader lease up; a follower takes over when it expires", "err", err)
			}
			cancel()
		}
	}()
	for {
		// One step is bounded by half the TTL: a store that hangs must not keep this
		// replica from noticing its deadline.
		sctx, scancel := context.WithTimeout(ctx, r.ttl/2)
		var before store.LeaderState
		if leadCancel == nil {
			before, _ = c.store.Leader(sctx, store.LeaderName) // to measure a takeover
		}
		st, _, err := r.elector.Step(sctx)
		scancel()
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			msg := err.Error()
			r.storeErr.Store(&msg)
			c.log.Warn("leader lease: the store did not answer (will retry)", "err", err)
		} else {
			r.storeErr.Store(nil)
			r.known.Store(&st)
			if prev := r.lastToken.Swap(st.Token); prev != 0 && prev != st.Token {
				r.changes.Add(1)
			}
		}
		leading := r.elector.Leading()
		switch {
		case leading && leadCancel == nil:
			if !before.ExpiresAt.IsZero() && before.Holder != "" && before.Holder != r.id {
				r.tookOverIn.Store(int64(c.clock().Sub(before.ExpiresAt)))
			}
			if err := c.takeOverSites(); err != nil {
				// The old leader still runs a site's jobs (it has not exited yet):
				// leading without them would take them for gone. Give the lease back
				// and try again.
				c.log.Warn("cannot take over yet; giving the lease back", "err", err)
				if err := r.elector.Resign(ctx); err != nil {
					c.log.Warn("give the leader lease back", "err", err)
				}
				break
			}
			c.log.Info("this replica is the leader now", "replica", r.id, "token", st.Token, "previous", before.Holder)
			c.engine.TakeOver(st.Token)
			lctx, cancel := context.WithCancel(ctx)
			leadCancel, leadDone = cancel, make(chan struct{})
			go func(done chan struct{}) { defer close(done); c.lead(lctx) }(leadDone)
		case !leading && leadCancel != nil:
			c.log.Error("this replica lost the leader lease; it stops acting and exits so that a fresh process joins as a follower", "replica", r.id)
			leadCancel() // stop acting now; Deposed lets the process exit at once
			r.deposeOnce.Do(func() { close(r.deposed) })
			stop()
			return
		}
		wait := every
		if leading = r.elector.Leading(); leading {
			if d := time.Until(r.elector.Deadline()); d < wait {
				wait = max(d, time.Millisecond)
			}
		} else if st := r.known.Load(); st != nil && st.Holder != "" {
			// A follower tries again right when the leader's lease runs out, not up to
			// TTL/3 later: a dead leader is replaced TTL after its last renewal.
			if d := st.ExpiresAt.Sub(c.clock()) + 10*time.Millisecond; d > 0 && d < wait {
				wait = d
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
}

// requestHash is the hash stored with an Idempotency-Key: of the request as decoded
// (so a retry's byte-level differences, key order or spacing, do not matter).
func requestHash(req SubmitRequest) string {
	req.DryRun = false
	b, _ := json.Marshal(req)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// replayed returns the task an earlier submission with this idempotency key created,
// or nil if there is none; an error (ErrInvalid) if that submission was another
// request (hash, see requestHash, differs).
func (c *Core) replayed(ctx context.Context, key, hash string) (*SubmitResult, error) {
	row, err := c.store.TaskByIdempotencyKey(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if row.IdempotencyHash != "" && row.IdempotencyHash != hash {
		return nil, fmt.Errorf("%w: this Idempotency-Key was already used for a different submission (task %s): "+
			"a retry must send the same request; use a new key for a new task", ErrInvalid, row.ID)
	}
	d, err := c.Task(ctx, row.ID)
	if err != nil {
		return nil, err
	}
	res := &SubmitResult{Task: d, Replayed: true}
	if len(row.Decision) > 0 {
		// The first answer's decision, from the trace stored with the task.
		var dec scheduler.Decision
		if err := json.Unmarshal(row.Decision, &dec); err != nil {
			return nil, fmt.Errorf("task %s: its stored placement decision does not decode (%w); look at it with `mosaic tasks show %s`", row.ID, err, row.ID)
		}
		res.Decision = &dec
	}
	return res, nil
}
