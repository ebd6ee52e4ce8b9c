package campaign

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

const exampleDir = "../../examples/campaigns"

func TestExampleFederatedChatSpec(t *testing.T) {
	s, err := Load(filepath.Join(exampleDir, "federated-chat.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(Strict); err != nil {
		t.Fatalf("example campaign is invalid: %v", err)
	}
	bySite := map[string][]string{}
	for _, a := range s.Agents {
		bySite[a.Site] = append(bySite[a.Site], a.Name)
		for _, arg := range a.Command[1:] {
			if _, err := os.Stat(filepath.Join(exampleDir, arg)); err != nil {
				t.Errorf("agent %s: script %s: %v", a.Name, arg, err)
			}
		}
	}
	for site, names := range bySite {
		sl, err := s.Slice(names)
		if err != nil {
			t.Fatal(err)
		}
		if err := sl.Validate(Federated); err != nil {
			t.Errorf("slice %s: %v", site, err)
		}
	}
}

// TestExampleFederatedChatRuns runs the example's scripts as the `mosaic agent
// run` wrapper will: each agent's stdin receives its inbound messages as JSON
// lines, its fd 3 carries outbound lines, and everything travels through a real
// exchange with the campaign's peer policy.
func TestExampleFederatedChatRuns(t *testing.T) {
	for _, bin := range []string{"python3", "sh"} {
		rigenv.NeedTool(t, bin, "apt-get install "+bin) // the example agents need it
	}
	s, err := Load(filepath.Join(exampleDir, "federated-chat.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	const run = "chat-run-1"
	srv := exchange.NewServer(exchange.Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.RegisterCampaign(ctx, run, s.Campaign); err != nil {
		t.Fatal(err)
	}
	tok, err := srv.IssueToken(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	c, err := agent.New(ts.URL, tok, agent.WithRequestWindow(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	clients := map[string]*agent.Client{}
	for _, a := range s.Agents {
		// Each agent registers with its own token, derived from the run's.
		ac, err := agent.New(ts.URL, agent.TokenFor(tok, run, a.Name), agent.WithRequestWindow(2*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		if err := ac.Register(ctx, agent.AgentID(run, a.Name)); err != nil {
			t.Fatal(err)
		}
		clients[a.Name] = ac
	}
	var wg sync.WaitGroup
	results := make(chan string, len(s.Agents))
	for _, a := range s.Agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := runAgent(ctx, clients[a.Name], run, a, ts.URL, agent.TokenFor(tok, run, a.Name)); err != nil {
				results <- fmt.Sprintf("%s: %v", a.Name, err)
			}
		}()
	}
	// Bootstrap: an operator mailbox hands the user task to the initial agent.
	op := agent.UserID("mosaic")
	if err := c.Register(ctx, op); err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitForPeers(ctx, run, []string{s.InitialAgent}, 10*time.Second, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(ctx, agent.NewText(op, agent.AgentID(run, s.InitialAgent), s.UserTask)); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(results)
	for r := range results {
		t.Error(r)
	}
	tl := srv.Timeline(run)
	cross := 0
	for _, r := range tl {
		if r.CrossSite() {
			cross++
		}
	}
	if len(tl) != 5 || cross != 4 {
		t.Errorf("timeline: %d messages (%d cross-site), want 5 (4): %+v", len(tl), cross, tl)
	}
}

// runAgent is a minimal stand-in for the `mosaic agent run` wrapper.
func runAgent(ctx context.Context, c *agent.Client, run string, a model.CampaignAgent, url, tok string) error {
	me := agent.AgentID(run, a.Name)
	outR, outW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer outR.Close()
	cmd := exec.CommandContext(ctx, a.Command[0], a.Command[1:]...)
	cmd.Dir = exampleDir
	cmd.Env = append(os.Environ(), "MOSAIC_AGENT_NAME="+a.Name, "MOSAIC_RUN_ID="+run, "MOSAIC_SITE="+a.Site,
		"MOSAIC_PEERS="+strings.Join(a.AllowedPeers, ","), "MOSAIC_OUTBOX_FD=3",
		agent.EnvExchangeURL+"="+url, agent.EnvExchangeToken+"="+tok)
	for k, v := range a.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.ExtraFiles = []*os.File{outW}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	outW.Close()
	lctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { // inbound: exchange -> stdin
		_ = c.Listen(lctx, me, 0, func(m agent.Message) error {
			// Envelope fields first, body last: the contract the example's
			// POSIX-sh worker relies on.
			line, _ := json.Marshal(struct {
				From    string          `json:"from"`
				FromUID uuid.UUID       `json:"from_uid"`
				Kind    string          `json:"kind"`
				Tag     uuid.UUID       `json:"tag"`
				Body    json.RawMessage `json:"body"`
			}{m.Header.Src.NameOr(""), m.Header.Src.UID, m.Header.Kind, m.Header.Tag, m.Body})
			_, err := stdin.Write(append(line, '\n'))
			return err
		})
	}()
	sendErr := make(chan error, 1)
	go func() { // outbound: fd 3 -> exchange
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			var out struct {
				To      string          `json:"to"`
				ReplyTo string          `json:"reply_to"`
				Body    json.RawMessage `json:"body"`
			}
			if err := json.Unmarshal(sc.Bytes(), &out); err != nil {
				sendErr <- fmt.Errorf("bad outbound line %q: %w", sc.Text(), err)
				return
			}
			m := agent.Message{Header: agent.Header{Src: me, Dest: agent.AgentID(run, out.To), Tag: uuid.New(), Kind: agent.KindRequest}, Body: out.Body}
			if out.ReplyTo != "" {
				m.Header.Kind = agent.KindResponse
				if m.Header.Tag, err = uuid.Parse(out.ReplyTo); err != nil {
					sendErr <- fmt.Errorf("bad reply_to %q", out.ReplyTo)
					return
				}
			}
			if err := c.Send(ctx, m); err != nil {
				sendErr <- err
				return
			}
		}
		sendErr <- nil
	}()
	werr := cmd.Wait()
	serr := <-sendErr
	if werr != nil {
		return fmt.Errorf("exited: %w; stderr:\n%s", werr, stderr.String())
	}
	if serr != nil && !errors.Is(serr, context.Canceled) {
		return serr
	}
	return nil
}
