//go:build unix

package store

import (
	"context"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/store/pgtest"
	"github.com/mosaic-hpc/mosaic/internal/testproc"
)

// Tests of what only the PostgreSQL backend has: migrations under an advisory lock,
// the advisory-lock lease, DSN redaction and connection errors.

// TestPGMigrationsOnceUnderConcurrentOpens: several stores opening one fresh database
// at the same moment (replicas starting together) all succeed, and each migration is
// applied and recorded exactly once.
func TestPGMigrationsOnceUnderConcurrentOpens(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const n = 4
	var wg sync.WaitGroup
	start := make(chan struct{})
	stores := make([]*Store, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			stores[i], errs[i] = Open(ctx, db)
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d of %d at once: %v", i+1, n, err)
		}
		defer stores[i].Close()
	}
	ms, err := migrationFiles()
	if err != nil {
		t.Fatal(err)
	}
	rows, err := stores[0].db.QueryContext(ctx, `SELECT version, COUNT(*) FROM schema_migrations GROUP BY version ORDER BY version`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []int
	for rows.Next() {
		var v, c int
		if err := rows.Scan(&v, &c); err != nil {
			t.Fatal(err)
		}
		if c != 1 {
			t.Errorf("migration %d recorded %d times", v, c)
		}
		got = append(got, v)
	}
	if len(got) != len(ms) || got[len(got)-1] != ms[len(ms)-1].v {
		t.Fatalf("applied %v, want the %d embedded migrations", got, len(ms))
	}
	for _, s := range stores {
		if v, err := s.SchemaVersion(ctx); err != nil || v != ms[len(ms)-1].v {
			t.Fatalf("schema version %d %v", v, err)
		}
	}
}

// TestPGLeaseSingleOwner: the advisory lock admits one owner; a second is refused with
// a *LeaseHeldError naming the first (PID, address, host), its Store redacted; after
// Release the next owner gets it with a larger generation; a lease whose session the
// server ended reports ErrLeaseLost.
func TestPGLeaseSingleOwner(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	l1, err := NewLeaser(db).Acquire(ctx, Owner{PID: os.Getpid(), Addr: "127.0.0.1:8642", Host: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := NewLeaser(db).(PGLeaser); !ok {
		t.Fatalf("NewLeaser(%s) is not a PGLeaser", RedactDSN(db))
	}
	_, err = PGLeaser{DSN: db}.Acquire(ctx, Owner{PID: 99999, Addr: "127.0.0.1:9999"})
	var held *LeaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("second acquire: %v, want a *LeaseHeldError", err)
	}
	if held.Holder.PID != os.Getpid() || held.Holder.Addr != "127.0.0.1:8642" || held.Holder.Host != "h1" || held.Holder.Started.IsZero() {
		t.Fatalf("holder %+v, want our pid, address and host", held.Holder)
	}
	msg := err.Error()
	for _, want := range []string{strconv.Itoa(os.Getpid()), "127.0.0.1:8642", "advisory lock", "MOSAIC_DB"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	assertNoPassword(t, db, msg)
	if err := l1.Renew(ctx); err != nil {
		t.Fatalf("renew of a held lease: %v", err)
	}
	g1 := l1.Owner().Generation
	if err := l1.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l1.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if err := l1.Renew(ctx); !errors.Is(err, ErrLeaseLost) || !errors.Is(err, ErrLeaseReleased) {
		t.Fatalf("renew after release: %v", err)
	}
	l2, err := NewLeaser(db).Acquire(ctx, Owner{PID: os.Getpid(), Host: "h2"})
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	defer l2.Release()
	if g2 := l2.Owner().Generation; g2 <= g1 {
		t.Fatalf("generation %d after %d: the fencing token must grow", g2, g1)
	}
	// The server ends the lease's session (restart, network, an administrator):
	// the lock is gone with it and Renew says so.
	terminateLeaseSessions(t, db)
	if err := l2.Renew(ctx); !errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrLeaseReleased) {
		t.Fatalf("renew after the session ended: %v, want ErrLeaseLost", err)
	}
}

// terminateLeaseSessions ends the sessions holding the owner lock of db.
func terminateLeaseSessions(t *testing.T, db string) {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var n int
	if err := c.QueryRow(ctx, `SELECT COUNT(pg_terminate_backend(pid)) FROM pg_locks
		WHERE locktype = 'advisory' AND classid = $1 AND objid = $2 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
		pgOwnerClassID, pgOwnerObjID).Scan(&n); err != nil || n != 1 {
		t.Fatalf("terminate the lease session: %d %v", n, err)
	}
}

// TestPGLeaseKill9: a core killed with -9 holds no lock: the server drops its session
// and the next core takes the store.
func TestPGLeaseKill9(t *testing.T) {
	db := pgtest.New(t)
	cmd, _ := testproc.Start(t, "TestLeaseHelperProcess", []string{"MOSAIC_LEASE_HELPER_DB=" + db}, "locked")
	ctx := context.Background()
	_, err := PGLeaser{DSN: db}.Acquire(ctx, Owner{PID: os.Getpid()})
	var held *LeaseHeldError
	if !errors.As(err, &held) || held.Holder.PID != cmd.Process.Pid || held.Holder.Host != "helper" {
		t.Fatalf("acquire while another process holds it: %v (holder %+v), want the helper pid %d", err, held, cmd.Process.Pid)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The kernel closes the dead process's socket; the server notices at once on
	// loopback, but give it a bounded moment.
	deadline := time.Now().Add(10 * time.Second)
	for {
		l, err := PGLeaser{DSN: db}.Acquire(ctx, Owner{PID: os.Getpid()})
		if err == nil {
			l.Release()
			return
		}
		if !errors.Is(err, ErrLeaseHeld) || time.Now().After(deadline) {
			t.Fatalf("acquire after the holder was killed: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// assertNoPassword fails when text holds the password of dsn.
func assertNoPassword(t *testing.T, dsn, text string) {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if p, ok := u.User.Password(); ok && strings.Contains(text, p) {
		t.Fatalf("the DSN's password is in %q", text)
	}
}

// withPassword is db with another password.
func withPassword(t *testing.T, db, pw string) string {
	t.Helper()
	u, err := url.Parse(db)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), pw)
	return u.String()
}

// TestPGDSNPasswordRedacted: a password in MOSAIC_DB never reaches an error or the
// store's Path, whether the server refuses it or the URL does not parse.
func TestPGDSNPasswordRedacted(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	const secret = "Sup3r-Secret-pw"
	wrong := withPassword(t, db, secret)
	_, err := Open(ctx, wrong)
	if err == nil {
		t.Fatal("a wrong password must be refused")
	}
	for _, e := range []error{err, func() error { _, err := PGLeaser{DSN: wrong}.Acquire(ctx, Owner{PID: 1}); return err }()} {
		if e == nil || strings.Contains(e.Error(), secret) {
			t.Fatalf("error shows the password: %v", e)
		}
		if !strings.Contains(e.Error(), "xxxxx") || !strings.Contains(e.Error(), "password authentication failed") {
			t.Errorf("error %q should show the redacted URL and the server's reason", e)
		}
	}
	// A password given as a parameter, and URLs that do not parse.
	for _, dsn := range []string{
		strings.Replace(db, "?", "?password="+secret+"&", 1),
		"postgres://mosaic:" + secret + "@127.0.0.1:notaport/db",
		"postgres://mosaic:" + secret + "@[::1/db",
		"postgresql://mosaic:" + secret + "@127.0.0.1:55432/db?sslmode=bogus",
	} {
		_, err := Open(ctx, dsn)
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Errorf("Open(<dsn with password>): error %v shows the password (or none)", err)
		}
		if red := RedactDSN(dsn); strings.Contains(red, secret) {
			t.Errorf("RedactDSN kept the password: %s", red)
		}
	}
	s := openT(t, db)
	assertNoPassword(t, db, s.Path())
	if !strings.Contains(s.Path(), "xxxxx") || s.Backend() != "postgres" {
		t.Fatalf("path %q backend %q", s.Path(), s.Backend())
	}
}

// TestPGBadDSN: a server that is not there, a database that does not exist and a
// URL that does not parse each fail fast with an error saying what to check.
func TestPGBadDSN(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	u, _ := url.Parse(db)
	noServer := *u
	noServer.Host = "127.0.0.1:1"
	noDB := *u
	noDB.Path = "/mosaic_no_such_database"
	for _, c := range []struct {
		name, dsn string
		want      []string
	}{
		{"no server", noServer.String(), []string{"cannot connect to PostgreSQL", "127.0.0.1:1", "check that the server runs"}},
		{"no database", noDB.String(), []string{"cannot connect to PostgreSQL", "mosaic_no_such_database", "does not exist"}},
		{"not a URL", "postgres://u@127.0.0.1:55432/db?connect_timeout=x", []string{"not a valid PostgreSQL URL", "MOSAIC_DB"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			s, err := Open(ctx, c.dsn)
			if err == nil {
				s.Close()
				t.Fatal("want an error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if d := time.Since(start); d > 15*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// TestPGForeignDatabaseRefused: a database holding another program's tables is not
// migrated into.
func TestPGForeignDatabaseRefused(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Exec(ctx, `CREATE TABLE invoices (id BIGINT PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	c.Close(ctx)
	if s, err := Open(ctx, db); err == nil || !strings.Contains(err.Error(), "another program") {
		if s != nil {
			s.Close()
		}
		t.Fatalf("open over a foreign database: %v", err)
	}
}

func TestRedactDSN(t *testing.T) {
	const hidden = "postgres://(URL not shown: it does not parse cleanly and may hold a password)"
	for _, c := range []struct{ in, want string }{
		{"postgres://u:pw@h:5432/db", "postgres://u:xxxxx@h:5432/db"},
		{"postgresql://u:pw@h/db?sslmode=require", "postgresql://u:xxxxx@h/db?sslmode=require"},
		{"postgres://u@h/db?password=pw&sslmode=disable", "postgres://u@h/db?password=xxxxx&sslmode=disable"},
		{"postgres://u@h/db?sslmode=disable&PassWord=pw", "postgres://u@h/db?sslmode=disable&PassWord=xxxxx"},
		{"postgres://u@h/db?password=p%zzw", "postgres://u@h/db?password=xxxxx"},  // an invalid escape
		{"postgres://u@h/db?pass%77ord=pw", "postgres://u@h/db?pass%77ord=xxxxx"}, // an escaped key
		{"postgres://u:p%40ss@h/db", "postgres://u:xxxxx@h/db"},                   // an escaped '@'
		{"postgres://u:p@ss@h/db", "postgres://u:xxxxx@h/db"},                     // an unescaped '@': the last one ends it
		{"postgres://h/db", "postgres://h/db"},
		{"POSTGRES://u:pw@h/db", "postgres://u:xxxxx@h/db"},
		{"postgres://u:pw@[::1/db", hidden},                   // does not parse
		{"postgres://u:12#34@h/db", hidden},                   // '#' in the password: read as a fragment
		{"postgres://u:12/34@h/db", hidden},                   // '/' in the password: read as the path
		{"postgres://u:12?34@h/db", hidden},                   // '?' in the password: read as the query
		{"postgres://u:pw@h/db?application_name=a@b", hidden}, // ambiguous '@'
		{"/var/lib/mosaic/mosaic.db", "/var/lib/mosaic/mosaic.db"},
		{":memory:", ":memory:"},
	} {
		if got := RedactDSN(c.in); got != c.want {
			t.Errorf("RedactDSN(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzRedactDSN(f *testing.F) {
	f.Add("u", "pw", "h:5432/db?sslmode=disable")
	f.Add("u", "p@ss:w/rd", "h/db")
	f.Add("", "", "[::1/db")
	f.Add("0", "0@0#", "0")
	f.Add("u", "12#3456", "h/db")
	f.Add("u", "sec%zzret", "h/db")
	f.Fuzz(func(t *testing.T, user, pw, rest string) {
		dsns := []string{
			"postgres://" + url.UserPassword(user, pw).String() + "@" + rest,
			"postgres://" + user + ":" + pw + "@" + rest,
			"postgres://" + user + "@" + rest + "?a=b&password=" + url.QueryEscape(pw),
		}
		if !strings.Contains(pw, "&") { // an unescaped & starts the next parameter (as for pgx)
			dsns = append(dsns, "postgres://"+user+"@"+rest+"?password="+pw)
		}
		for _, dsn := range dsns {
			red := RedactDSN(dsn)
			// What is shown never carries a password: parsed again, any password
			// (user info or parameter) is xxxxx.
			if u, err := url.Parse(red); err == nil {
				if p, ok := u.User.Password(); ok && p != "xxxxx" {
					t.Fatalf("RedactDSN(%q) = %q shows the password %q", dsn, red, p)
				}
				if _, qs := redactQuery(u.RawQuery); len(qs) > 0 && slices.ContainsFunc(qs, func(q string) bool { return q != "xxxxx" }) {
					t.Fatalf("RedactDSN(%q) = %q shows a password parameter %q", dsn, red, qs)
				}
			}
			// A password that is not also other text of the URL appears nowhere.
			other := "postgres://" + user + "@" + rest + "?a=b&password=xxxxx(URL not shown: it does not parse cleanly and may hold a password)"
			if len(pw) < 4 || strings.Contains(other, pw) || strings.Contains(other, url.QueryEscape(pw)) || strings.Contains(pw, "\x00") {
				continue
			}
			// (The mark itself is taken out first: "xxx&" is in "xxxxx&" but shows nothing.)
			shows := func(text string) bool { return strings.Contains(strings.ReplaceAll(text, "xxxxx", "\x00"), pw) }
			if shows(red) {
				t.Fatalf("RedactDSN(%q) = %q shows %q", dsn, red, pw)
			}
			// The driver's error may quote the URL and the password it parsed.
			msg := "cannot parse `" + dsn + "`"
			if u, err := url.Parse(dsn); err == nil {
				if p, ok := u.User.Password(); ok {
					msg += ": password " + p
				}
			}
			if e := redactErr(errors.New(msg), dsn); shows(e.Error()) {
				t.Fatalf("redactErr shows %q: %s", pw, e)
			}
		}
	})
}

func TestOwnerAppName(t *testing.T) {
	for _, c := range []struct {
		o    Owner
		want string
	}{
		{Owner{PID: 12, Addr: "127.0.0.1:8642", Host: "login1"}, "mosaic pid=12 addr=127.0.0.1:8642 host=login1"},
		{Owner{PID: 12}, "mosaic pid=12"},
		{Owner{PID: 12, Host: "a b"}, "mosaic pid=12"},
		{Owner{PID: 12, Addr: "127.0.0.1:8642", Host: strings.Repeat("h", 60)}, "mosaic pid=12 addr=127.0.0.1:8642"},
	} {
		got := ownerAppName(c.o)
		if got != c.want || len(got) > maxAppName {
			t.Errorf("ownerAppName(%+v) = %q, want %q", c.o, got, c.want)
		}
	}
	for _, c := range []struct {
		in string
		ok bool
		o  Owner
	}{
		{"mosaic pid=12 addr=127.0.0.1:8642 host=login1", true, Owner{PID: 12, Addr: "127.0.0.1:8642", Host: "login1"}},
		{"mosaic pid=12", true, Owner{PID: 12}},
		{"mosaic pid=12 extra=1", true, Owner{PID: 12}},
		{"", false, Owner{}},
		{"psql", false, Owner{}},
		{"mosaic", false, Owner{}},
		{"mosaic pid=", false, Owner{}},
		{"mosaic pid=0", false, Owner{}},
		{"mosaic pid=-3", false, Owner{}},
		{"mosaic pid=12x", false, Owner{}},
		{"mosaic pid=99999999999", false, Owner{}},
		{"mosaic host=h", false, Owner{}},
		{"mosaic pid=1 junk", false, Owner{}},
		{"mosaic pid=1 host=" + strings.Repeat("h", 80), false, Owner{}},
	} {
		o, ok := parseOwnerAppName(c.in)
		if ok != c.ok || o != c.o {
			t.Errorf("parseOwnerAppName(%q) = %+v %v, want %+v %v", c.in, o, ok, c.o, c.ok)
		}
	}
}

func FuzzParseOwnerAppName(f *testing.F) {
	f.Add("mosaic pid=12 addr=127.0.0.1:8642 host=login1")
	f.Add("mosaic pid=")
	f.Add("mosaic pid=1 host=" + strings.Repeat("h", 50))
	f.Fuzz(func(t *testing.T, s string) {
		o, ok := parseOwnerAppName(s)
		if !ok {
			return
		}
		if o.PID <= 0 {
			t.Fatalf("accepted pid %d from %q", o.PID, s)
		}
		// What it read, written again, reads back the same.
		if o2, ok := parseOwnerAppName(ownerAppName(o)); !ok || o2.PID != o.PID {
			t.Fatalf("round trip of %+v: %+v %v", o, o2, ok)
		}
	})
}

// TestTestPostgresLoopbackOnly: the test PostgreSQL scripts/testpg/up.sh starts listens
// on 127.0.0.1 only and admits TCP connections from 127.0.0.1 only, with a password
// (its test password never leaves the machine's loopback).
func TestTestPostgresLoopbackOnly(t *testing.T) {
	admin := pgtest.Server(t)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	var listen string
	if err := c.QueryRow(ctx, `SHOW listen_addresses`).Scan(&listen); err != nil {
		t.Fatal(err)
	}
	if listen != "127.0.0.1" {
		t.Fatalf("listen_addresses = %q, want 127.0.0.1 only", listen)
	}
	rows, err := c.Query(ctx, `SELECT type, COALESCE(address, ''), COALESCE(netmask, ''), COALESCE(auth_method, ''), COALESCE(error, '') FROM pg_hba_file_rules`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var typ, addr, mask, method, rerr string
		if err := rows.Scan(&typ, &addr, &mask, &method, &rerr); err != nil {
			t.Fatal(err)
		}
		n++
		switch {
		case rerr != "":
			t.Errorf("pg_hba.conf rule with an error: %s", rerr)
		case typ == "local" && method != "peer" && method != "scram-sha-256":
			t.Errorf("pg_hba.conf admits local sockets by %s; want peer or scram-sha-256", method)
		case typ == "local":
		case addr != "127.0.0.1" || mask != "255.255.255.255" || method == "trust":
			t.Errorf("pg_hba.conf admits %s %s/%s by %s; want 127.0.0.1/32 with a password only", typ, addr, mask, method)
		}
	}
	if err := rows.Err(); err != nil || n == 0 {
		t.Fatalf("pg_hba rules: %d %v", n, err)
	}
	var perms string
	if err := c.QueryRow(ctx, `SHOW unix_socket_permissions`).Scan(&perms); err != nil || perms != "0700" {
		t.Errorf("unix_socket_permissions = %q, %v; want 0700 (the owner's alone)", perms, err)
	}
	// The directory up.sh made (when the URL came from its env file): the owner's
	// alone, with the env file (it holds the password) 0600.
	if os.Getenv("MOSAIC_TEST_POSTGRES") == "" && os.Getenv("MOSAIC_TEST_POSTGRES_ENV") == "" {
		dir := filepath.Dir(pgtest.DefaultEnvFile)
		for p, want := range map[string]os.FileMode{dir: os.ModeDir | 0o700, pgtest.DefaultEnvFile: 0o600} {
			if fi, err := os.Lstat(p); err != nil || fi.Mode() != want {
				t.Errorf("%s: %v %v; want mode %v", p, fi.Mode(), err, want)
			}
		}
	}
}

// TestTestPostgresUpRefusesUnsafeDir: scripts/testpg/up.sh refuses a data directory
// that is a symbolic link (another user's plant in /tmp) or is owned by another user,
// before starting anything.
func TestTestPostgresUpRefusesUnsafeDir(t *testing.T) {
	script, err := filepath.Abs("../../scripts/testpg/up.sh")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/usr/lib/postgresql"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("PostgreSQL is not installed; CI installs it (scripts/test.sh)")
		}
		t.Skip("PostgreSQL is not installed")
	}
	base := t.TempDir()
	real := filepath.Join(base, "real")
	if err := os.Mkdir(real, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	cases := map[string]string{link: "symbolic link"}
	if os.Getuid() == 0 {
		// As root the instance runs as postgres: a root-owned directory is not its.
		cases[real] = "belongs to root, not postgres"
	} else {
		other := "/" // a directory of another user (root)
		cases[other] = "MOSAIC_PG_DIR"
	}
	for dir, want := range cases {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		cmd := exec.CommandContext(ctx, "bash", script)
		cmd.Env = append(os.Environ(), "MOSAIC_PG_DIR="+dir, "MOSAIC_PG_PORT=55499")
		out, err := cmd.CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), want) {
			t.Errorf("up.sh with MOSAIC_PG_DIR=%s: %v\n%s\nwant a refusal saying %q", dir, err, out, want)
		}
		if ents, _ := os.ReadDir(real); len(ents) != 0 {
			t.Fatalf("up.sh wrote into %s: %v", real, ents)
		}
	}
}

// TestOpenKeywordDSNRefused: a libpq keyword/value string is refused by Open and by
// the file lease, never used as an SQLite file name, and its password is not shown.
func TestOpenKeywordDSNRefused(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	const dsn = "host=127.0.0.1 user=mosaic password=kw-s3cret dbname=mosaic"
	s, err := Open(context.Background(), dsn)
	if err == nil {
		s.Close()
		t.Fatal("a keyword/value DSN was opened")
	}
	if !strings.Contains(err.Error(), "postgres://") || strings.Contains(err.Error(), "kw-s3cret") {
		t.Errorf("error %q: want the URL form, never the password", err)
	}
	if _, err := NewLeaser(dsn).Acquire(context.Background(), Owner{PID: 1}); err == nil || strings.Contains(err.Error(), "kw-s3cret") {
		t.Errorf("lease: %v", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("files were created: %v", ents)
	}
}

// TestPGUpperCaseScheme: POSTGRES:// (any case) opens the database (pgx reads only a
// lower-case scheme and would parse the rest as keyword/value pairs).
func TestPGUpperCaseScheme(t *testing.T) {
	db := pgtest.New(t)
	scheme, rest, _ := strings.Cut(db, "://")
	up := strings.ToUpper(scheme) + "://" + rest
	s, err := Open(context.Background(), up)
	if err != nil {
		t.Fatalf("Open(%s): %v", RedactDSN(up), err)
	}
	defer s.Close()
	if s.Backend() != "postgres" {
		t.Fatalf("backend %s", s.Backend())
	}
	l, err := NewLeaser(up).Acquire(context.Background(), Owner{PID: os.Getpid()})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	l.Release()
}

// TestPGSessionBounds: every connection of a PostgreSQL store (the pool's and the
// lease's) has server-side keepalive, tcp_user_timeout and
// idle_in_transaction_session_timeout set, so a dead peer or a forgotten transaction
// does not hold a lock for hours.
func TestPGSessionBounds(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	s := openT(t, db)
	want := map[string]string{"tcp_keepalives_idle": "30", "tcp_keepalives_interval": "10", "tcp_keepalives_count": "3",
		"tcp_user_timeout": "60000", "idle_in_transaction_session_timeout": "1min"}
	for k, v := range want {
		var got string
		if err := s.db.QueryRowContext(ctx, `SELECT current_setting(?)`, k).Scan(&got); err != nil || got != v {
			t.Errorf("pool %s = %q, %v; want %q", k, got, err, v)
		}
	}
	l, err := NewLeaser(db).Acquire(ctx, Owner{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	c := l.(*pgLease).c
	for k, v := range want {
		var got string
		if err := c.QueryRow(ctx, `SELECT current_setting($1)`, k).Scan(&got); err != nil || got != v {
			t.Errorf("lease %s = %q, %v; want %q", k, got, err, v)
		}
	}
	// The URL's own value wins.
	s2 := openT(t, db+"&tcp_keepalives_idle=45")
	var got string
	if err := s2.db.QueryRowContext(ctx, `SELECT current_setting('tcp_keepalives_idle')`).Scan(&got); err != nil || got != "45" {
		t.Errorf("URL's tcp_keepalives_idle: %q, %v", got, err)
	}
}

// TestPGWriterLockTimeout: a write that waits for the writer lock longer than
// pgWriterLockTimeout fails with an error saying another writer holds the store,
// instead of waiting for as long as that writer lives.
func TestPGWriterLockTimeout(t *testing.T) {
	db := pgtest.New(t)
	ctx := context.Background()
	s := openT(t, db)
	old := pgWriterLockTimeout
	pgWriterLockTimeout = 300 * time.Millisecond
	defer func() { pgWriterLockTimeout = old }()
	holder, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	htx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := htx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, pgWriterLockKey); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err = s.AppendEvents(wctx, model.Event{Kind: "note", Message: "m", Actor: model.ActorSystem})
	if err == nil || !strings.Contains(err.Error(), "another writer has held the store's writer lock") || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("write under a held writer lock: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	htx.Rollback(ctx)
	if _, err := s.AppendEvents(ctx, model.Event{Kind: "note", Message: "m", Actor: model.ActorSystem}); err != nil {
		t.Fatalf("after the holder ended: %v", err)
	}
}

// TestSameStore: PostgreSQL URLs are the same store when host, port, database and
// user agree (a redacted URL matches the one with the password); files by identity.
func TestSameStore(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "m.db")
	if err := os.WriteFile(f, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	const pg = "postgres://mosaic:s3cret@db.example.org:5433/mosaic?sslmode=require"
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{pg, "postgres://mosaic:xxxxx@db.example.org:5433/mosaic?sslmode=require", true},
		{pg, "POSTGRESQL://mosaic@db.example.org:5433/mosaic", true},
		{pg, "postgres://mosaic:s3cret@db.example.org:5434/mosaic", false},
		{pg, "postgres://mosaic:s3cret@db2.example.org:5433/mosaic", false},
		{pg, "postgres://mosaic:s3cret@db.example.org:5433/other", false},
		{pg, "postgres://alice:s3cret@db.example.org:5433/mosaic", false},
		{pg, "postgres://(URL not shown: it does not parse cleanly and may hold a password)", false},
		{pg, f, false},
		{f, pg, false},
		{f, filepath.Join(dir, ".", "m.db"), true},
		{f, filepath.Join(dir, "other.db"), false},
		{"", "", false},
	} {
		if got := SameStore(c.a, c.b); got != c.want {
			t.Errorf("SameStore(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}
