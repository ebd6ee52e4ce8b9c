package agent_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

func newExchange(t *testing.T) (*exchange.Server, string) {
	t.Helper()
	srv := exchange.NewServer(exchange.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), PingInterval: 50 * time.Millisecond})
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return srv, ts.URL
}

func client(t *testing.T, srv *exchange.Server, url, run string, opts ...agent.Option) *agent.Client {
	t.Helper()
	tok, err := srv.IssueToken(context.Background(), run)
	if err != nil {
		t.Fatal(err)
	}
	c, err := agent.New(url, tok, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestUID(t *testing.T) {
	// python3: uuid.uuid5(uuid.UUID('1e7eda44-1b34-4f5a-b2a1-cf5ca5db8e8b'), 'run-1/planner')
	if got := agent.UID("run-1", "planner").String(); got != "1143360a-5475-5cfe-86cc-b8898e3deaf8" {
		t.Fatalf("UID = %s", got)
	}
	id := agent.AgentID("run-1", "worker-a")
	if id.UID.String() != "67d43a5b-c13c-5eb1-98fd-38b2842244f1" || id.NameOr("") != "worker-a" || id.Role != agent.RoleAgent {
		t.Fatalf("AgentID = %+v", id)
	}
}

func TestNewAndFromEnv(t *testing.T) {
	for _, u := range []string{"", "ftp://x", "http://", "::"} {
		if _, err := agent.New(u, ""); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	t.Setenv(agent.EnvExchangeURL, "")
	if _, err := agent.FromEnv(); err == nil || !strings.Contains(err.Error(), agent.EnvExchangeURL) {
		t.Errorf("FromEnv without URL: %v", err)
	}
	t.Setenv(agent.EnvExchangeURL, "http://127.0.0.1:1/x/")
	t.Setenv(agent.EnvExchangeToken, "tok")
	c, err := agent.FromEnv()
	if err != nil || c.URL() != "http://127.0.0.1:1/x" {
		t.Fatalf("FromEnv: %v %v", c, err)
	}
	// Connection refused names the URL and the variable.
	if _, err := c.Status(context.Background(), agent.AgentID("r", "a")); err == nil || !strings.Contains(err.Error(), agent.EnvExchangeURL) {
		t.Errorf("unreachable exchange: %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	srv, url := newExchange(t)
	ctx := context.Background()
	c := client(t, srv, url, "run-1", agent.WithSite("aurora"), agent.WithRequestWindow(200*time.Millisecond))
	a, b := agent.AgentID("run-1", "a"), agent.AgentID("run-1", "b")
	if st, err := c.Status(ctx, a); err != nil || st != agent.StatusMissing {
		t.Fatalf("status before register: %s %v", st, err)
	}
	if err := c.Register(ctx, a, "pkg.A", "pkg.Base"); err != nil {
		t.Fatal(err)
	}
	if err := c.Register(ctx, b, "pkg.B"); err != nil {
		t.Fatal(err)
	}
	ids, err := c.Discover(ctx, "pkg.Base", true)
	if err != nil || len(ids) != 1 || ids[0] != a.UID {
		t.Fatalf("discover: %v %v", ids, err)
	}
	if err := c.Send(ctx, agent.NewText(a, b, "hello b")); err != nil {
		t.Fatal(err)
	}
	m, err := c.Receive(ctx, b, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if txt, ok := m.Text(); !ok || txt != "hello b" || m.Header.Src.UID != a.UID || m.BodyKind() != agent.TextKind {
		t.Fatalf("received %+v", m)
	}
	reply, err := m.Reply(agent.TextBody{Text: "hi a", Kind: agent.TextKind})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, reply); err != nil {
		t.Fatal(err)
	}
	// Listen delivers the reply, then times out (longer than one request window).
	var got []agent.Message
	start := time.Now()
	err = c.Listen(ctx, a, 500*time.Millisecond, func(m agent.Message) error { got = append(got, m); return nil })
	if !errors.Is(err, agent.ErrTimeout) || len(got) != 1 || got[0].Header.Tag != m.Header.Tag || got[0].Header.Kind != agent.KindResponse {
		t.Fatalf("listen: %v %+v", err, got)
	}
	if el := time.Since(start); el < 500*time.Millisecond {
		t.Errorf("listen returned after %s", el)
	}
	if _, err := c.Receive(ctx, a, 300*time.Millisecond); !errors.Is(err, agent.ErrTimeout) {
		t.Errorf("empty receive: %v", err)
	}
	st, err := c.Stats(ctx, b)
	if err != nil || st.Completed != 1 || st.Incoming != 1 {
		t.Errorf("stats %+v %v", st, err)
	}
	if age, ok, err := c.Heartbeat(ctx, a); err != nil || !ok || age < 0 || age > time.Minute {
		t.Errorf("heartbeat %s %v %v", age, ok, err)
	}
	// Listen ends with ErrTerminated when the mailbox is closed.
	go func() {
		time.Sleep(150 * time.Millisecond)
		_ = c.Terminate(ctx, a)
	}()
	if err := c.Listen(ctx, a, 0, func(agent.Message) error { return nil }); !errors.Is(err, agent.ErrTerminated) {
		t.Errorf("listen on terminated mailbox: %v", err)
	}
	if err := c.Send(ctx, agent.NewText(b, a, "late")); !errors.Is(err, agent.ErrTerminated) {
		t.Errorf("send to terminated: %v", err)
	}
	var se *agent.StatusError
	if err := c.Send(ctx, agent.NewText(b, agent.AgentID("run-1", "ghost"), "x")); !errors.Is(err, agent.ErrNotFound) || !errors.As(err, &se) || se.Code != 404 {
		t.Errorf("send to unknown: %v", err)
	}
	// Timeline recorded the site given by WithSite.
	tl := srv.Timeline("run-1")
	if len(tl) < 2 || tl[0].SrcSite != "aurora" || tl[0].Src != "a" || tl[0].Dest != "b" {
		t.Errorf("timeline %+v", tl)
	}
}

func TestErrorsAndPeers(t *testing.T) {
	srv, url := newExchange(t)
	ctx := context.Background()
	if err := srv.RegisterCampaign(ctx, "run-1", model.Campaign{Name: "c", Agents: []model.CampaignAgent{
		{Name: "a", AllowedPeers: []string{"b"}}, {Name: "b"},
	}}); err != nil {
		t.Fatal(err)
	}
	op, err := srv.IssueToken(ctx, "run-1")
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := agent.New(url, agent.TokenFor(op, "run-1", "a"))
	cb, _ := agent.New(url, agent.TokenFor(op, "run-1", "b"))
	other := client(t, srv, url, "run-2")
	noTok, _ := agent.New(url, "")
	badTok, _ := agent.New(url, "forged")
	a, b := agent.AgentID("run-1", "a"), agent.AgentID("run-1", "b")
	if err := noTok.Register(ctx, a); !errors.Is(err, agent.ErrUnauthorized) {
		t.Errorf("no token: %v", err)
	}
	if err := badTok.Register(ctx, a); !errors.Is(err, agent.ErrForbidden) {
		t.Errorf("bad token: %v", err)
	}
	if err := ca.Register(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := cb.Register(ctx, b); err != nil {
		t.Fatal(err)
	}
	if err := ca.Register(ctx, a); err != nil {
		t.Errorf("the same client registers again: %v", err)
	}
	// Another process with a's token: the mailbox is held.
	ca2, _ := agent.New(url, agent.TokenFor(op, "run-1", "a"))
	if err := ca2.Register(ctx, a); !errors.Is(err, agent.ErrConflict) || !strings.Contains(err.Error(), ca.Instance()) {
		t.Errorf("second holder: %v", err)
	}
	if st, err := other.Status(ctx, a); err != nil || st != agent.StatusMissing {
		t.Errorf("other run sees %s %v, want MISSING (mailboxes are per run)", st, err)
	}
	if err := cb.Send(ctx, agent.NewText(b, a, "not allowed")); !errors.Is(err, agent.ErrForbidden) || !strings.Contains(err.Error(), "allowed_peers") {
		t.Errorf("peer policy: %v", err)
	}
	if err := ca.Send(ctx, agent.NewText(b, a, "as b")); !errors.Is(err, agent.ErrForbidden) {
		t.Errorf("a sending as b: %v", err)
	}
	if err := ca.Register(ctx, agent.AgentID("run-1", "stranger")); !errors.Is(err, agent.ErrForbidden) {
		t.Errorf("undeclared agent: %v", err)
	}
	big := agent.NewText(a, b, strings.Repeat("x", exchange.DefaultMaxMessageBytes))
	if err := ca.Send(ctx, big); !errors.Is(err, agent.ErrTooLarge) {
		t.Errorf("size limit: %v", err)
	}
	if _, err := agent.NewRequest(a, b, map[string]string{"text": "no kind"}); err == nil {
		t.Error("body without kind accepted")
	}
	if _, err := agent.NewText(a, b, "x").Reply(agent.TextBody{Kind: agent.TextKind}); err != nil {
		t.Errorf("reply: %v", err)
	}
}

func TestAgentToken(t *testing.T) {
	uid := agent.UID("r", "a")
	tok := agent.AgentToken("mxt_op", "r", uid)
	if !agent.IsAgentToken(tok) || len(tok) != len(agent.AgentTokenPrefix)+64 {
		t.Fatalf("token %q", tok)
	}
	if agent.TokenFor("mxt_op", "r", "a") != tok || agent.TokenFor(tok, "r", "a") != tok || agent.TokenFor("", "r", "a") != "" {
		t.Error("TokenFor does not derive from run tokens and keep agent tokens")
	}
	for _, other := range []string{agent.AgentToken("mxt_op2", "r", uid), agent.AgentToken("mxt_op", "r2", uid), agent.AgentToken("mxt_op", "r", agent.UID("r", "b"))} {
		if other == tok {
			t.Error("derived tokens collide")
		}
	}
}

func TestWaitForPeers(t *testing.T) {
	srv, url := newExchange(t)
	ctx := context.Background()
	c := client(t, srv, url, "run-7")
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = c.Register(ctx, agent.AgentID("run-7", "late"))
	}()
	if err := c.Register(ctx, agent.AgentID("run-7", "early")); err != nil {
		t.Fatal(err)
	}
	got, err := c.WaitForPeers(ctx, "run-7", []string{"early", "late"}, 5*time.Second, 50*time.Millisecond)
	if err != nil || got["late"].UID != agent.UID("run-7", "late") || len(got) != 2 {
		t.Fatalf("wait: %v %v", got, err)
	}

	// Missing peers: the error names each with its uid and what to check.
	start := time.Now()
	_, err = c.WaitForPeers(ctx, "run-7", []string{"early", "ghost-b", "ghost-a"}, 300*time.Millisecond, 50*time.Millisecond)
	var mp *agent.MissingPeersError
	if !errors.As(err, &mp) || len(mp.Missing) != 2 {
		t.Fatalf("missing peers: %v", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"ghost-a (uid " + agent.UID("run-7", "ghost-a").String() + ")",
		"ghost-b (uid " + agent.UID("run-7", "ghost-b").String() + ")",
		`run id "run-7"`, agent.EnvExchangeURL, agent.EnvExchangeToken, url,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, "early (uid") {
		t.Errorf("registered peer reported missing: %s", msg)
	}
	if el := time.Since(start); el < 300*time.Millisecond || el > 5*time.Second {
		t.Errorf("timeout 300ms took %s", el)
	}
	// A terminated peer fails fast.
	if err := c.Terminate(ctx, agent.AgentID("run-7", "late")); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	_, err = c.WaitForPeers(ctx, "run-7", []string{"late"}, time.Minute, 50*time.Millisecond)
	if !errors.As(err, &mp) || len(mp.Gone) != 1 || !strings.Contains(err.Error(), "already terminated: late") || time.Since(start) > 5*time.Second {
		t.Errorf("terminated peer: %v", err)
	}
}

// TestFromEnvDerivesAgentToken: an agent given the run token with its run and
// name registers with its own derived token (the run token could not).
func TestFromEnvDerivesAgentToken(t *testing.T) {
	srv, url := newExchange(t)
	ctx := context.Background()
	if err := srv.RegisterCampaign(ctx, "run-9", model.Campaign{Name: "c", Agents: []model.CampaignAgent{{Name: "a"}, {Name: "b"}}}); err != nil {
		t.Fatal(err)
	}
	op, err := srv.IssueToken(ctx, "run-9")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(agent.EnvExchangeURL, url)
	t.Setenv(agent.EnvExchangeToken, op)
	t.Setenv(agent.EnvRunID, "run-9")
	t.Setenv(agent.EnvAgentName, "a")
	c, err := agent.FromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Register(ctx, agent.AgentID("run-9", "a")); err != nil {
		t.Errorf("register with the derived token: %v", err)
	}
	t.Setenv(agent.EnvAgentName, "")
	opc, _ := agent.FromEnv()
	if err := opc.Register(ctx, agent.AgentID("run-9", "b")); !errors.Is(err, agent.ErrForbidden) {
		t.Errorf("the run token registering an agent mailbox: %v, want 403", err)
	}
}
