package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/config"
)

// A store has one owner at a time: the core that runs its tasks. Two cores on one
// store each see the other's jobs as vanished and run commands twice, so the owner
// holds a Lease for as long as it runs, and a second core refuses to start.
//
// The seam is the Leaser/Lease pair so that a shared database (team mode on
// PostgreSQL, later) can implement the same contract with a lease row and a
// heartbeat; the embedded SQLite store implements it with flock(2) on a file next
// to the database (FileLeaser). The kernel releases a flock when its holder dies,
// so a lock file left behind by a crashed (kill -9) core never blocks the next one:
// it is the lock, not the file's existence, that counts.

// Owner identifies the holder of a store's lease.
type Owner struct {
	PID     int       `json:"pid"`
	Addr    string    `json:"addr,omitempty"` // the API's listen address, "" if it has none
	Host    string    `json:"host,omitempty"`
	Started time.Time `json:"started"`
	// Generation is the fencing token: it grows by one with every acquisition of the
	// store, so a write tagged with an older generation comes from a superseded owner.
	Generation uint64 `json:"generation"`
}

// String names the owner for a person: "PID 123 (mosaic serve at 127.0.0.1:8642 on
// host h, since ...)".
func (o Owner) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "PID %d", o.PID)
	var parts []string
	if o.Addr != "" {
		parts = append(parts, "serving at "+o.Addr)
	}
	if o.Host != "" {
		parts = append(parts, "on host "+o.Host)
	}
	if !o.Started.IsZero() {
		parts = append(parts, "since "+o.Started.UTC().Format(time.RFC3339))
	}
	if len(parts) > 0 {
		b.WriteString(" (" + strings.Join(parts, ", ") + ")")
	}
	return b.String()
}

// Leaser hands out a store's lease.
type Leaser interface {
	// Acquire takes the lease for me, or fails with an error wrapping ErrLeaseHeld
	// (a *LeaseHeldError naming the holder) when another owner has it.
	Acquire(ctx context.Context, me Owner) (Lease, error)
}

// Lease is held exclusive ownership of a store.
type Lease interface {
	// Owner is the holder's identity with the generation this acquisition got.
	Owner() Owner
	// Renew confirms the lease is still ours (and extends it where leases expire);
	// an error wrapping ErrLeaseLost means another owner may have taken over and the
	// holder must stop writing.
	Renew(ctx context.Context) error
	// Release gives the lease up. Idempotent.
	Release() error
}

// ErrLeaseHeld is wrapped by Acquire's error when another owner holds the lease.
var ErrLeaseHeld = errors.New("the store is in use by another Mosaic core")

// ErrLeaseLost is wrapped by Renew's error when the lease is no longer ours.
var ErrLeaseLost = errors.New("the store's lease was lost")

// ErrLeaseReleased is wrapped (with ErrLeaseLost) by Renew's error after Release.
var ErrLeaseReleased = errors.New("the lease was released by its holder")

// LeaseHeldError names who holds the lease and what to do.
type LeaseHeldError struct {
	Store  string // the database path
	Lock   string // the lock file
	Holder Owner  // zero PID if the holder's record could not be read
}

// Error implements error.
func (e *LeaseHeldError) Error() string {
	who := "another process"
	if e.Holder.PID > 0 {
		who = e.Holder.String()
	}
	return fmt.Sprintf("store %s is in use by another Mosaic core: %s holds its lock %s. "+
		"Only one core may own a store (two would each run the other's jobs again). "+
		"Stop that core (e.g. `kill %s`), or give this one another store with MOSAIC_DB=<path>",
		e.Store, who, e.Lock, pidOr(e.Holder.PID))
}

func pidOr(pid int) string {
	if pid > 0 {
		return fmt.Sprint(pid)
	}
	return "<pid>"
}

// Unwrap makes errors.Is(err, ErrLeaseHeld) true.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// LockPath is the lock file of the database at dbPath.
func LockPath(dbPath string) string { return dbPath + ".lock" }

// FileLeaser is the lease of an embedded (SQLite) store: flock(2) on <db>.lock, held
// for the owner's lifetime, with the owner's record (JSON) written inside the file.
type FileLeaser struct {
	DBPath string
}

var _ Leaser = FileLeaser{}

// Acquire takes the exclusive lock without waiting. The lock is per open file, so a
// second Acquire in the same process also fails while the first is held.
func (l FileLeaser) Acquire(ctx context.Context, me Owner) (Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if _, err := config.NormalizeDB(l.DBPath); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	path := LockPath(l.DBPath)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store %s: open its lock file: %w (check the directory's permissions, or set MOSAIC_DB to another path)", l.DBPath, err)
	}
	if err := tryLock(f); err != nil {
		defer f.Close()
		if errors.Is(err, errWouldBlock) {
			return nil, &LeaseHeldError{Store: l.DBPath, Lock: path, Holder: readHolder(f)}
		}
		return nil, fmt.Errorf("store %s: lock %s: %w", l.DBPath, path, err)
	}
	prev, _ := readOwner(f) // a damaged or empty record only resets the generation
	me.Generation = prev.Generation + 1
	if me.Started.IsZero() {
		me.Started = time.Now().UTC()
	}
	if err := writeOwner(f, me); err != nil {
		f.Close() // closing releases the lock
		return nil, fmt.Errorf("store %s: write the owner record to %s: %w", l.DBPath, path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("store %s: stat %s: %w", l.DBPath, path, err)
	}
	return &fileLease{path: path, f: f, fi: fi, me: me}, nil
}

// readHolder reads the holder's record. The holder writes it right after taking the
// lock, so an empty file may just be early: look again a few times (bounded).
func readHolder(f *os.File) Owner {
	for i := 0; i < 20; i++ {
		if o, err := readOwner(f); err == nil && o.PID > 0 {
			return o
		}
		time.Sleep(10 * time.Millisecond)
	}
	return Owner{}
}

// maxOwnerRecord bounds what is read from a lock file.
const maxOwnerRecord = 4 << 10

func readOwner(f *os.File) (Owner, error) {
	buf := make([]byte, maxOwnerRecord)
	n, err := f.ReadAt(buf, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return Owner{}, err
	}
	var o Owner
	if err := json.Unmarshal(buf[:n], &o); err != nil {
		return Owner{}, fmt.Errorf("owner record: %w", err)
	}
	return o, nil
}

func writeOwner(f *os.File, o Owner) error {
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	if err := f.Truncate(0); err != nil {
		return err
	}
	if _, err := f.WriteAt(b, 0); err != nil {
		return err
	}
	return f.Sync()
}

type fileLease struct {
	path string
	fi   os.FileInfo // the locked file, to notice it being removed or replaced

	mu sync.Mutex
	f  *os.File // nil once released
	me Owner
}

func (l *fileLease) Owner() Owner {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.me
}

// Renew checks that the locked file is still the one at the lock path: if someone
// removed or replaced it, a second core could lock the new file, so the lease is
// reported lost.
func (l *fileLease) Renew(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return fmt.Errorf("%w: %w", ErrLeaseLost, ErrLeaseReleased)
	}
	cur, err := os.Stat(l.path)
	if err != nil {
		return fmt.Errorf("%w: lock file %s: %v; stop this core: another one may own the store now", ErrLeaseLost, l.path, err)
	}
	if !os.SameFile(cur, l.fi) {
		return fmt.Errorf("%w: lock file %s was replaced; stop this core: another one may own the store now", ErrLeaseLost, l.path)
	}
	return nil
}

// Release unlocks and closes the lock file. The file itself stays (removing it would
// race with a core that just opened it); its record keeps the generation.
func (l *fileLease) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := errors.Join(unlock(l.f), l.f.Close())
	l.f = nil
	if err != nil {
		return fmt.Errorf("store: release the lock %s: %w", l.path, err)
	}
	return nil
}
