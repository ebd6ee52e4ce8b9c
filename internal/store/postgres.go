package store

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/mosaic-hpc/mosaic/internal/config"
)

// IsPostgres reports whether a MOSAIC_DB value names a PostgreSQL database
// (postgres://… or postgresql://…) rather than an SQLite file.
func IsPostgres(db string) bool { return config.IsPostgresURL(db) }

// RedactDSN returns a PostgreSQL URL with its password (in the user info or a
// password= parameter) replaced by "xxxxx", for errors and logs. A value that is not
// a PostgreSQL URL is returned as it is (a file path holds no secret). One that does
// not parse, or whose parts a reader could take differently (a fragment, or text
// before its last '@' that holds a ':' the parser did not read as the password: a
// password with an unescaped '#', '/' or '?'), is cut to its scheme, since where its
// password ends cannot be known.
func RedactDSN(dsn string) string {
	if !IsPostgres(dsn) {
		return dsn
	}
	u, err := url.Parse(dsn)
	if err != nil || u.Fragment != "" || u.RawFragment != "" || misreadPassword(dsn, u) {
		scheme, _, _ := strings.Cut(dsn, "://")
		return strings.ToLower(scheme) + "://(URL not shown: it does not parse cleanly and may hold a password)"
	}
	u.RawQuery, _ = redactQuery(u.RawQuery)
	return u.Redacted()
}

// rawPassword is what a reader of the text would take for the password: after the
// first ':' of what precedes the last '@' (after the scheme); "" if there is none.
func rawPassword(dsn string) string {
	_, rest, ok := strings.Cut(dsn, "://")
	if !ok {
		return ""
	}
	at := strings.LastIndexByte(rest, '@')
	if at < 0 {
		return ""
	}
	_, pw, ok := strings.Cut(rest[:at], ":")
	if !ok {
		return ""
	}
	return pw
}

// misreadPassword reports whether the raw text has a password the parser did not
// find where the text has it (so showing the parsed URL could show the password).
func misreadPassword(dsn string, u *url.URL) bool {
	raw := rawPassword(dsn)
	if raw == "" {
		return false
	}
	pw, ok := u.User.Password()
	if !ok {
		return true
	}
	unescaped, err := url.PathUnescape(raw)
	return err != nil || (unescaped != pw && raw != pw)
}

// redactQuery replaces the value of every parameter whose name holds "password" (any
// case, escaped or not, valid escapes or not, wherever in the pair the word is) with
// xxxxx, and returns the values it replaced.
func redactQuery(raw string) (string, []string) {
	if raw == "" {
		return raw, nil
	}
	var secrets []string
	parts := strings.Split(raw, "&")
	for i, p := range parts {
		plain := p
		if u, err := url.QueryUnescape(p); err == nil {
			plain = u
		}
		if !strings.Contains(asciiLower(plain), "password") {
			continue
		}
		// The value starts after the '=' that follows the word as written (or, for an
		// escaped word, after the pair's first '=').
		from := 0
		if w := strings.Index(asciiLower(p), "password"); w >= 0 {
			from = w
		}
		eq := strings.IndexByte(p[from:], '=')
		if eq < 0 {
			continue
		}
		eq += from
		if v := p[eq+1:]; v != "" {
			secrets = append(secrets, v)
			if uv, err := url.QueryUnescape(v); err == nil && uv != "" {
				secrets = append(secrets, uv)
			}
		}
		parts[i] = p[:eq+1] + "xxxxx"
	}
	return strings.Join(parts, "&"), secrets
}

// asciiLower lowers ASCII letters only, keeping every byte where it is.
func asciiLower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// dsnSecrets are the strings of a DSN that must never be shown — its password as
// parsed, as written, escaped and unescaped, and the password parameters — longest first, so
// that replacing them in turn never leaves part of a longer one.
func dsnSecrets(dsn string) []string {
	var out []string
	add := func(s string) {
		if s == "" {
			return
		}
		out = append(out, s, url.QueryEscape(s), url.PathEscape(s))
		if u, err := url.PathUnescape(s); err == nil && u != "" {
			out = append(out, u)
		}
		if u, err := url.QueryUnescape(s); err == nil && u != "" {
			out = append(out, u)
		}
	}
	add(rawPassword(dsn))
	var queries []string
	if u, err := url.Parse(dsn); err == nil {
		if p, ok := u.User.Password(); ok {
			add(p)
		}
		queries = append(queries, u.RawQuery)
	}
	if _, q, ok := strings.Cut(dsn, "?"); ok { // as written, whatever the parser made of it
		queries = append(queries, q)
	}
	for _, q := range queries {
		_, qs := redactQuery(q)
		for _, v := range qs {
			add(v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return slices.Compact(out)
}

// redactedError hides a DSN's password in the text of an error from the driver (which
// may quote the connection string) while keeping errors.Is/As on the original.
type redactedError struct {
	err     error
	secrets []string
}

func (e *redactedError) Error() string {
	s := e.err.Error()
	for _, p := range e.secrets {
		s = strings.ReplaceAll(s, p, "xxxxx")
	}
	return s
}

func (e *redactedError) Unwrap() error { return e.err }

func redactErr(err error, dsn string) error {
	if err == nil {
		return nil
	}
	sec := dsnSecrets(dsn)
	if len(sec) == 0 {
		return err
	}
	return &redactedError{err: err, secrets: sec}
}

// pgConnectTimeout bounds connecting when the DSN sets no connect_timeout.
const pgConnectTimeout = 10 * time.Second

// pgConfig parses a PostgreSQL URL for pgx; the error never holds the password.
func pgConfig(dsn string) (*pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("store %s: not a valid PostgreSQL URL: %w; write MOSAIC_DB as postgres://USER:PASSWORD@HOST:PORT/DATABASE?sslmode=…",
			RedactDSN(dsn), redactErr(err, dsn))
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = pgConnectTimeout
	}
	return cfg, nil
}

// pgWhere names the server and database of a config, for errors.
func pgWhere(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("database %q on %s:%d as user %q", cfg.Database, cfg.Host, cfg.Port, cfg.User)
}

// openPostgres opens the store in a PostgreSQL database: a database/sql pool over
// pgx's driver, checked to be reachable and to hold Mosaic's schema or nothing, then
// migrated (under an advisory lock, so replicas starting together apply each
// migration once).
func openPostgres(ctx context.Context, dsn string) (*Store, error) {
	cfg, err := pgConfig(dsn)
	if err != nil {
		return nil, err
	}
	red := RedactDSN(dsn)
	db := stdlib.OpenDB(*cfg)
	db.SetMaxOpenConns(16)
	db.SetMaxIdleConns(4)
	db.SetConnMaxIdleTime(5 * time.Minute)
	pctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout+time.Second)
	err = db.PingContext(pctx)
	cancel()
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store %s: cannot connect to PostgreSQL (%s): %w; check that the server runs, "+
			"that MOSAIC_DB's host, port, user, password and database are right, and that pg_hba.conf admits this host",
			red, pgWhere(cfg), redactErr(err, dsn))
	}
	s := &Store{db: &conn{db: db, d: dialectPostgres}, path: red}
	if err := s.checkPostgresSchema(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return finishOpen(ctx, s)
}

// checkPostgresSchema refuses a database that holds another program's tables (and
// none of Mosaic's): migrating into it would mix two schemas.
func (s *Store) checkPostgresSchema(ctx context.Context) error {
	var tables, ours int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COUNT(CASE WHEN table_name = 'schema_migrations' THEN 1 END)
		FROM information_schema.tables WHERE table_schema = current_schema()`).Scan(&tables, &ours)
	if err != nil {
		return fmt.Errorf("store %s: read its tables: %w", s.path, err)
	}
	if tables > 0 && ours == 0 {
		return fmt.Errorf("store %s: the database holds %d tables of another program and none of Mosaic's; "+
			"give Mosaic a database of its own (CREATE DATABASE mosaic) and point MOSAIC_DB at it", s.path, tables)
	}
	return nil
}

// Advisory lock keys (64-bit, per database): "mosaic" in the high bytes.
const (
	// pgMigrateLockKey serializes migrations (pg_advisory_xact_lock, per transaction).
	pgMigrateLockKey int64 = 0x6d6f7361_69630001
	// pgWriterLockKey serializes write transactions (Store.tx), as SQLite's one writer.
	pgWriterLockKey int64 = 0x6d6f7361_69630003
	// pgOwnerLockKey is the single-owner lease of a store (pg_try_advisory_lock, per
	// session, on the lease's own connection).
	pgOwnerLockKey int64 = 0x6d6f7361_69630002
	// pg_locks shows a 64-bit advisory key as classid (high 32 bits) and objid (low).
	pgOwnerClassID = uint32(pgOwnerLockKey >> 32)
	pgOwnerObjID   = uint32(pgOwnerLockKey & 0xffffffff)
)

// NewLeaser returns the lease of the store MOSAIC_DB names: a PostgreSQL advisory lock
// (PGLeaser) for a postgres:// URL, flock(2) on <file>.lock (FileLeaser) otherwise.
func NewLeaser(db string) Leaser {
	if IsPostgres(db) {
		return PGLeaser{DSN: db}
	}
	return FileLeaser{DBPath: db}
}

// PGLeaser is the single-owner lease of a PostgreSQL store: a session advisory lock
// (pg_try_advisory_lock) held on a connection of its own for the owner's lifetime.
// The server releases it when that connection ends — Release, the process dying, or
// the network dropping — so a killed core never blocks the next one. The holder is
// named from pg_stat_activity: the lease connection's application_name carries the
// owner's PID, API address and host. The generation (fencing token) is the
// transaction id of the acquisition (txid_current), which only grows in a cluster.
type PGLeaser struct {
	DSN string
}

var _ Leaser = PGLeaser{}

// pgLockName says which lock a PGLeaser takes, for LeaseHeldError.Lock.
func pgLockName(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("PostgreSQL advisory lock %d in database %q", pgOwnerLockKey, cfg.Database)
}

// Acquire takes the advisory lock without waiting, or fails with a *LeaseHeldError
// naming the holder.
func (l PGLeaser) Acquire(ctx context.Context, me Owner) (Lease, error) {
	cfg, err := pgConfig(l.DSN)
	if err != nil {
		return nil, err
	}
	red := RedactDSN(l.DSN)
	if me.Started.IsZero() {
		me.Started = time.Now().UTC()
	}
	if cfg.RuntimeParams == nil {
		cfg.RuntimeParams = map[string]string{}
	}
	cfg.RuntimeParams["application_name"] = ownerAppName(me)
	c, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("store %s: connect for its lock (%s): %w; check MOSAIC_DB and that the server runs",
			red, pgWhere(cfg), redactErr(err, l.DSN))
	}
	fail := func(err error) (Lease, error) {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.Close(cctx)
		return nil, err
	}
	var got bool
	if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, pgOwnerLockKey).Scan(&got); err != nil {
		return fail(fmt.Errorf("store %s: take its lock: %w", red, redactErr(err, l.DSN)))
	}
	if !got {
		return fail(&LeaseHeldError{Store: red, Lock: pgLockName(cfg), Holder: pgHolder(ctx, c)})
	}
	var gen int64
	if err := c.QueryRow(ctx, `SELECT txid_current()`).Scan(&gen); err != nil {
		return fail(fmt.Errorf("store %s: read the lease generation: %w", red, redactErr(err, l.DSN)))
	}
	me.Generation = uint64(gen)
	return &pgLease{c: c, me: me, store: red}, nil
}

// pgHolder names the session holding the owner lock (zero Owner if it cannot be read,
// e.g. without the right to see other sessions).
func pgHolder(ctx context.Context, c *pgx.Conn) Owner {
	var app, client string
	var started time.Time
	var pid int
	err := c.QueryRow(ctx, `SELECT COALESCE(a.application_name, ''), COALESCE(host(a.client_addr), ''), a.backend_start, a.pid
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 1
		LIMIT 1`, pgOwnerClassID, pgOwnerObjID).Scan(&app, &client, &started, &pid)
	if err != nil {
		return Owner{}
	}
	o, ok := parseOwnerAppName(app)
	if !ok {
		// Not a Mosaic core's connection name: say what the server knows.
		o = Owner{Host: client}
	}
	if o.Host == "" {
		o.Host = client
	}
	o.Started = started.UTC()
	return o
}

// maxAppName is PostgreSQL's limit on application_name (NAMEDATALEN-1 bytes).
const maxAppName = 63

// ownerAppName encodes an owner in a connection's application_name:
// "mosaic pid=123 addr=127.0.0.1:8642 host=h", cut at whole fields to 63 bytes.
func ownerAppName(o Owner) string {
	s := fmt.Sprintf("mosaic pid=%d", o.PID)
	for _, f := range []string{"addr=" + o.Addr, "host=" + o.Host} {
		if strings.HasSuffix(f, "=") || strings.ContainsAny(f, " \t\r\n") {
			continue
		}
		if len(s)+1+len(f) > maxAppName {
			break
		}
		s += " " + f
	}
	// PostgreSQL replaces non-ASCII bytes in application_name with '?'.
	return s
}

// parseOwnerAppName reads what ownerAppName wrote (from the server, so any text):
// ok is false unless it is a "mosaic pid=N ..." name with a positive PID.
func parseOwnerAppName(s string) (Owner, bool) {
	fields := strings.Fields(s)
	if len(fields) < 2 || fields[0] != "mosaic" || len(s) > maxAppName {
		return Owner{}, false
	}
	var o Owner
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return Owner{}, false
		}
		switch k {
		case "pid":
			n, err := parsePID(v)
			if err != nil {
				return Owner{}, false
			}
			o.PID = n
		case "addr":
			o.Addr = v
		case "host":
			o.Host = v
		}
	}
	if o.PID <= 0 {
		return Owner{}, false
	}
	return o, true
}

func parsePID(v string) (int, error) {
	if v == "" || len(v) > 10 {
		return 0, errors.New("bad pid")
	}
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, errors.New("bad pid")
		}
		n = n*10 + int(c-'0')
	}
	return n, nil
}

type pgLease struct {
	store string // redacted DSN

	mu sync.Mutex
	c  *pgx.Conn // nil once released
	me Owner
}

func (l *pgLease) Owner() Owner {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.me
}

// Renew confirms the lease connection still holds the lock: when the connection was
// lost (server restart, network) the server released it and another core may own
// the store now.
func (l *pgLease) Renew(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		return fmt.Errorf("%w: %w", ErrLeaseLost, ErrLeaseReleased)
	}
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var held bool
	err := l.c.QueryRow(rctx, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted
		AND pid = pg_backend_pid() AND classid = $1 AND objid = $2 AND objsubid = 1)`,
		pgOwnerClassID, pgOwnerObjID).Scan(&held)
	if err != nil {
		return fmt.Errorf("%w: store %s: its lock connection failed: %v; stop this core: another one may own the store now", ErrLeaseLost, l.store, err)
	}
	if !held {
		return fmt.Errorf("%w: store %s: its advisory lock is no longer held; stop this core: another one may own the store now", ErrLeaseLost, l.store)
	}
	return nil
}

// Release closes the lock connection, which releases the advisory lock (the server
// drops a session's locks when it ends, even if the Terminate message is lost). Idempotent.
func (l *pgLease) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := l.c.Close(ctx) // ending the session releases its advisory locks
	l.c = nil
	if err != nil {
		return fmt.Errorf("store %s: release its lock: %w", l.store, err)
	}
	return nil
}
