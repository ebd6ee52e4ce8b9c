package exchange

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestServeStandalone(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	tok, err := srv.IssueToken(context.Background(), "r")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	url := "http://" + ln.Addr().String()
	a := ent("a", RoleAgent)
	reg := `{"mailbox":` + jsonString(a.Encode()) + `}`
	if code, body, err := rawCall(http.DefaultClient, "POST", url+"/mailbox", tok, []byte(reg)); err != nil || code != 200 {
		t.Fatalf("register: %d %s %v", code, body, err)
	}
	// A listen stream without timeout is open when the server stops.
	stream := make(chan error, 1)
	go func() {
		_, _, err := rawCall(http.DefaultClient, "GET", url+"/mailbox/listen", tok, []byte(reg))
		stream <- err
	}()
	time.Sleep(150 * time.Millisecond)
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not stop")
	}
	select {
	case <-stream:
	case <-time.After(5 * time.Second):
		t.Fatal("listen stream not released at shutdown")
	}
	if _, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("listener still open: %v", err)
	}
}

func jsonString(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
