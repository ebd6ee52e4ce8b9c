//go:build unix

package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/testproc"
)

// SQLite only: these tests are of FileLeaser (flock(2) on <db>.lock). The PostgreSQL
// store's advisory-lock lease has its own (TestPGLease* in postgres_test.go).

func TestLeaseSecondAcquirerInProcessRefused(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mosaic.db")
	ctx := context.Background()
	l1, err := FileLeaser{DBPath: db}.Acquire(ctx, Owner{PID: os.Getpid(), Addr: "127.0.0.1:8642", Host: "h1"})
	if err != nil {
		t.Fatal(err)
	}
	if g := l1.Owner().Generation; g != 1 {
		t.Fatalf("first generation %d, want 1", g)
	}
	// A second open file description of the same lock file must not get the lock.
	_, err = FileLeaser{DBPath: db}.Acquire(ctx, Owner{PID: 99999, Addr: "127.0.0.1:9999"})
	var held *LeaseHeldError
	if !errors.As(err, &held) || !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("second acquire: %v, want a *LeaseHeldError", err)
	}
	if held.Holder.PID != os.Getpid() || held.Holder.Addr != "127.0.0.1:8642" {
		t.Fatalf("holder %+v, want our pid and address", held.Holder)
	}
	msg := err.Error()
	for _, want := range []string{fmt.Sprint(os.Getpid()), "127.0.0.1:8642", "MOSAIC_DB", db} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not mention %q", msg, want)
		}
	}
	if err := l1.Renew(ctx); err != nil {
		t.Fatalf("renew of a held lease: %v", err)
	}
	if err := l1.Release(); err != nil {
		t.Fatal(err)
	}
	if err := l1.Release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
	if err := l1.Renew(ctx); !errors.Is(err, ErrLeaseLost) || !errors.Is(err, ErrLeaseReleased) {
		t.Fatalf("renew after release: %v, want ErrLeaseLost and ErrLeaseReleased", err)
	}
	l2, err := FileLeaser{DBPath: db}.Acquire(ctx, Owner{PID: os.Getpid()})
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	defer l2.Release()
	if g := l2.Owner().Generation; g != 2 {
		t.Fatalf("generation after release and acquire %d, want 2 (fencing token grows)", g)
	}
}

// TestLeaseHelperProcess is the subprocess of TestLeaseAcrossProcessesAndKill9 and
// TestPGLeaseKill9: it takes the lease of the store (a file or a PostgreSQL URL), says
// so, and holds it until killed (bounded to a minute).
func TestLeaseHelperProcess(t *testing.T) {
	db := os.Getenv("MOSAIC_LEASE_HELPER_DB")
	if db == "" {
		t.Skip("helper process only")
	}
	l, err := NewLeaser(db).Acquire(context.Background(), Owner{PID: os.Getpid(), Addr: "127.0.0.1:7777", Host: "helper"})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(3)
	}
	fmt.Printf("locked %d\n", l.Owner().Generation)
	time.Sleep(time.Minute)
	os.Exit(4)
}

func TestLeaseAcrossProcessesAndKill9(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mosaic.db")
	cmd, _ := testproc.Start(t, "TestLeaseHelperProcess", []string{"MOSAIC_LEASE_HELPER_DB=" + db}, "locked")

	ctx := context.Background()
	_, err := FileLeaser{DBPath: db}.Acquire(ctx, Owner{PID: os.Getpid()})
	var held *LeaseHeldError
	if !errors.As(err, &held) {
		t.Fatalf("acquire while another process holds it: %v", err)
	}
	if held.Holder.PID != cmd.Process.Pid || held.Holder.Addr != "127.0.0.1:7777" || held.Holder.Host != "helper" {
		t.Fatalf("holder %+v, want the helper (pid %d)", held.Holder, cmd.Process.Pid)
	}
	if !strings.Contains(err.Error(), strconv.Itoa(cmd.Process.Pid)) {
		t.Fatalf("error %q does not name the holder's pid", err)
	}

	// kill -9: the lock file stays behind with the dead owner's record, but the kernel
	// released the lock, so it does not block.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := os.Stat(LockPath(db)); err != nil {
		t.Fatalf("the stale lock file should still exist: %v", err)
	}
	l, err := FileLeaser{DBPath: db}.Acquire(ctx, Owner{PID: os.Getpid(), Addr: "127.0.0.1:1"})
	if err != nil {
		t.Fatalf("acquire after the holder was killed: %v", err)
	}
	defer l.Release()
	if g := l.Owner().Generation; g != 2 {
		t.Fatalf("generation %d after the killed holder's 1, want 2", g)
	}
}

func TestLeaseMalformedRecords(t *testing.T) {
	for _, tc := range []struct {
		name, content string
		wantGen       uint64
	}{
		{"empty", "", 1},
		{"garbage", "not json at all\x00\xff", 1},
		{"truncated", `{"pid":12,"generation":`, 1},
		{"wrong types", `{"pid":"x","generation":"y"}`, 1},
		{"huge", `{"pid":1,"generation":1,"addr":"` + strings.Repeat("a", 10000) + `"}`, 1},
		{"negative-looking", `{"pid":-5,"generation":0}`, 1},
		{"valid stale record", `{"pid":424242,"addr":"127.0.0.1:1","generation":41}`, 42},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "mosaic.db")
			if err := os.WriteFile(LockPath(db), []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			l, err := FileLeaser{DBPath: db}.Acquire(context.Background(), Owner{PID: os.Getpid(), Addr: "127.0.0.1:2"})
			if err != nil {
				t.Fatalf("a lock file nobody holds must not block: %v", err)
			}
			defer l.Release()
			if g := l.Owner().Generation; g != tc.wantGen {
				t.Fatalf("generation %d, want %d", g, tc.wantGen)
			}
			b, err := os.ReadFile(LockPath(db))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(b), fmt.Sprintf(`"pid":%d`, os.Getpid())) || len(b) > maxOwnerRecord {
				t.Fatalf("record after acquire: %q", b)
			}
		})
	}
}

func TestLeaseRenewNoticesReplacedLockFile(t *testing.T) {
	db := filepath.Join(t.TempDir(), "mosaic.db")
	ctx := context.Background()
	l, err := FileLeaser{DBPath: db}.Acquire(ctx, Owner{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	if err := os.Remove(LockPath(db)); err != nil {
		t.Fatal(err)
	}
	if err := l.Renew(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renew with the lock file removed: %v, want ErrLeaseLost", err)
	}
	// Someone else now locks a new file at the path: still lost for us.
	l2, err := FileLeaser{DBPath: db}.Acquire(ctx, Owner{PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	defer l2.Release()
	if err := l.Renew(ctx); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("renew with the lock file replaced: %v, want ErrLeaseLost", err)
	}
	if err := l2.Renew(ctx); err != nil {
		t.Fatalf("the new holder's renew: %v", err)
	}
}

func TestLeaseErrorMessage(t *testing.T) {
	e := &LeaseHeldError{Store: "/s/m.db", Lock: "/s/m.db.lock"}
	if s := e.Error(); !strings.Contains(s, "another process") || !strings.Contains(s, "MOSAIC_DB") {
		t.Fatalf("without a record: %q", s)
	}
	e.Holder = Owner{PID: 7, Addr: "127.0.0.1:8642", Host: "laptop", Started: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	want := "PID 7 (serving at 127.0.0.1:8642, on host laptop, since 2026-01-02T03:04:05Z)"
	if s := e.Error(); !strings.Contains(s, want) || !strings.Contains(s, "kill 7") {
		t.Fatalf("error %q, want it to contain %q and how to stop it", s, want)
	}
}
