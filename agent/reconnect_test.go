package agent_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/exchange/redistest"
)

// exchangeOn serves a Redis-backed exchange on addr until stop is called.
func exchangeOn(t *testing.T, addr, redisURL string) (srv *exchange.Server, stop func()) {
	t.Helper()
	be, err := exchange.NewRedis(context.Background(), redisURL, "reconnect-test")
	if err != nil {
		t.Fatal(err)
	}
	srv = exchange.NewServer(exchange.Config{Backend: be, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PingInterval: 50 * time.Millisecond})
	var l net.Listener
	for range 50 { // the previous server's port may take a moment to be free again
		if l, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(l)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			hs.Shutdown(ctx)
			hs.Close() // the open listen streams too
			srv.Close()
		})
	}
	t.Cleanup(stop)
	return srv, stop
}

// TestListenAndSendSurviveAnExchangeRestart: the exchange (Redis-backed) stops for a
// second and comes back on the same address. The listening agent's stream reconnects
// with backoff, re-checks its mailbox and delivers what was sent after the restart; a
// send made while the exchange is down waits for it; onReconnect says how long the
// exchange was away. No message is lost. (Before, Listen returned on the first
// connection error and the agent kept running deaf.)
func TestListenAndSendSurviveAnExchangeRestart(t *testing.T) {
	redisURL := redistest.Start(t)
	addr := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	url := "http://" + addr
	srv, stop := exchangeOn(t, addr, redisURL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tok, err := srv.IssueToken(ctx, "run-r")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reconnects []time.Duration
	opts := []agent.Option{agent.WithRequestWindow(300 * time.Millisecond),
		agent.WithReconnect(30*time.Second, func(d time.Duration) { mu.Lock(); reconnects = append(reconnects, d); mu.Unlock() })}
	listener, err := agent.New(url, tok, opts...)
	if err != nil {
		t.Fatal(err)
	}
	sender, err := agent.New(url, tok, opts...)
	if err != nil {
		t.Fatal(err)
	}
	a, b := agent.AgentID("run-r", "a"), agent.AgentID("run-r", "b")
	for _, id := range []agent.EntityID{a, b} {
		if err := listener.Register(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	got := make(chan string, 10)
	done := make(chan error, 1)
	go func() {
		done <- listener.Listen(ctx, b, 0, func(m agent.Message) error {
			txt, _ := m.Text()
			got <- txt
			if txt == "after" {
				return errors.New("done")
			}
			return nil
		})
	}()
	recv := func(want string) {
		t.Helper()
		select {
		case txt := <-got:
			if txt != want {
				t.Fatalf("received %q, want %q", txt, want)
			}
		case err := <-done:
			// fn hands over "after" and then ends Listen: both channels may be ready at
			// once, and select picks either. A message already handed over counts.
			select {
			case txt := <-got:
				if txt != want {
					t.Fatalf("received %q, want %q", txt, want)
				}
				done <- err // for the caller's own check of how Listen ended
				return
			default:
			}
			t.Fatalf("listen ended before %q: %v", want, err)
		case <-time.After(20 * time.Second):
			t.Fatalf("%q never arrived", want)
		}
	}
	if err := sender.Send(ctx, agent.NewText(a, b, "before")); err != nil {
		t.Fatal(err)
	}
	recv("before")

	stop()
	sent := make(chan error, 1)
	go func() { sent <- sender.Send(ctx, agent.NewText(a, b, "after")) }() // while the exchange is down
	time.Sleep(time.Second)
	exchangeOn(t, addr, redisURL) // the same address and state

	if err := <-sent; err != nil {
		t.Fatalf("send across the restart: %v", err)
	}
	recv("after")
	if err := <-done; err == nil || err.Error() != "done" {
		t.Fatalf("listen ended with %v, want fn's own error", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reconnects) == 0 || reconnects[0] < 500*time.Millisecond {
		t.Errorf("onReconnect calls %v: want one saying the exchange was away about a second", reconnects)
	}
}

// TestReconnectGivesUp: an exchange that answered once and is then gone for good:
// Send and Listen return the connection error once the reconnect window has passed
// (bounded, not forever), and at once with reconnecting disabled. A client that never
// reached its exchange (a wrong URL, nothing started) fails at once too.
func TestReconnectGivesUp(t *testing.T) {
	redisURL := redistest.Start(t)
	addr := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	for _, window := range []time.Duration{0, 1500 * time.Millisecond} {
		srv, stop := exchangeOn(t, addr, redisURL)
		tok, err := srv.IssueToken(context.Background(), "r")
		if err != nil {
			t.Fatal(err)
		}
		c, err := agent.New("http://"+addr, tok, agent.WithReconnect(window, nil))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Status(context.Background(), agent.AgentID("r", "b")); err != nil {
			t.Fatal(err)
		}
		stop()
		start := time.Now()
		err = c.Send(context.Background(), agent.NewText(agent.AgentID("r", "a"), agent.AgentID("r", "b"), "x"))
		took := time.Since(start)
		if err == nil || took < window || took > window+5*time.Second {
			t.Errorf("window %s: send returned %v after %s", window, err, took)
		}
		start = time.Now()
		err = c.Listen(context.Background(), agent.AgentID("r", "b"), 0, func(agent.Message) error { return nil })
		if took := time.Since(start); err == nil || took < window || took > window+5*time.Second {
			t.Errorf("window %s: listen returned %v after %s", window, err, took)
		}
	}
	never, err := agent.New("http://"+fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t)), "tok")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := never.Send(context.Background(), agent.NewText(agent.AgentID("r", "a"), agent.AgentID("r", "b"), "x")); err == nil || time.Since(start) > 2*time.Second {
		t.Errorf("a client that never reached its exchange: %v after %s, want an error at once", err, time.Since(start))
	}
}

// TestListenReportsReconnectWhenTheStreamReopens: a listener whose exchange was away
// for about a second says so as soon as its stream is open again, with the outage's
// length — not when that reopened stream ends a request window later, with the
// window added (what it did before).
func TestListenReportsReconnectWhenTheStreamReopens(t *testing.T) {
	redisURL := redistest.Start(t)
	addr := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	srv, stop := exchangeOn(t, addr, redisURL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tok, err := srv.IssueToken(ctx, "run-l")
	if err != nil {
		t.Fatal(err)
	}
	reported := make(chan time.Duration, 4)
	cl, err := agent.New("http://"+addr, tok, agent.WithRequestWindow(20*time.Second),
		agent.WithReconnect(30*time.Second, func(d time.Duration) { reported <- d }))
	if err != nil {
		t.Fatal(err)
	}
	me := agent.AgentID("run-l", "a")
	if err := cl.Register(ctx, me); err != nil {
		t.Fatal(err)
	}
	lctx, stopListen := context.WithCancel(ctx)
	defer stopListen()
	done := make(chan error, 1)
	go func() { done <- cl.Listen(lctx, me, 0, func(agent.Message) error { return nil }) }()
	time.Sleep(300 * time.Millisecond) // the stream is open
	stop()
	time.Sleep(time.Second)
	exchangeOn(t, addr, redisURL)
	back := time.Now()
	select {
	case d := <-reported:
		if d < 500*time.Millisecond || d > 5*time.Second {
			t.Errorf("reconnected after %v: want about the one-second outage", d)
		}
		if late := time.Since(back); late > 10*time.Second {
			t.Errorf("reported %v after the exchange was back", late)
		}
	case err := <-done:
		t.Fatalf("listen ended: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("no reconnect reported while the reopened stream is open (it would be only when the 20 s stream ends)")
	}
	stopListen()
	<-done
}
