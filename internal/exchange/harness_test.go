package exchange

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"

	"github.com/mosaic-hpc/mosaic/agent"
)

// harness is an exchange on an httptest server (127.0.0.1) with two runs.
type harness struct {
	t          testing.TB
	srv        *Server
	url        string
	hc         *http.Client
	tokA, tokB string // runs "run-a" and "run-b"
}

func newHarness(tb testing.TB, be Backend, cfg Config) *harness {
	tb.Helper()
	cfg.Backend = be
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv := NewServer(cfg)
	ts := httptest.NewServer(srv)
	tb.Cleanup(ts.Close)
	h := &harness{t: tb, srv: srv, url: ts.URL, hc: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}}
	ctx := context.Background()
	var err error
	if h.tokA, err = srv.IssueToken(ctx, "run-a"); err != nil {
		tb.Fatal(err)
	}
	if h.tokB, err = srv.IssueToken(ctx, "run-b"); err != nil {
		tb.Fatal(err)
	}
	return h
}

// call sends body (a string is sent verbatim, anything else as JSON).
func (h *harness) call(method, path, tok string, body any) (int, string) {
	h.t.Helper()
	resp := h.open(context.Background(), method, path, tok, body)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp.StatusCode, string(data)
}

func (h *harness) open(ctx context.Context, method, path, tok string, body any) *http.Response {
	h.t.Helper()
	var payload []byte
	switch b := body.(type) {
	case string:
		payload = []byte(b)
	case nil:
	default:
		var err error
		if payload, err = json.Marshal(b); err != nil {
			h.t.Fatal(err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, method, h.url+path, bytes.NewReader(payload))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := h.hc.Do(req)
	if err != nil {
		h.t.Fatalf("%s %s: %v", method, path, err)
	}
	return resp
}

func (h *harness) expect(method, path, tok string, body any, want int) string {
	h.t.Helper()
	code, text := h.call(method, path, tok, body)
	if code != want {
		h.t.Fatalf("%s %s: status %d (%s), want %d", method, path, code, text, want)
	}
	return text
}

func (h *harness) register(tok string, id EntityID, agent string) {
	h.t.Helper()
	body := map[string]any{"mailbox": id.Encode()}
	if agent != "" {
		body["agent"] = agent
	}
	h.expect("POST", "/mailbox", tok, body, 200)
}

func (h *harness) status(tok string, id EntityID) Status {
	h.t.Helper()
	var out struct{ Status Status }
	if err := json.Unmarshal([]byte(h.expect("GET", "/mailbox", tok, map[string]any{"mailbox": id.Encode()}, 200)), &out); err != nil {
		h.t.Fatal(err)
	}
	return out.Status
}

func (h *harness) send(tok, msg string, want int) string {
	h.t.Helper()
	return h.expect("PUT", "/message", tok, map[string]any{"message": msg}, want)
}

// recv receives one message and returns its raw JSON.
func (h *harness) recv(tok string, id EntityID, timeout float64) string {
	h.t.Helper()
	var out struct{ Message string }
	text := h.expect("GET", "/message", tok, map[string]any{"mailbox": id.Encode(), "timeout": timeout}, 200)
	if err := json.Unmarshal([]byte(text), &out); err != nil {
		h.t.Fatal(err)
	}
	return out.Message
}

// agentTok is the per-agent token of name in run, derived from the run's
// operator token as the launcher derives it.
func (h *harness) agentTok(run, name string) string {
	op := map[string]string{"run-a": h.tokA, "run-b": h.tokB}[run]
	return agent.AgentToken(op, run, agent.UID(run, name))
}

// agentTokFor is agentTok without a running harness (tokA is run's token).
func (h *harness) agentTokFor(run, name string) string {
	return agent.AgentToken(h.tokA, run, agent.UID(run, name))
}

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// agentEnt is the deterministic id of agent name in run.
func agentEnt(run, name string) EntityID {
	return EntityID{UID: agent.UID(run, name), Name: &name, Role: RoleAgent}
}

func ent(name, role string) EntityID {
	return EntityID{UID: uuid.New(), Name: &name, Role: role}
}

// academyMsg builds a message the way pydantic's model_dump_json does
// (compact, header then body).
func academyMsg(src, dest EntityID, kind string, tag uuid.UUID, body string) string {
	h := Header{Src: src, Dest: dest, Tag: tag, Kind: kind}
	hb, _ := json.Marshal(h)
	return `{"header":` + string(hb) + `,"body":` + body + `}`
}

func pingReq(src, dest EntityID) (string, uuid.UUID) {
	tag := uuid.New()
	return academyMsg(src, dest, KindRequest, tag, `{"kind":"ping-request"}`), tag
}

// sseEvents reads an SSE stream until EOF or limit events, returning each event
// as "data:<payload>" or "comment:<text>".
func sseEvents(t testing.TB, r io.Reader, limit int) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<16), 8<<20)
	for sc.Scan() && len(out) < limit {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "data: "):
			out = append(out, "data:"+strings.TrimPrefix(line, "data: "))
		case strings.HasPrefix(line, ":"):
			out = append(out, "comment:"+strings.TrimSpace(line[1:]))
		}
	}
	return out
}

// serveTest serves srv on a loopback httptest server and returns its URL.
func serveTest(t testing.TB, srv *Server) string {
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	return ts.URL
}

// rawCallAuth sends GET url with a verbatim Authorization header.
func rawCallAuth(url, authz, body string) (int, string, error) {
	req, err := http.NewRequest("GET", url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", authz)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}
