package agent_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/exchange/redistest"
)

// proxyMode is what tunnelProxy does with the connections it accepts.
type proxyMode int

const (
	// forward pipes the connection to the exchange, both ways.
	forward proxyMode = iota
	// swallow reads one request and closes the connection without an answer: an
	// ssh -R tunnel whose exchange is gone (sshd's listener on the login node still
	// accepts; the forwarded channel fails and sshd closes the connection).
	swallow
	// dropAnswer forwards one request to the exchange, reads its whole answer and
	// closes the connection without passing the answer on (the exchange did queue
	// the message); after drops such connections it forwards again.
	dropAnswer
)

// tunnelProxy is a TCP proxy on 127.0.0.1 in front of an exchange.
type tunnelProxy struct {
	t        *testing.T
	l        net.Listener
	upstream string
	mu       sync.Mutex
	mode     proxyMode
	drops    int
	conns    map[net.Conn]struct{}
	cut      atomic.Int64 // requests swallowed or answered into the void
}

func newTunnelProxy(t *testing.T, upstream string) *tunnelProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &tunnelProxy{t: t, l: l, upstream: upstream, conns: map[net.Conn]struct{}{}}
	t.Cleanup(func() { l.Close(); p.setMode(swallow, 0) })
	go p.serve()
	return p
}

func (p *tunnelProxy) url() string { return "http://" + p.l.Addr().String() }

// setMode switches the mode; leaving forward closes every open connection (the
// exchange behind the tunnel died and took its connections with it).
func (p *tunnelProxy) setMode(m proxyMode, drops int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode, p.drops = m, drops
	if m != forward {
		for c := range p.conns {
			c.Close()
		}
	}
}

func (p *tunnelProxy) track(c net.Conn, on bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if on {
		p.conns[c] = struct{}{}
	} else {
		delete(p.conns, c)
	}
}

func (p *tunnelProxy) serve() {
	for { // bounded: ends when the listener is closed at cleanup
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		p.mu.Unlock()
		p.track(c, true)
		go func() {
			defer p.track(c, false)
			defer c.Close()
			switch mode {
			case forward:
				p.pipe(c)
			case swallow:
				if _, _, err := readRequest(c); err == nil {
					p.cut.Add(1)
				}
			case dropAnswer:
				p.relayAndDrop(c)
			}
		}()
	}
}

func (p *tunnelProxy) pipe(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
	if err != nil {
		return
	}
	p.track(up, true)
	defer p.track(up, false)
	defer up.Close()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done // either side closing ends both (the deferred closes)
}

func readRequest(c net.Conn) (*http.Request, []byte, error) {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	req, err := http.ReadRequest(bufio.NewReader(c))
	if err != nil {
		return nil, nil, err
	}
	body, err := io.ReadAll(req.Body)
	return req, body, err
}

func (p *tunnelProxy) relayAndDrop(c net.Conn) {
	req, body, err := readRequest(c)
	if err != nil {
		return
	}
	up, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
	if err != nil {
		return
	}
	defer up.Close()
	req.Body = io.NopCloser(bytes.NewReader(body))
	if err := req.Write(up); err != nil {
		p.t.Errorf("proxy: forward request: %v", err)
		return
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), req)
	if err != nil {
		p.t.Errorf("proxy: read the exchange's answer: %v", err)
		return
	}
	_, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	p.cut.Add(1)
	p.mu.Lock()
	if p.drops--; p.drops <= 0 {
		p.mode = forward
	}
	p.mu.Unlock()
}

// serveExchange serves an exchange with cfg (its Backend on Redis under prefix) on a
// free loopback port until the test ends.
func serveExchange(t *testing.T, redisURL, prefix string, cfg exchange.Config) (*exchange.Server, string) {
	t.Helper()
	be, err := exchange.NewRedis(context.Background(), redisURL, prefix)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Backend = be
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	srv := exchange.NewServer(cfg)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv}
	go hs.Serve(l)
	t.Cleanup(func() { hs.Close(); srv.Close() })
	return srv, l.Addr().String()
}

// dedupeRig is a sender reaching its exchange through a proxy and a receiver
// reaching it directly, agents a and b registered in run.
type dedupeRig struct {
	srv              *exchange.Server
	run, tok         string
	sender, receiver *agent.Client
	a, b             agent.EntityID
}

func newDedupeRig(t *testing.T, ctx context.Context, srv *exchange.Server, direct, viaProxy, run string) *dedupeRig {
	t.Helper()
	tok, err := srv.IssueToken(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	r := &dedupeRig{srv: srv, run: run, tok: tok, a: agent.AgentID(run, "a"), b: agent.AgentID(run, "b")}
	if r.sender, err = agent.New(viaProxy, tok, agent.WithReconnect(30*time.Second, nil)); err != nil {
		t.Fatal(err)
	}
	if r.receiver, err = agent.New("http://"+direct, tok); err != nil {
		t.Fatal(err)
	}
	for _, id := range []agent.EntityID{r.a, r.b} {
		if err := r.receiver.Register(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := r.sender.Status(ctx, r.b); err != nil { // first contact, through the proxy
		t.Fatal(err)
	}
	return r
}

// expectOnly checks b's mailbox holds exactly texts, in order, and the run's timeline
// one record each.
func (r *dedupeRig) expectOnly(t *testing.T, ctx context.Context, texts ...string) {
	t.Helper()
	for _, want := range texts {
		m, err := r.receiver.Receive(ctx, r.b, 5*time.Second)
		if err != nil {
			t.Fatalf("receive %q: %v", want, err)
		}
		if got, _ := m.Text(); got != want {
			t.Fatalf("received %q, want %q", got, want)
		}
	}
	if m, err := r.receiver.Receive(ctx, r.b, 300*time.Millisecond); !errors.Is(err, agent.ErrTimeout) {
		txt, _ := m.Text()
		t.Fatalf("after %q: received %q (%v), want nothing more: a message delivered twice", texts, txt, err)
	}
	if tl := r.srv.Timeline(r.run); len(tl) != len(texts) {
		t.Errorf("timeline has %d records, want %d: %+v", len(tl), len(texts), tl)
	}
}

// waitCut waits (bounded) until the proxy has cut at least n requests.
func waitCut(t *testing.T, p *tunnelProxy, n int64, sent <-chan error) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for p.cut.Load() < n {
		select {
		case err := <-sent:
			t.Fatalf("send returned %v after %d cut requests, before the tunnel healed", err, p.cut.Load())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d requests reached the broken tunnel in 15 s", p.cut.Load())
		}
	}
}

// TestSendRetriesThroughATunnelWhoseExchangeIsGone: the symptom of an ssh -R tunnel
// whose exchange died — the connection is accepted, the request read, and the
// connection closed without an answer. The SDK cannot know whether the exchange got
// the message; against an exchange that de-duplicates it retries, Send blocks while
// the tunnel is broken and succeeds once it forwards again, and the receiver gets
// the message exactly once. Against an exchange that does not advertise
// de-duplication (Academy's), Send returns the error at once: a retry could deliver
// the message twice. (Before, Send gave up in both cases: the message was lost, as
// in TestRigCampaignResumeThroughTunnel's 24 of 25 replies.)
func TestSendRetriesThroughATunnelWhoseExchangeIsGone(t *testing.T) {
	redisURL := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	srv, addr := serveExchange(t, redisURL, "dedupe-on:", exchange.Config{})
	p := newTunnelProxy(t, addr)
	r := newDedupeRig(t, ctx, srv, addr, p.url(), "run-t")
	if err := r.sender.Send(ctx, agent.NewText(r.a, r.b, "first")); err != nil {
		t.Fatal(err)
	}
	p.setMode(swallow, 0)
	sent := make(chan error, 1)
	go func() { sent <- r.sender.Send(ctx, agent.NewText(r.a, r.b, "during")) }()
	waitCut(t, p, 2, sent) // the send is retrying, not given up
	p.setMode(forward, 0)
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("send across the broken tunnel: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("send did not succeed once the tunnel forwarded again")
	}
	r.expectOnly(t, ctx, "first", "during")

	// The same tunnel in front of an exchange that does not de-duplicate.
	plain, paddr := serveExchange(t, redisURL, "dedupe-off:", exchange.Config{DedupeWindow: -1})
	pp := newTunnelProxy(t, paddr)
	rp := newDedupeRig(t, ctx, plain, paddr, pp.url(), "run-p")
	pp.setMode(swallow, 0)
	start := time.Now()
	err := rp.sender.Send(ctx, agent.NewText(rp.a, rp.b, "lost"))
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("send through the broken tunnel to a non-deduplicating exchange: %v after %s, want the error at once", err, time.Since(start))
	}
	if n := pp.cut.Load(); n > 2 { // one try (two if the first went on an idle connection the proxy had closed)
		t.Errorf("%d requests reached the broken tunnel: the send was retried", n)
	}
	t.Logf("non-deduplicating exchange: %v", err)
	pp.setMode(forward, 0)
	rp.expectOnly(t, ctx)
}

// TestSendRetryAfterALostAnswerIsDeduplicated: the proxy forwards the request and
// the exchange queues the message, but the answer never comes back (twice). The SDK
// retries, the exchange recognises the repeats, and the receiver gets the message
// once, with one timeline record (without de-duplication: three copies).
func TestSendRetryAfterALostAnswerIsDeduplicated(t *testing.T) {
	redisURL := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	srv, addr := serveExchange(t, redisURL, "dedupe-lost:", exchange.Config{})
	p := newTunnelProxy(t, addr)
	r := newDedupeRig(t, ctx, srv, addr, p.url(), "run-d")
	p.setMode(dropAnswer, 2)
	sent := make(chan error, 1)
	go func() { sent <- r.sender.Send(ctx, agent.NewText(r.a, r.b, "once")) }()
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("send whose answers were lost: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("send did not return")
	}
	if n := p.cut.Load(); n != 2 {
		t.Fatalf("%d answers dropped, want 2 (the first try and one retry)", n)
	}
	r.expectOnly(t, ctx, "once")
}

// TestSendRetriesOnAGateway502: a reverse proxy in front of the exchange answers 502
// while the exchange restarts (it cannot tell whether the exchange had the request).
// The client, having seen the exchange advertise de-duplication, retries through the
// 502s — a gateway's answer does not make it forget — and the message arrives once.
func TestSendRetriesOnAGateway502(t *testing.T) {
	redisURL := redistest.Start(t)
	addr := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	srv, stop := exchangeOn(t, addr, redisURL)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var gateway502 atomic.Int64
	rp := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: "http", Host: addr})
	rp.ErrorHandler = func(w http.ResponseWriter, _ *http.Request, _ error) {
		gateway502.Add(1)
		w.WriteHeader(http.StatusBadGateway)
	}
	gl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := &http.Server{Handler: rp}
	go gs.Serve(gl)
	t.Cleanup(func() { gs.Close() })
	r := newDedupeRig(t, ctx, srv, addr, "http://"+gl.Addr().String(), "run-g")

	stop()
	sent := make(chan error, 1)
	go func() { sent <- r.sender.Send(ctx, agent.NewText(r.a, r.b, "via gateway")) }()
	deadline := time.Now().Add(15 * time.Second)
	for gateway502.Load() < 2 && time.Now().Before(deadline) { // bounded
		time.Sleep(20 * time.Millisecond)
	}
	if gateway502.Load() < 2 {
		t.Fatalf("the gateway answered %d 502s", gateway502.Load())
	}
	srv2, _ := exchangeOn(t, addr, redisURL) // the same address and state
	select {
	case err := <-sent:
		if err != nil {
			t.Fatalf("send through the gateway's 502s: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("send did not succeed once the exchange was back")
	}
	r.srv = srv2 // the timeline is in Redis: the restarted server reads it
	r.expectOnly(t, ctx, "via gateway")
}

// TestSendGivesUpAtTheExchangesWindow: a sender whose reconnect window (1 h) is longer
// than the exchange's de-duplication window (4 s, advertised as "4") stops repeating a
// send that may have arrived once a repeat could come after the exchange forgot the
// first copy (window less a quarter: 3 s), and says why. (Before, it repeated for the
// whole hour: a repeat after the window would be queued a second time.)
func TestSendGivesUpAtTheExchangesWindow(t *testing.T) {
	redisURL := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, addr := serveExchange(t, redisURL, "dedupe-window:", exchange.Config{DedupeWindow: 4 * time.Second})
	p := newTunnelProxy(t, addr)
	r := newDedupeRig(t, ctx, srv, addr, p.url(), "run-w")
	var err error
	if r.sender, err = agent.New(p.url(), r.tok, agent.WithReconnect(time.Hour, nil)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.sender.Status(ctx, r.b); err != nil { // first contact, through the proxy
		t.Fatal(err)
	}
	p.setMode(swallow, 0)
	start := time.Now()
	err = r.sender.Send(ctx, agent.NewText(r.a, r.b, "maybe"))
	took := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "de-duplication window (4s)") {
		t.Fatalf("send through a tunnel that swallows every request: %v after %s, want it given up for the window", err, took)
	}
	// Backoff 0.2, 0.4, 0.8, 1.6 s (±20%): it gives up when the next try would start
	// 3 s or more after the first, so after about 1.4 or 3 s.
	if took < time.Second || took > 4*time.Second {
		t.Errorf("gave up after %s, want between 1 s and the window (3 s, less the next backoff)", took)
	}
	if p.cut.Load() < 3 {
		t.Errorf("only %d tries reached the tunnel: it did not retry within the window", p.cut.Load())
	}
	t.Logf("%v", err)
}
