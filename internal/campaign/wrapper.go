package campaign

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/mosaic-hpc/mosaic/agent"
)

// OutboxPrefix marks an outbound message line on an agent's stdout (when it
// does not use fd 3).
const OutboxPrefix = "@mosaic "

// DefaultStartupTimeout bounds how long an agent waits for its peers.
const DefaultStartupTimeout = 600 * time.Second

// maxLineBytes bounds one inbound or outbound JSON line.
const maxLineBytes = 8 << 20

// AgentRun configures RunAgent: one agent of a run, wrapped.
type AgentRun struct {
	// Spec is the campaign (whole or a slice holding the agent).
	Spec *Spec
	// RunID and Name identify the agent; Site tags its mailbox.
	RunID, Name, Site string
	// Client talks to the exchange with the agent's own token.
	Client *agent.Client
	// ExchangeURL and Token (the agent's own token, never the run's) are
	// handed to the child (MOSAIC_EXCHANGE_URL/TOKEN).
	ExchangeURL, Token string
	// StartupTimeout bounds the wait for peers; 0 = DefaultStartupTimeout.
	StartupTimeout time.Duration
	// Poll is the peer-status poll interval; 0 = 500ms.
	Poll time.Duration
	// Dir is the child's working directory; "" = the campaign file's directory.
	Dir string
	// Log receives the landmarks (unbuffered writes: each line is flushed).
	Log io.Writer
	// Stdout and Stderr receive the child's output (stdout minus outbox lines).
	Stdout, Stderr io.Writer
	// KillGrace is how long the child gets between SIGTERM and SIGKILL; 0 = 5s.
	KillGrace time.Duration
	// Command overrides the campaign's argv for the agent (nil = the campaign's).
	Command []string
}

// inboundLine is what the child reads on stdin: envelope first, body last
// (the contract examples/campaigns/README.md documents).
type inboundLine struct {
	From    string          `json:"from"`
	FromUID uuid.UUID       `json:"from_uid"`
	Kind    string          `json:"kind"`
	Tag     uuid.UUID       `json:"tag"`
	Body    json.RawMessage `json:"body"`
}

// outboundLine is what the child writes on fd 3 (or stdout after OutboxPrefix).
type outboundLine struct {
	To      string          `json:"to"`
	ReplyTo string          `json:"reply_to,omitempty"`
	Body    json.RawMessage `json:"body"`
}

// ParseOutbound reads one outbound line of the agent I/O contract.
func ParseOutbound(line []byte) (to, replyTo string, body json.RawMessage, err error) {
	var o outboundLine
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&o); err != nil {
		return "", "", nil, fmt.Errorf("outbound line is not {\"to\":NAME,[\"reply_to\":TAG,]\"body\":{...}}: %w", err)
	}
	if o.To == "" && o.ReplyTo == "" {
		return "", "", nil, errors.New("outbound line has no \"to\"")
	}
	if o.To != "" && o.To != "mosaic" {
		if err := ValidateName(o.To); err != nil {
			return "", "", nil, fmt.Errorf("outbound line: \"to\": %w", err)
		}
	}
	if o.ReplyTo != "" {
		if _, err := uuid.Parse(o.ReplyTo); err != nil {
			return "", "", nil, fmt.Errorf("outbound line: reply_to %q is not a message tag (uuid)", o.ReplyTo)
		}
	}
	var probe struct {
		Kind *string `json:"kind"`
	}
	if len(o.Body) == 0 || json.Unmarshal(o.Body, &probe) != nil || probe.Kind == nil {
		return "", "", nil, errors.New("outbound line: \"body\" must be a JSON object with a \"kind\" field")
	}
	return o.To, o.ReplyTo, o.Body, nil
}

// landmark prints one wrapper progress line.
func (r *AgentRun) landmark(format string, args ...any) {
	if r.Log != nil {
		fmt.Fprintf(r.Log, "mosaic-agent %s: %s\n", r.Name, fmt.Sprintf(format, args...))
	}
}

// RunAgent registers the agent's mailbox under its deterministic uid, waits for
// its allowed peers, runs the agent's command with the I/O contract, and when
// the command exits terminates the mailbox. It returns the command's exit code
// (128+signal when killed). ctx ending stops the command (SIGTERM, then SIGKILL
// after KillGrace).
func RunAgent(ctx context.Context, r AgentRun) (int, error) {
	a, ok := r.Spec.Agent(r.Name)
	if !ok {
		return 1, fmt.Errorf("agent %q is not declared in %s (declared: %s)", r.Name, r.Spec.file(), strings.Join(r.Spec.Names(), ", "))
	}
	if r.StartupTimeout <= 0 {
		r.StartupTimeout = DefaultStartupTimeout
	}
	if r.KillGrace <= 0 {
		r.KillGrace = 5 * time.Second
	}
	me := agent.AgentID(r.RunID, r.Name)
	if err := r.Client.Register(ctx, me); err != nil {
		if errors.Is(err, agent.ErrConflict) {
			return 1, fmt.Errorf("agent %s of run %s is already running elsewhere: %w", r.Name, r.RunID, err)
		}
		return 1, fmt.Errorf("register mailbox of %s: %w", r.Name, err)
	}
	r.landmark("registered %s on %s (run %s, site %s)", me.UID, r.Client.URL(), r.RunID, orDash(r.Site))
	defer func() {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		if err := r.Client.Terminate(tctx, me); err != nil {
			r.landmark("terminate mailbox: %v", err)
		} else {
			r.landmark("mailbox terminated")
		}
	}()
	stopLease := r.keepLease(ctx, me)
	defer stopLease()
	if len(a.AllowedPeers) > 0 {
		r.landmark("waiting for peers [%s]", strings.Join(a.AllowedPeers, " "))
		found, err := r.Client.WaitForPeers(ctx, r.RunID, a.AllowedPeers, r.StartupTimeout, r.Poll)
		if err != nil {
			return 1, fmt.Errorf("agent %s: %w", r.Name, err)
		}
		r.landmark("discovered %d peers", len(found))
	}
	argv := a.Command
	if len(r.Command) > 0 {
		argv = r.Command
	}
	if len(argv) == 0 {
		return 2, fmt.Errorf("agent %s has no command; set \"command\" in the campaign or pass one after --", r.Name)
	}
	return r.runChild(ctx, argv, a.Env, a.AllowedPeers, me)
}

// LeaseRenewEvery is how often a running agent renews its hold on its mailbox
// (the exchange's default lease is 90 s; receiving renews it too).
var LeaseRenewEvery = 20 * time.Second

// keepLease re-registers the mailbox (idempotent for its holder) every
// LeaseRenewEvery, so that an agent waiting for its peers keeps its mailbox;
// a registration that another process took over is reported.
func (r *AgentRun) keepLease(ctx context.Context, me agent.EntityID) (stop func()) {
	lctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(LeaseRenewEvery)
		defer t.Stop()
		for { // bounded by lctx
			select {
			case <-lctx.Done():
				return
			case <-t.C:
			}
			if err := r.Client.Register(lctx, me); err != nil && lctx.Err() == nil {
				r.landmark("renew mailbox lease: %v", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (r *AgentRun) childDir() string {
	if r.Dir != "" {
		return r.Dir
	}
	if r.Spec.Path != "" {
		if abs, err := filepath.Abs(filepath.Dir(r.Spec.Path)); err == nil {
			return abs
		}
	}
	return ""
}

func (r *AgentRun) runChild(ctx context.Context, argv []string, env map[string]string, peers []string, me agent.EntityID) (int, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return 1, fmt.Errorf("agent %s: outbox pipe: %w", r.Name, err)
	}
	defer outR.Close()
	cctx, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	cmd := exec.CommandContext(cctx, argv[0], argv[1:]...)
	cmd.Dir = r.childDir()
	cmd.Env = append(childEnviron(),
		agent.EnvAgentName+"="+r.Name, agent.EnvRunID+"="+r.RunID, agent.EnvSite+"="+r.Site,
		"MOSAIC_PEERS="+strings.Join(peers, ","), "MOSAIC_OUTBOX_FD=3",
		agent.EnvExchangeURL+"="+r.ExchangeURL, agent.EnvExchangeToken+"="+childToken(r))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.ExtraFiles = []*os.File{outW}
	// The agent leads its own process group, and the group is what gets signalled:
	// a shell agent's children (a `sleep`, a Python worker pool) stop with it instead
	// of being orphaned. SIGTERM on cancel, SIGKILL to whatever of the group is left
	// KillGrace later — and when the agent itself exits, its group is cleaned up too.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var killTimer *time.Timer // stopped once the group is gone (the pgid may be reused)
	var killMu sync.Mutex
	cmd.Cancel = func() error {
		pgid := cmd.Process.Pid
		err := syscall.Kill(-pgid, syscall.SIGTERM)
		killMu.Lock()
		killTimer = time.AfterFunc(r.KillGrace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
		killMu.Unlock()
		if errors.Is(err, syscall.ESRCH) {
			return os.ErrProcessDone // the agent had just exited
		}
		return err
	}
	cmd.WaitDelay = r.KillGrace
	stdin, err := cmd.StdinPipe()
	if err != nil {
		outW.Close()
		return 1, err
	}
	// Our own pipe (not StdoutPipe): Wait must not close it before every line
	// the child wrote has been read.
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		outW.Close()
		return 1, err
	}
	defer stdout.Close()
	cmd.Stdout = stdoutW
	cmd.Stderr = r.Stderr
	if err := cmd.Start(); err != nil {
		outW.Close()
		stdoutW.Close()
		return 127, fmt.Errorf("agent %s: start %s: %w (commands resolve against %s)", r.Name, argv[0], err, cmd.Dir)
	}
	outW.Close()
	stdoutW.Close()
	r.landmark("started %s (pid %d)", strings.Join(argv, " "), cmd.Process.Pid)

	pending := &replyBook{m: map[uuid.UUID]agent.EntityID{}}
	lctx, stopListen := context.WithCancel(ctx)
	defer stopListen()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // inbound: exchange -> stdin
		defer wg.Done()
		defer stdin.Close()
		seen := map[string]bool{}
		err := r.Client.Listen(lctx, me, 0, func(m agent.Message) error {
			from := m.Header.Src.NameOr("")
			if !seen[from] {
				seen[from] = true
				r.landmark("first message from %s", orDash(from))
			}
			if m.Header.Kind == agent.KindRequest {
				pending.put(m.Header.Tag, m.Header.Src)
			}
			line, err := json.Marshal(inboundLine{From: from, FromUID: m.Header.Src.UID, Kind: m.Header.Kind, Tag: m.Header.Tag, Body: m.Body})
			if err != nil {
				return err
			}
			_, err = stdin.Write(append(line, '\n'))
			return err
		})
		// Listen always ends with an error; report it unless we stopped it.
		if lctx.Err() == nil && !errors.Is(err, os.ErrClosed) && !errors.Is(err, syscall.EPIPE) {
			r.landmark("inbound stopped: %v", err)
		}
	}()
	send := func(line []byte) {
		to, replyTo, body, err := ParseOutbound(line)
		if err != nil {
			r.landmark("dropped outbound line: %v", err)
			return
		}
		m := agent.Message{Header: agent.Header{Src: me, Tag: uuid.New(), Kind: agent.KindRequest}, Body: body}
		if to != "" {
			m.Header.Dest = agent.AgentID(r.RunID, to)
		}
		if replyTo != "" {
			m.Header.Tag = uuid.MustParse(replyTo)
			m.Header.Kind = agent.KindResponse
			if src, ok := pending.take(m.Header.Tag); ok {
				m.Header.Dest = src
			} else if to == "" || to == "mosaic" {
				r.landmark("dropped reply to %s: no pending request with that tag", replyTo)
				return
			}
		} else if to == "mosaic" {
			r.landmark("dropped message to \"mosaic\": only replies may go to the operator")
			return
		}
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if err := r.Client.Send(sctx, m); err != nil {
			r.landmark("send to %s failed: %v", m.Header.Dest.NameOr(to), err)
		}
	}
	var outWG sync.WaitGroup
	outWG.Add(2)
	go func() { // fd 3
		defer outWG.Done()
		scanLines(outR, func(b []byte) { send(b) })
	}()
	go func() { // stdout: outbox lines and pass-through
		defer outWG.Done()
		scanLines(stdout, func(b []byte) {
			if rest, ok := strings.CutPrefix(string(b), OutboxPrefix); ok {
				send([]byte(rest))
				return
			}
			if r.Stdout != nil {
				_, _ = r.Stdout.Write(append(b, '\n'))
			}
		})
	}()
	werr := cmd.Wait()
	stopGroup(cmd.Process.Pid, r.KillGrace)
	killMu.Lock()
	if killTimer != nil {
		killTimer.Stop()
	}
	killMu.Unlock()
	drained := make(chan struct{})
	go func() { outWG.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(r.KillGrace):
		// A grandchild still holds the pipes open: stop reading.
		outR.Close()
		stdout.Close()
		<-drained
	}
	stopListen()
	wg.Wait()
	code := exitCode(cmd.ProcessState, werr)
	r.landmark("exited with status %d", code)
	if werr != nil && cmd.ProcessState == nil {
		return code, fmt.Errorf("agent %s: %w", r.Name, werr)
	}
	return code, nil
}

// childEnviron is this process's environment without exchange credentials:
// the child gets only its own token, set after this.
func childEnviron() []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == agent.EnvExchangeToken || k == "MOSAIC_EXCHANGE_TOKENS_FILE" {
			continue
		}
		out = append(out, kv)
	}
	return out
}

// scanLines calls fn for each line of rd (without the newline), bounded.
func scanLines(rd io.Reader, fn func([]byte)) {
	sc := bufio.NewScanner(rd)
	sc.Buffer(make([]byte, 64<<10), maxLineBytes)
	for sc.Scan() {
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		fn(append([]byte(nil), b...))
	}
	_, _ = io.Copy(io.Discard, rd) // a too-long line: drain so the child never blocks
}

// exitCode maps a finished process to a shell-style exit status.
func exitCode(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 1
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// replyBook remembers who sent each pending request, so replies reach user
// mailboxes (whose uids are not derived from names).
type replyBook struct {
	mu sync.Mutex
	m  map[uuid.UUID]agent.EntityID
}

func (b *replyBook) put(tag uuid.UUID, src agent.EntityID) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.m) < 100_000 {
		b.m[tag] = src
	}
}

func (b *replyBook) take(tag uuid.UUID) (agent.EntityID, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	src, ok := b.m[tag]
	delete(b.m, tag)
	return src, ok
}

// stopGroup ends what is left of process group pgid after its leader exited: SIGTERM,
// then SIGKILL if anything still runs after grace. Bounded: it polls for at most grace.
func stopGroup(pgid int, grace time.Duration) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return // no process left in the group
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if syscall.Kill(-pgid, 0) != nil {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
