package campaign

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/exchange/redistest"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// TestResumeRefuses: a run that is over, one still followed by a live
// process, and one whose embedded exchange was in memory are refused with
// what to do instead, before anything is served.
func TestResumeRefuses(t *testing.T) {
	root := t.TempDir()
	live := exec.Command("sh", "-c", "sleep 30 # mosaic launcher stand-in")
	if err := live.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = live.Process.Kill(); _ = live.Wait() }()
	for _, c := range []struct {
		st   RunState
		want string
	}{
		{RunState{RunID: "over", State: RunFinished}, "is over (finished)"},
		{RunState{RunID: "alive", State: RunReady, LauncherPID: live.Process.Pid, ExchangeListen: "127.0.0.1:1", ExchangeBackend: BackendRedis}, "still followed by pid"},
		{RunState{RunID: "mem", State: RunReady, ExchangeListen: "127.0.0.1:1", ExchangeBackend: BackendMemory}, `exchange.backend "memory"`},
		{RunState{RunID: "old", State: RunReady, ExchangeListen: "127.0.0.1:1"}, `exchange.backend "-"`},
	} {
		d, err := CreateRunDir(root, c.st)
		if err != nil {
			t.Fatal(err)
		}
		_ = d.WriteToken("mxt_x")
		err = Resume(context.Background(), ResumeOptions{Root: root, RunID: c.st.RunID, Catalog: &site.Catalog{}})
		if !errors.Is(err, ErrNotResumable) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.st.RunID, err, c.want)
		}
	}
	if err := Resume(context.Background(), ResumeOptions{Root: root, RunID: "nope"}); err == nil || !strings.Contains(err.Error(), "no run nope") {
		t.Errorf("unknown run: %v", err)
	}
}

// TestResumeServesTheExchangeAgain: a launcher's Redis-backed exchange died
// (with its launcher) holding a queued message; resume serves it again on the
// same address with the same state — the run token and the agent's token are
// accepted, the message is still there —, records itself as the follower, and
// follows the attach site (its session a process of this machine) until it
// ends, judged by the wrapper's exit lines in the site log.
func TestResumeServesTheExchangeAgain(t *testing.T) {
	redisURL := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	camp := model.Campaign{Name: "pair", InitialAgent: "a", Agents: []model.CampaignAgent{{Name: "a", AllowedPeers: []string{"b"}}, {Name: "b", AllowedPeers: []string{"a"}}}}
	r, err := exchange.NewRedis(ctx, redisURL, "")
	if err != nil {
		t.Fatal(err)
	}
	srv := exchange.NewServer(exchange.Config{Backend: r, Logger: slog.New(slog.DiscardHandler)})
	if err := srv.RegisterCampaign(ctx, "res1", camp); err != nil {
		t.Fatal(err)
	}
	tok, err := srv.IssueToken(ctx, "res1")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	sctx, stopSrv := context.WithCancel(ctx)
	served := make(chan struct{})
	go func() { _ = srv.Serve(sctx, ln); close(served) }()
	url := "http://" + addr
	clients := map[string]*agent.Client{}
	for _, n := range []string{"a", "b"} {
		if clients[n], err = agent.New(url, agent.TokenFor(tok, "res1", n), agent.WithReconnect(0, nil)); err != nil {
			t.Fatal(err)
		}
		if err := clients[n].Register(ctx, agent.AgentID("res1", n)); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := agent.NewRequest(agent.AgentID("res1", "a"), agent.AgentID("res1", "b"), map[string]string{"kind": "mosaic-text", "text": "queued before the crash"})
	if err := clients["a"].Send(ctx, m); err != nil {
		t.Fatal(err)
	}
	stopSrv() // the launcher died: its exchange with it
	<-served
	srv.Close()

	// The run directory the dead launcher left: one attach site, its session
	// a process of this machine that ends in a moment, its log with the
	// wrapper's exit lines.
	tmp := t.TempDir()
	campFile := filepath.Join(tmp, "pair.jsonc")
	if err := os.WriteFile(campFile, []byte(`{"name":"pair","initial_agent":"a","agents":[{"name":"a","command":["true"],"allowed_peers":["b"]},{"name":"b","command":["true"],"allowed_peers":["a"]}],"exchange":{"backend":"redis","redis_url":"`+redisURL+`"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(tmp, "site.log")
	if err := os.WriteFile(logPath, []byte("[a] mosaic-agent a: exited with status 0\n[b] mosaic-agent b: exited with status 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	session := exec.Command("sh", "-c", "sleep 2 # mosaic-campaigns/res1/here")
	if err := session.Start(); err != nil {
		t.Fatal(err)
	}
	var reaped sync.WaitGroup
	reaped.Add(1)
	go func() { _ = session.Wait(); reaped.Done() }()
	defer reaped.Wait()
	root := filepath.Join(tmp, "runs")
	d, err := CreateRunDir(root, RunState{RunID: "res1", Campaign: campFile, State: RunReady, ExchangeURL: url, ExchangeLocalURL: url,
		ExchangeListen: addr, ExchangeBackend: BackendRedis, RedisURL: redisURL, LauncherPID: 999999999,
		Sites: []SiteState{{SiteSpec: SiteSpec{Name: "here", Mode: ModeAttach, Host: "h", Agents: []string{"a", "b"}}, State: "ready", SSHPID: session.Process.Pid, Log: logPath, Exchange: url}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.WriteToken(tok); err != nil {
		t.Fatal(err)
	}
	var out syncBuf
	done := make(chan error, 1)
	go func() {
		done <- Resume(ctx, ResumeOptions{Root: root, RunID: "res1", Catalog: &site.Catalog{Systems: []site.System{{Name: "here", Kind: site.KindLocal}}},
			Out: &out, Poll: 50 * time.Millisecond})
	}()
	// The agent's client reaches the exchange again, and the message is there.
	var got agent.Message
	for i := 0; i < 100; i++ {
		if got, err = clients["b"].Receive(ctx, agent.AgentID("res1", "b"), time.Second); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil || !strings.Contains(string(got.Body), "queued before the crash") {
		t.Fatalf("receive after resume: %v %s\n%s", err, got.Body, out.String())
	}
	if pid := mustOpen(t, root, "res1").State().LauncherPID; pid != os.Getpid() {
		t.Errorf("follower pid %d, want this process %d", pid, os.Getpid())
	}
	if err := <-done; err != nil {
		t.Fatalf("resume: %v\n%s", err, out.String())
	}
	st := mustOpen(t, root, "res1").State()
	if st.State != RunFinished || st.Sites[0].State != "succeeded" || len(st.Counts) == 0 {
		t.Errorf("after resume: run %s, site %s, counts %+v\n%s", st.State, st.Sites[0].State, st.Counts, out.String())
	}
	for _, want := range []string{"serving run res1 again on " + url, "here: slice finished (succeeded)", "run res1 finished"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("resume output lacks %q:\n%s", want, out.String())
		}
	}
	var recs []exchange.MessageRecord
	if err := d.ReadJSON("timeline.json", &recs); err != nil || len(recs) != 1 {
		t.Errorf("timeline.json after resume: %v %+v", err, recs)
	}
}

func mustOpen(t *testing.T, root, run string) *RunDir {
	t.Helper()
	d, err := OpenRunDir(root, run)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestParseExitLines: the wrapper's exit lines in a site log, and lines that
// only look like them.
func TestParseExitLines(t *testing.T) {
	log := strings.Join([]string{
		"[a] mosaic-agent a: exited with status 0",
		"[b] mosaic-agent b: exited with status 3",
		"[b] mosaic-agent b: exited with status 0", // the last one wins
		"mosaic-agent c: exited with status x",     // not a number
		"mosaic-agent d e: exited with status 0",   // a name has no blank
		"mosaic-agent : exited with status 0",      // no name
		"mosaic-agent f exited with status 0",      // no colon
		"[g] mosaic-agent g: exited with status -1",
		"",
		"\x00\xff garbage",
	}, "\n")
	got := parseExitLines(log)
	want := map[string]int{"a": 0, "b": 0, "g": -1}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d, want %d", k, got[k], v)
		}
	}
}

func FuzzParseExitLines(f *testing.F) {
	f.Add("[a] mosaic-agent a: exited with status 0\n")
	f.Add("mosaic-agent : exited with status 99999999999999999999")
	f.Fuzz(func(t *testing.T, log string) {
		for name := range parseExitLines(log) {
			if name == "" || strings.ContainsAny(name, " \t\n") {
				t.Fatalf("name %q from %q", name, log)
			}
		}
	})
}
