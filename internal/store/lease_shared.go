package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// SharedLease is the owner lock of a store held in shared mode: team-mode replicas
// (docs/TEAM.md) hold it together for their lifetime, so a core that would own the
// store alone (which takes it exclusively, Leaser.Acquire) cannot start beside them,
// and a replica cannot start beside such a core — whichever comes second is refused,
// with no window in which both act. flock(2) LOCK_SH on <db>.lock for SQLite,
// pg_try_advisory_lock_shared on the owner key for PostgreSQL.
type SharedLease struct {
	once    sync.Once
	release func() error
	err     error
}

// Release gives the shared lock up. Idempotent.
func (l *SharedLease) Release() error {
	if l == nil {
		return nil
	}
	l.once.Do(func() { l.err = l.release() })
	return l.err
}

// AcquireShared takes the shared owner lock of store db without waiting, or fails with
// a *LeaseHeldError when a single core holds it exclusively. A memory store has none
// (nil, nil).
func AcquireShared(ctx context.Context, db string, me Owner) (*SharedLease, error) {
	if db == "" || db == ":memory:" {
		return nil, nil
	}
	if IsPostgres(db) {
		return pgAcquireShared(ctx, db, me)
	}
	path := LockPath(db)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store %s: open its lock file: %w (check the directory's permissions, or set MOSAIC_DB to another path)", db, err)
	}
	if err := tryLockShared(f); err != nil {
		defer f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, &LeaseHeldError{Store: db, Lock: path, Holder: readHolder(f)}
		}
		return nil, fmt.Errorf("store %s: lock %s (shared): %w", db, path, err)
	}
	return &SharedLease{release: f.Close}, nil // closing releases the lock
}

func pgAcquireShared(ctx context.Context, dsn string, me Owner) (*SharedLease, error) {
	cfg, err := pgConfig(dsn)
	if err != nil {
		return nil, err
	}
	red := RedactDSN(dsn)
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = ownerAppName(me)
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: connect for its shared lock (%s): %w; check MOSAIC_DB and that the server runs",
			red, pgWhere(cfg), redactErr(err, dsn))
	}
	closeConn := func() error {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return c.Close(cctx)
	}
	var got bool
	if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock_shared($1)`, pgOwnerLockKey).Scan(&got); err != nil {
		_ = closeConn()
		return nil, fmt.Errorf("store %s: take its shared lock: %w", red, redactErr(err, dsn))
	}
	if !got {
		h := pgHolder(ctx, c)
		_ = closeConn()
		return nil, &LeaseHeldError{Store: red, Lock: pgLockName(cfg), Holder: h}
	}
	return &SharedLease{release: closeConn}, nil // the session's end releases the lock
}
