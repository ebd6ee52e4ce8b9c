// Package pgtest gives tests a real PostgreSQL database of their own, on the test
// instance scripts/testpg/up.sh starts (a private data directory, 127.0.0.1:55432).
// The server's URL comes from $MOSAIC_TEST_POSTGRES, or from the env file up.sh
// writes ($MOSAIC_TEST_POSTGRES_ENV, default /tmp/mosaic-pg/pg.env). Without either
// the test is skipped with a message saying how to start the server; under CI=true
// (where scripts/test.sh starts it) it fails instead.
package pgtest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultEnvFile is where scripts/testpg/up.sh writes MOSAIC_TEST_POSTGRES.
const DefaultEnvFile = "/tmp/mosaic-pg/pg.env"

// Server returns the test server's admin URL (its "postgres" database), skipping the
// test (failing under CI=true) when there is none.
func Server(tb testing.TB) string {
	tb.Helper()
	if u := ServerURL(); u != "" {
		return u
	}
	msg := "no test PostgreSQL: run scripts/testpg/up.sh (it writes " + envFile() +
		") or set MOSAIC_TEST_POSTGRES=postgres://USER:PASSWORD@127.0.0.1:PORT/postgres"
	if os.Getenv("CI") == "true" {
		tb.Fatal(msg)
	}
	tb.Skip(msg)
	return ""
}

// ServerURL is $MOSAIC_TEST_POSTGRES, else the value in the env file, else "".
func ServerURL() string {
	if u := os.Getenv("MOSAIC_TEST_POSTGRES"); u != "" {
		return u
	}
	f, err := os.Open(envFile())
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "MOSAIC_TEST_POSTGRES="); ok {
			return v
		}
	}
	return ""
}

func envFile() string {
	if p := os.Getenv("MOSAIC_TEST_POSTGRES_ENV"); p != "" {
		return p
	}
	return DefaultEnvFile
}

// New creates an empty database with a unique name for this test and returns its URL
// (the server's URL with the database replaced); it is dropped when the test ends.
func New(tb testing.TB) string {
	tb.Helper()
	admin := Server(tb)
	name := DBName(tb.Name())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Fatalf("pgtest: connect to the test PostgreSQL (is scripts/testpg/up.sh running?): %v", err)
	}
	defer c.Close(ctx)
	// template0 with the C collation: text sorts by bytes, as SQLite sorts it.
	if _, err := c.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()+
		` TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'`); err != nil {
		tb.Fatalf("pgtest: create database %s: %v", name, err)
	}
	tb.Cleanup(func() { Drop(tb, admin, name) })
	u, err := url.Parse(admin)
	if err != nil {
		tb.Fatalf("pgtest: MOSAIC_TEST_POSTGRES is not a URL: %v", err)
	}
	u.Path = "/" + name
	return u.String()
}

// Drop removes a test database, closing whatever is still connected to it.
func Drop(tb testing.TB, admin, name string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, admin)
	if err != nil {
		tb.Errorf("pgtest: drop %s: connect: %v", name, err)
		return
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
		tb.Errorf("pgtest: drop database %s: %v", name, err)
	}
}

// DBName is a unique database name for a test: mosaic_t_<test name, letters and
// digits>_<random>, within PostgreSQL's 63-byte identifier limit.
func DBName(test string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(test) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			if s := b.String(); s != "" && !strings.HasSuffix(s, "_") {
				b.WriteByte('_')
			}
		}
		if b.Len() >= 36 {
			break
		}
	}
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	return fmt.Sprintf("mosaic_t_%s_%s", strings.Trim(b.String(), "_"), hex.EncodeToString(rnd[:]))
}
