package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
)

const identityCampaign = `{"name":"federated-chat","initial_agent":"coordinator","agents":[
 {"name":"coordinator","command":["sleep","30"],"allowed_peers":["worker-a","worker-b"]},
 {"name":"worker-a","command":["sleep","30"],"allowed_peers":["coordinator"]},
 {"name":"worker-b","command":["sleep","30"],"allowed_peers":["coordinator"]}]}`

// exchangeServe starts `mosaic exchange serve` for run with the campaign and
// returns its URL and the run token.
func exchangeServe(t *testing.T, e *env, run, campaignFile string, extra ...string) (string, string) {
	t.Helper()
	tok := "mxt_e2e-" + run
	tf := filepath.Join(e.home, run+".token")
	if err := os.WriteFile(tf, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	cmd := exec.Command(binary, append([]string{"exchange", "serve", "--addr", addr, "--token-file", tf, "--run-id", run, "--campaign", campaignFile}, extra...)...)
	cmd.Env = e.vars
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Signal(os.Interrupt); _ = cmd.Wait() })
	for range 100 { // bounded: 10 s
		if code, _ := httpGet("http://"+addr+"/discover", ""); code == 401 {
			return "http://" + addr, tok
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("exchange serve did not answer:\n%s", out.String())
	return "", ""
}

// agentRun is one `mosaic agent run` whose stderr is read line by line.
type agentRun struct {
	cmd   *exec.Cmd
	lines chan string
	done  chan error
}

func startAgentRun(t *testing.T, e *env, url, tok string, args ...string) *agentRun {
	t.Helper()
	a := &agentRun{lines: make(chan string, 100), done: make(chan error, 1)}
	a.cmd = exec.Command(binary, append([]string{"agent", "run"}, args...)...)
	a.cmd.Env = append(append([]string(nil), e.vars...), "MOSAIC_EXCHANGE_URL="+url, "MOSAIC_EXCHANGE_TOKEN="+tok)
	pr, pw := io.Pipe()
	a.cmd.Stderr = pw
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
		close(a.lines)
	}()
	go func() { err := a.cmd.Wait(); pw.Close(); a.done <- err }()
	t.Cleanup(func() {
		if a.cmd.ProcessState == nil {
			_ = a.cmd.Process.Kill()
			<-a.done
		}
	})
	return a
}

// waitLine waits for a stderr line containing s.
func (a *agentRun) waitLine(t *testing.T, s string, limit time.Duration) {
	t.Helper()
	deadline := time.After(limit)
	for {
		select {
		case l, ok := <-a.lines:
			if !ok {
				t.Fatalf("agent run ended before %q", s)
			}
			if strings.Contains(l, s) {
				return
			}
		case <-deadline:
			t.Fatalf("no %q within %s", s, limit)
		}
	}
}

// TestAgentRunSecondHolderRefused reproduces finding 2 of issue 14 end to
// end: two `mosaic agent run --name coordinator` of one run both "registered"
// and shared a mailbox. Now the second exits non-zero naming the first (host
// and pid); once the first crashed (SIGKILL, no cleanup) and its lease lapsed,
// a restart registers again under the same run id.
func TestAgentRunSecondHolderRefused(t *testing.T) {
	e := newEnv(t)
	camp := filepath.Join(e.home, "chat.jsonc")
	if err := os.WriteFile(camp, []byte(identityCampaign), 0o600); err != nil {
		t.Fatal(err)
	}
	const run = "holder-1"
	url, tok := exchangeServe(t, e, run, camp, "--lease-ttl", "2s")
	args := []string{"--campaign", camp, "--run-id", run, "--name", "coordinator", "--startup-timeout", "60s"}
	first := startAgentRun(t, e, url, tok, args...)
	first.waitLine(t, "mosaic-agent coordinator: registered", 20*time.Second)

	second := exec.Command(binary, append([]string{"agent", "run"}, args...)...)
	second.Env = append(append([]string(nil), e.vars...), "MOSAIC_EXCHANGE_URL="+url, "MOSAIC_EXCHANGE_TOKEN="+tok)
	var serr strings.Builder
	second.Stderr = &serr
	err := second.Run()
	host, _ := os.Hostname()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() == 0 {
		t.Fatalf("second agent run: %v, want a non-zero exit\n%s", err, serr.String())
	}
	for _, want := range []string{"already running elsewhere", fmt.Sprintf("pid %d", first.cmd.Process.Pid), "host " + host} {
		if !strings.Contains(serr.String(), want) {
			t.Errorf("second agent run's error does not say %q:\n%s", want, serr.String())
		}
	}
	if strings.Contains(serr.String(), "registered") {
		t.Errorf("second agent run registered:\n%s", serr.String())
	}

	// The first crashes: its mailbox stays ACTIVE but its lease lapses.
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	<-first.done
	time.Sleep(2500 * time.Millisecond)
	restart := exec.Command(binary, append([]string{"agent", "run"}, append(args[:len(args)-1], "1s")...)...)
	restart.Env = second.Env
	var rerr strings.Builder
	restart.Stderr = &rerr
	_ = restart.Run() // its peers never come: it exits 1 after registering
	if !strings.Contains(rerr.String(), "mosaic-agent coordinator: registered") {
		t.Errorf("restart after the crash did not register under run %s:\n%s", run, rerr.String())
	}
}

// call sends a JSON body with a bearer token to the exchange.
func exCall(t *testing.T, method, url, tok string, body any) (int, string) {
	t.Helper()
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, url, strings.NewReader(string(data)))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func mbox(id agent.EntityID) map[string]any {
	b, _ := json.Marshal(id)
	return map[string]any{"mailbox": string(b)}
}

func ping(src, dest agent.EntityID) map[string]any {
	m, _ := agent.NewRequest(src, dest, map[string]string{"kind": "ping-request"})
	raw, _ := json.Marshal(m)
	return map[string]any{"message": string(raw)}
}

// coreRunToken issues a token of the core's exchange for run with the campaign.
func coreRunToken(t *testing.T, e *env, run string) string {
	t.Helper()
	body := `{"campaign":{"name":"federated-chat","initial_agent":"coordinator","agents":[` +
		`{"name":"coordinator","command":["x"],"allowed_peers":["worker-a","worker-b"]},` +
		`{"name":"worker-a","command":["x"],"allowed_peers":["coordinator"]},` +
		`{"name":"worker-b","command":["x"],"allowed_peers":["coordinator"]}]}}`
	req, _ := http.NewRequest("POST", "http://"+e.addr+"/api/campaigns/"+run+"/token", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&tok); err != nil || resp.StatusCode != 201 {
		t.Fatalf("token: HTTP %d %v", resp.StatusCode, err)
	}
	return tok.Token
}

// TestCoreExchangePerAgentIdentity reproduces the HTTP cases of finding 2 of
// issue 14 against the exchange embedded in `mosaic serve`: with worker-a's
// credential one could send as the coordinator, make a user mailbox, read and
// delete the coordinator's mailbox, and run r2's token could squat run r3's
// deterministic uid. Each is refused now; the core's exchange enforces quotas.
func TestCoreExchangePerAgentIdentity(t *testing.T) {
	e := newEnv(t)
	e.serve()
	ex := "http://" + e.addr + "/exchange"
	const run = "ident-3"
	op := coreRunToken(t, e, run)
	tok := func(name string) string { return agent.TokenFor(op, run, name) }
	coord, wa, wb := agent.AgentID(run, "coordinator"), agent.AgentID(run, "worker-a"), agent.AgentID(run, "worker-b")
	for name, id := range map[string]agent.EntityID{"coordinator": coord, "worker-a": wa, "worker-b": wb} {
		if code, text := exCall(t, "POST", ex+"/mailbox", tok(name), mbox(id)); code != 200 {
			t.Fatalf("register %s: %d %s", name, code, text)
		}
	}
	for _, c := range []struct {
		what, method, path string
		body               any
		want               int
	}{
		{"send as the coordinator to a peer worker-a may not reach", "PUT", "/message", ping(coord, wb), 403},
		{"register a user mailbox", "POST", "/mailbox", mbox(agent.UserID("operator")), 403},
		{"read the coordinator's messages", "GET", "/message", map[string]any{"mailbox": mbox(coord)["mailbox"], "timeout": 0.1}, 403},
		{"delete the coordinator's mailbox", "DELETE", "/mailbox", mbox(coord), 403},
	} {
		if code, text := exCall(t, c.method, ex+c.path, tok("worker-a"), c.body); code != c.want {
			t.Errorf("worker-a's token: %s: %d (%s), want %d", c.what, code, text, c.want)
		}
	}
	if code, text := exCall(t, "GET", ex+"/mailbox", tok("worker-a"), mbox(coord)); code != 200 || !strings.Contains(text, "ACTIVE") {
		t.Errorf("coordinator after worker-a's attempts: %d %s", code, text)
	}
	if code, text := exCall(t, "POST", ex+"/mailbox", tok("coordinator"), mbox(coord)); code != 200 {
		t.Errorf("coordinator can no longer register: %d %s", code, text)
	}
	// Run r2's token (and its agents') cannot take run r3's deterministic uid.
	r2 := coreRunToken(t, e, "ident-2")
	r3coord := agent.AgentID("ident-3", "coordinator")
	for _, tk := range []string{r2, agent.TokenFor(r2, "ident-2", "coordinator")} {
		if code, text := exCall(t, "POST", ex+"/mailbox", tk, mbox(r3coord)); code != 403 {
			t.Errorf("run ident-2 pre-registering ident-3's coordinator: %d %s, want 403", code, text)
		}
	}
	// Bearer is case-insensitive.
	req, _ := http.NewRequest("GET", ex+"/mailbox", strings.NewReader(`{"mailbox":`+strings.TrimSuffix(strings.TrimPrefix(mustJSON(mbox(coord)), `{"mailbox":`), `}`)+`}`))
	req.Header.Set("Authorization", "bearer "+op)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 200 {
		t.Errorf("lower-case bearer: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestExchangeQuotas reproduces finding 3 of issue 14 with the built binary:
// 150 × 1 MB messages to one mailbox and 3,000 mailboxes were all accepted by
// the core's exchange. Now the core's exchange refuses beyond its defaults
// (413 / 429 naming the limit), and `mosaic exchange serve` takes the limits
// as flags.
func TestExchangeQuotas(t *testing.T) {
	e := newEnv(t)
	e.serve()
	ex := "http://" + e.addr + "/exchange"
	const run = "quota-1"
	op := coreRunToken(t, e, run)
	coord, u := agent.AgentID(run, "coordinator"), agent.UserID("mosaic")
	if code, text := exCall(t, "POST", ex+"/mailbox", agent.TokenFor(op, run, "coordinator"), mbox(coord)); code != 200 {
		t.Fatalf("register: %d %s", code, text)
	}
	if code, text := exCall(t, "POST", ex+"/mailbox", op, mbox(u)); code != 200 {
		t.Fatalf("register operator: %d %s", code, text)
	}
	accepted, refused := 0, 0
	for i := range 150 { // bounded
		// A fresh tag each time: the exchange de-duplicates a repeat of one message.
		big, _ := agent.NewRequest(u, coord, map[string]string{"kind": "mosaic-text", "text": strings.Repeat("x", 1_000_000)})
		raw, _ := json.Marshal(big)
		code, text := exCall(t, "PUT", ex+"/message", op, map[string]any{"message": string(raw)})
		switch {
		case code == 200:
			accepted++
		case code == 413 && strings.Contains(text, "MaxQueuedBytes=67108864"):
			refused++
		default:
			t.Fatalf("message %d: %d %s", i, code, text)
		}
	}
	if refused == 0 || accepted > 67 {
		t.Errorf("%d accepted, %d refused; want at most 64 MiB queued", accepted, refused)
	}
	created := 2
	for i := range 3000 { // bounded
		code, text := exCall(t, "POST", ex+"/mailbox", op, mbox(agent.UserID(fmt.Sprint("u", i))))
		if code == 200 {
			created++
		} else if code != 429 || !strings.Contains(text, "MaxMailboxesPerRun=1000") {
			t.Fatalf("mailbox %d: %d %s", i, code, text)
		}
	}
	if created != 1000 {
		t.Errorf("%d mailboxes created, want 1000", created)
	}

	// exchange serve: the quota flags.
	camp := filepath.Join(e.home, "chat.jsonc")
	if err := os.WriteFile(camp, []byte(identityCampaign), 0o600); err != nil {
		t.Fatal(err)
	}
	url, tok := exchangeServe(t, e, "quota-2", camp, "--max-queued-messages", "3")
	c2 := agent.AgentID("quota-2", "coordinator")
	if code, text := exCall(t, "POST", url+"/mailbox", agent.TokenFor(tok, "quota-2", "coordinator"), mbox(c2)); code != 200 {
		t.Fatalf("register: %d %s", code, text)
	}
	exCall(t, "POST", url+"/mailbox", tok, mbox(u))
	for i := range 4 {
		want := 200
		if i == 3 {
			want = 429
		}
		if code, text := exCall(t, "PUT", url+"/message", tok, ping(u, c2)); code != want || (want == 429 && !strings.Contains(text, "MaxQueuedMessages=3")) {
			t.Errorf("message %d: %d %s, want %d", i, code, text, want)
		}
	}
}
