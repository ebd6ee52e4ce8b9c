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
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/google/uuid"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/model"
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
	// ServeGrace bounds how long an action request arriving before the command
	// declared its actions ({"serve":[...]} on fd 3) waits; 0 = DefaultServeGrace.
	ServeGrace time.Duration
	// InboxBytes bounds the inbound lines queued for a command that is slow to
	// read its stdin; 0 = DefaultInboxBytes. When the queue is full, action
	// requests are answered "busy" and other messages dropped (a landmark
	// says so); pings and shutdown requests never queue.
	InboxBytes int

	keepMailbox *atomic.Bool // a shutdown-request said terminate: false (set by RunAgent)
}

// inboundLine is what the child reads on stdin: envelope first, body last
// (the contract examples/campaigns/README.md documents).
// Academy messages carry decoded fields before the body: an action request
// its "action", "args" and "kwargs"; a response to an action call its
// "result" (JSON) or "error" (text).
type inboundLine struct {
	From    string                      `json:"from"`
	FromUID uuid.UUID                   `json:"from_uid"`
	Kind    string                      `json:"kind"`
	Tag     uuid.UUID                   `json:"tag"`
	Action  string                      `json:"action,omitempty"`
	Args    *[]json.RawMessage          `json:"args,omitempty"`
	Kwargs  *map[string]json.RawMessage `json:"kwargs,omitempty"`
	Result  json.RawMessage             `json:"result,omitempty"`
	Error   *string                     `json:"error,omitempty"`
	CallID  string                      `json:"call_id,omitempty"`
	Body    json.RawMessage             `json:"body"`
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

// ChildLine is one line a wrapped command writes on fd 3 (or stdout after
// OutboxPrefix), in one of four forms:
//
//	{"serve":["echo","add"]}                                   declare the actions it serves
//	{"to":NAME,"action":"x","args":[...],"kwargs":{...}[,"call_id":ID]}  call action x of agent NAME
//	{"reply_to":TAG,"result":VALUE} | {"reply_to":TAG,"error":"text"}   answer an action request
//	{"to":NAME,["reply_to":TAG,]"body":{...}}                  a plain message (ParseOutbound)
type ChildLine struct {
	// Serve is set (non-nil, maybe empty) by a declaration.
	Serve []string
	// To and ReplyTo: the destination agent, the tag of the request answered.
	To, ReplyTo string
	// Body is the body of a plain message.
	Body json.RawMessage
	// Action, Args and Kwargs: a call.
	Action string
	Args   []json.RawMessage
	Kwargs map[string]json.RawMessage
	// CallID is the command's own id for a call (optional), echoed as
	// "call_id" on the response line, so that it can match concurrent calls.
	CallID string
	// Result (JSON) or Error (text): an answer to an action request.
	Result json.RawMessage
	Error  *string
}

// ParseChildLine reads one outbound line of the agent I/O contract (any of
// ChildLine's forms). Unknown fields are refused, so that a misspelt key does
// not silently become another form.
func ParseChildLine(line []byte) (ChildLine, error) {
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(line, &keys); err != nil {
		return ChildLine{}, fmt.Errorf("outbound line is not a JSON object: %w", err)
	}
	strict := func(v any) error {
		dec := json.NewDecoder(strings.NewReader(string(line)))
		dec.DisallowUnknownFields()
		return dec.Decode(v)
	}
	_, hasResult := keys["result"]
	_, hasError := keys["error"]
	switch {
	case keys["serve"] != nil:
		var d struct {
			Serve []string `json:"serve"`
		}
		if err := strict(&d); err != nil || d.Serve == nil {
			return ChildLine{}, fmt.Errorf("serve line is not {\"serve\":[\"action\",...]}: %v", err)
		}
		for _, a := range d.Serve {
			if !isIdentifier(a) {
				return ChildLine{}, fmt.Errorf("serve line: action name %q is not an identifier (letters, digits, '_'; not a digit first)", a)
			}
		}
		return ChildLine{Serve: d.Serve}, nil
	case keys["action"] != nil:
		var d struct {
			To     string                     `json:"to"`
			Action string                     `json:"action"`
			Args   []json.RawMessage          `json:"args"`
			Kwargs map[string]json.RawMessage `json:"kwargs"`
			CallID *string                    `json:"call_id"`
		}
		if err := strict(&d); err != nil {
			return ChildLine{}, fmt.Errorf("call line is not {\"to\":NAME,\"action\":\"x\",\"args\":[...],\"kwargs\":{...}[,\"call_id\":\"ID\"]}: %w", err)
		}
		if d.CallID != nil && (*d.CallID == "" || len(*d.CallID) > maxCallIDBytes) {
			return ChildLine{}, fmt.Errorf("call line: \"call_id\" must be a non-empty string of at most %d bytes (got %d bytes)", maxCallIDBytes, len(*d.CallID))
		}
		if err := ValidateName(d.To); err != nil || d.To == OperatorName {
			return ChildLine{}, fmt.Errorf("call line: \"to\" must name an agent of the campaign (got %q)", d.To)
		}
		if !isIdentifier(d.Action) {
			return ChildLine{}, fmt.Errorf("call line: action name %q is not an identifier", d.Action)
		}
		if d.Args == nil {
			d.Args = []json.RawMessage{}
		}
		if d.Kwargs == nil {
			d.Kwargs = map[string]json.RawMessage{}
		}
		cl := ChildLine{To: d.To, Action: d.Action, Args: d.Args, Kwargs: d.Kwargs}
		if d.CallID != nil {
			cl.CallID = *d.CallID
		}
		return cl, nil
	case hasResult || hasError:
		var d struct {
			ReplyTo string          `json:"reply_to"`
			Result  json.RawMessage `json:"result"`
			Error   *string         `json:"error"`
		}
		if err := strict(&d); err != nil {
			return ChildLine{}, fmt.Errorf("answer line is not {\"reply_to\":TAG,\"result\":VALUE} or {\"reply_to\":TAG,\"error\":\"text\"}: %w", err)
		}
		if _, err := uuid.Parse(d.ReplyTo); err != nil {
			return ChildLine{}, fmt.Errorf("answer line: reply_to %q is not a message tag (uuid)", d.ReplyTo)
		}
		if hasResult == hasError {
			return ChildLine{}, errors.New("answer line: give either \"result\" or \"error\", not both")
		}
		if hasError && (d.Error == nil || *d.Error == "") {
			return ChildLine{}, errors.New("answer line: \"error\" must be a non-empty string")
		}
		if hasResult && len(d.Result) == 0 {
			d.Result = json.RawMessage("null")
		}
		return ChildLine{ReplyTo: d.ReplyTo, Result: d.Result, Error: d.Error}, nil
	}
	to, replyTo, body, err := ParseOutbound(line)
	if err != nil {
		return ChildLine{}, err
	}
	return ChildLine{To: to, ReplyTo: replyTo, Body: body}, nil
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
	if r.ServeGrace <= 0 {
		r.ServeGrace = DefaultServeGrace
	}
	r.keepMailbox = new(atomic.Bool)
	argv := a.Command
	if len(r.Command) > 0 {
		argv = r.Command
	}
	me := agent.AgentID(r.RunID, r.Name)
	if a.Protocol == model.ProtocolAcademy {
		if len(argv) == 0 {
			return 2, fmt.Errorf("agent %s has no command; set \"command\" in the campaign or pass one after --", r.Name)
		}
		return r.runAcademy(ctx, argv, a, me)
	}
	if err := r.Client.Register(ctx, me); err != nil {
		if errors.Is(err, agent.ErrConflict) {
			return 1, fmt.Errorf("agent %s of run %s is already running elsewhere: %w", r.Name, r.RunID, err)
		}
		return 1, fmt.Errorf("register mailbox of %s: %w", r.Name, err)
	}
	r.landmark("registered %s on %s (run %s, site %s)", me.UID, r.Client.URL(), r.RunID, orDash(r.Site))
	defer func() {
		if r.keepMailbox.Load() {
			r.landmark("mailbox left open (shutdown-request with terminate: false)")
			return
		}
		r.terminate(ctx, me)
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
	if len(argv) == 0 {
		return 2, fmt.Errorf("agent %s has no command; set \"command\" in the campaign or pass one after --", r.Name)
	}
	return r.runChild(ctx, argv, a.Env, a.AllowedPeers, me)
}

// terminate closes the agent's mailbox (bounded, even after ctx ended).
func (r *AgentRun) terminate(ctx context.Context, me agent.EntityID) {
	tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := r.Client.Terminate(tctx, me); err != nil {
		r.landmark("terminate mailbox: %v", err)
	} else {
		r.landmark("mailbox terminated")
	}
}

// DefaultInboxBytes bounds the inbound lines queued for a wrapped command's
// stdin (AgentRun.InboxBytes).
const DefaultInboxBytes = 8 << 20

// maxCallIDBytes bounds a call line's "call_id".
const maxCallIDBytes = 256

// DefaultServeGrace bounds how long an action request that arrives before the
// wrapped command declared its actions waits for the declaration.
const DefaultServeGrace = 3 * time.Second

// childEnv is the environment of an agent's command: this process's without
// exchange credentials, then the agent's identity, its peers' uids and its own
// token, then the campaign's env for the agent.
func (r *AgentRun) childEnv(me agent.EntityID, peers []string, env map[string]string) []string {
	uids := make([]string, len(peers))
	for i, p := range peers {
		uids[i] = p + "=" + agent.UID(r.RunID, p).String()
	}
	out := append(childEnviron(),
		agent.EnvAgentName+"="+r.Name, agent.EnvRunID+"="+r.RunID, agent.EnvSite+"="+r.Site,
		EnvAgentUID+"="+me.UID.String(), "MOSAIC_PEERS="+strings.Join(peers, ","), EnvPeerUIDs+"="+strings.Join(uids, ","),
		agent.EnvExchangeURL+"="+r.ExchangeURL, agent.EnvExchangeToken+"="+childToken(r))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	return out
}

// Environment of an agent's command besides the agent package's.
const (
	// EnvAgentUID is the agent's own mailbox uid (UUIDv5 of "<run>/<name>").
	EnvAgentUID = "MOSAIC_AGENT_UID"
	// EnvPeerUIDs lists its allowed peers as name=uid,name=uid.
	EnvPeerUIDs = "MOSAIC_PEER_UIDS"
)

// groupCommand builds the command of an agent: it leads its own process group,
// and the group is what gets signalled — a shell agent's children (a `sleep`,
// a Python worker pool) stop with it instead of being orphaned. ctx ending
// sends SIGTERM to the group and SIGKILL to whatever is left KillGrace later;
// the returned stop disarms that SIGKILL once the group is gone (the pgid may
// be reused).
func (r *AgentRun) groupCommand(ctx context.Context, argv []string) (*exec.Cmd, func()) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = r.childDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var killTimer *time.Timer
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
	return cmd, func() {
		killMu.Lock()
		if killTimer != nil {
			killTimer.Stop()
		}
		killMu.Unlock()
	}
}

// runAcademy runs a Python Academy agent: it registers and reads its mailbox
// itself (with its own token, under MOSAIC_AGENT_UID), so the wrapper neither
// registers it nor pipes messages; it starts the command with the agent's
// environment, reports when the agent's mailbox becomes active, waits for it
// (stopping its process group on ctx's end) and at exit terminates the
// mailbox, unless the agent ended cleanly (status 0, not stopped by ctx) and
// left it ACTIVE: Academy's runtime terminates its own mailbox when it stops
// unless a shutdown-request said terminate: false (or its config says so), so
// an open mailbox after a clean exit is one the agent means to reuse.
func (r *AgentRun) runAcademy(ctx context.Context, argv []string, a model.CampaignAgent, me agent.EntityID) (int, error) {
	cctx, cancelChild := context.WithCancel(ctx)
	defer cancelChild()
	cmd, disarm := r.groupCommand(cctx, argv)
	cmd.Env = r.childEnv(me, a.AllowedPeers, a.Env)
	cmd.Stdout, cmd.Stderr = r.Stdout, r.Stderr
	if err := cmd.Start(); err != nil {
		return 127, fmt.Errorf("agent %s: start %s: %w (commands resolve against %s)", r.Name, argv[0], err, cmd.Dir)
	}
	code := -1
	defer func() { r.academyMailboxAtExit(ctx, me, code) }()
	r.landmark("started Academy agent %s (pid %d); it registers its own mailbox %s on %s (run %s, site %s)",
		strings.Join(argv, " "), cmd.Process.Pid, me.UID, r.ExchangeURL, r.RunID, orDash(r.Site))
	wctx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { // bounded by wctx (the child's exit) and the startup timeout
		defer close(watched)
		deadline := time.Now().Add(r.StartupTimeout)
		poll := r.Poll
		if poll <= 0 {
			poll = 500 * time.Millisecond
		}
		for time.Now().Before(deadline) {
			st, err := r.Client.Status(wctx, me)
			if err == nil && st == agent.StatusActive {
				r.landmark("mailbox %s registered by the agent", me.UID)
				return
			}
			if err == nil && st == agent.StatusTerminated { // a quick agent: registered, done and terminated between two polls
				r.landmark("mailbox %s registered by the agent (and already terminated by it)", me.UID)
				return
			}
			select {
			case <-wctx.Done():
				return
			case <-time.After(poll):
			}
		}
		r.landmark("the agent has not registered its mailbox %s after %s (check that it uses %s and %s)", me.UID, r.StartupTimeout, EnvAgentUID, agent.EnvExchangeToken)
	}()
	werr := cmd.Wait()
	stopWatch()
	<-watched
	stopGroup(cmd.Process.Pid, r.KillGrace)
	disarm()
	code = exitCode(cmd.ProcessState, werr)
	r.landmark("exited with status %d", code)
	if werr != nil && cmd.ProcessState == nil {
		code = -1
		return exitCode(cmd.ProcessState, werr), fmt.Errorf("agent %s: %w", r.Name, werr)
	}
	return code, nil
}

// academyMailboxAtExit settles an Academy agent's mailbox once its command
// ended with code (-1: it could not be waited for): left as the agent left
// it after a clean exit (open: terminate: false; or terminated by the agent
// itself), terminated otherwise (a crash, a signal, ctx's end: nobody else
// will).
func (r *AgentRun) academyMailboxAtExit(ctx context.Context, me agent.EntityID, code int) {
	if code == 0 && ctx.Err() == nil {
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		st, err := r.Client.Status(sctx, me)
		cancel()
		switch {
		case err == nil && st == agent.StatusActive:
			r.landmark("mailbox left open: the agent exited 0 without terminating it (a shutdown-request with terminate: false); terminate it with a shutdown-request or when the run ends")
			return
		case err == nil && st == agent.StatusTerminated:
			r.landmark("mailbox terminated by the agent")
			return
		}
	}
	r.terminate(ctx, me)
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
	cmd, disarm := r.groupCommand(cctx, argv)
	cmd.Env = append(r.childEnv(me, peers, env), "MOSAIC_OUTBOX_FD=3")
	cmd.ExtraFiles = []*os.File{outW}
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

	pending := &replyBook{m: map[uuid.UUID]agent.Header{}}
	acts := newServed(time.Now().Add(r.ServeGrace))
	var shutdownAsked atomic.Bool
	reply := func(m agent.Message, build func() (agent.Message, error)) {
		resp, err := build()
		if err == nil {
			err = r.send(ctx, resp)
		}
		if err != nil {
			r.landmark("answer to %s of %s failed: %v", m.BodyKind(), m.Header.Src.NameOr("?"), err)
		}
	}
	lctx, stopListen := context.WithCancel(ctx)
	defer stopListen()
	calls := &callBook{m: map[uuid.UUID]string{}}
	maxInbox := r.InboxBytes
	if maxInbox <= 0 {
		maxInbox = DefaultInboxBytes
	}
	// The command's stdin is fed from a bounded queue by its own goroutine:
	// the listener never blocks on a command that stopped reading, so pings
	// and shutdown requests are still answered.
	box := newInbox(maxInbox)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the queue -> stdin; ends when the queue closes or stdin breaks
		defer wg.Done()
		defer stdin.Close()
		for b := range box.ch {
			box.done(len(b))
			if _, err := stdin.Write(b); err != nil {
				box.broken.Store(true)
				for b := range box.ch { // drain, bounded by the queue's close
					box.done(len(b))
				}
				return
			}
		}
	}()
	var droppedActions, droppedOther atomic.Int64
	drop := func(counter *atomic.Int64, what, from string) {
		if n := counter.Add(1); n == 1 || n%100 == 0 {
			r.landmark("inbox full (the command is not reading its stdin fast enough): dropped %s from %s (%d dropped so far)", what, orDash(from), n)
		}
	}
	go func() { // inbound: exchange -> the queue
		defer wg.Done()
		defer box.close()
		seen := map[string]bool{}
		err := r.Client.Listen(lctx, me, 0, func(m agent.Message) error {
			from := m.Header.Src.NameOr("")
			if !seen[from] {
				seen[from] = true
				r.landmark("first message from %s", orDash(from))
			}
			line := inboundLine{From: from, FromUID: m.Header.Src.UID, Kind: m.Header.Kind, Tag: m.Header.Tag, Body: m.Body}
			isAction := false
			if m.Header.Kind == agent.KindRequest {
				switch m.BodyKind() {
				case agent.KindPingRequest:
					reply(m, m.Success)
					return nil
				case agent.KindShutdownRequest:
					terminate, err := agent.ShutdownTerminate(m.Body)
					if err != nil {
						r.landmark("shutdown-request from %s is malformed (%v); shutting down anyway", orDash(from), err)
						terminate = true
					}
					r.landmark("shutdown requested by %s (terminate: %v): stopping the command", orDash(from), terminate)
					r.keepMailbox.Store(!terminate)
					shutdownAsked.Store(true)
					cancelChild()
					return nil
				case agent.KindActionRequest:
					call, err := m.DecodeAction()
					if err != nil {
						text := err.Error()
						if errors.Is(err, agent.ErrNotJSON) {
							text = fmt.Sprintf("agent %s accepts JSON arguments only: %v", r.Name, err)
						}
						r.landmark("refused action request %s from %s: %s", orDash(call.Action), orDash(from), text)
						reply(m, func() (agent.Message, error) { return m.UserError(text) })
						return nil
					}
					if !acts.has(lctx, call.Action) {
						text := agent.UnknownActionText(me, call.Action, acts.list())
						if len(acts.list()) == 0 {
							text += ` (a wrapped command declares its actions with a {"serve":["name",...]} line on fd 3)`
						}
						reply(m, func() (agent.Message, error) { return m.UserError(text) })
						return nil
					}
					line.Action, line.Args, line.Kwargs = call.Action, &call.Args, &call.Kwargs
					isAction = true
				}
			} else if k := m.BodyKind(); k == agent.KindActionResponse || k == agent.KindUserErrorResponse || k == agent.KindAcademyErrorResponse || k == agent.KindSuccessResponse {
				if id, ok := calls.take(m.Header.Tag); ok {
					line.CallID = id
				}
				if v, err := m.Result(); err != nil {
					text := err.Error()
					var ae *agent.ActionError
					if errors.As(err, &ae) {
						text = ae.Text
					}
					line.Error = &text
				} else {
					line.Result = v
				}
			}
			data, err := json.Marshal(line)
			if err != nil {
				return err
			}
			if box.broken.Load() {
				return nil // the command closed its stdin; its messages go nowhere
			}
			if !box.push(append(data, '\n')) {
				if isAction {
					reply(m, func() (agent.Message, error) {
						return m.UserError(fmt.Sprintf("agent %s is busy: its command has %d bytes of messages it has not read yet; try again later", r.Name, maxInbox))
					})
					drop(&droppedActions, "action request "+line.Action+" (answered busy)", from)
					return nil
				}
				drop(&droppedOther, m.Header.Kind+" "+m.BodyKind(), from)
				return nil
			}
			if m.Header.Kind == agent.KindRequest {
				pending.put(m.Header)
			}
			return nil
		})
		// Listen always ends with an error; report it unless we stopped it.
		if lctx.Err() == nil && !errors.Is(err, os.ErrClosed) && !errors.Is(err, syscall.EPIPE) {
			r.landmark("inbound stopped: %v", err)
		}
	}()
	out := func(raw []byte) {
		cl, err := ParseChildLine(raw)
		if err != nil {
			r.landmark("dropped outbound line: %v", err)
			return
		}
		if m, ok := r.outbound(cl, me, pending, acts, calls); ok {
			if err := r.send(ctx, m); err != nil {
				r.landmark("send to %s failed: %v", m.Header.Dest.NameOr(cl.To), err)
			}
		}
	}
	var outWG sync.WaitGroup
	outWG.Add(2)
	go func() { // fd 3
		defer outWG.Done()
		scanLines(outR, out)
	}()
	go func() { // stdout: outbox lines and pass-through
		defer outWG.Done()
		scanLines(stdout, func(b []byte) {
			if rest, ok := strings.CutPrefix(string(b), OutboxPrefix); ok {
				out([]byte(rest))
				return
			}
			if r.Stdout != nil {
				_, _ = r.Stdout.Write(append(b, '\n'))
			}
		})
	}()
	werr := cmd.Wait()
	stopGroup(cmd.Process.Pid, r.KillGrace)
	disarm()
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
	if werr != nil && cmd.ProcessState == nil {
		r.landmark("exited with status %d", code)
		return code, fmt.Errorf("agent %s: %w", r.Name, werr)
	}
	if shutdownAsked.Load() && ctx.Err() == nil && (code == 128+int(syscall.SIGTERM) || code == 128+int(syscall.SIGKILL)) {
		// Stopped as asked: a shutdown request is an agent's normal end.
		r.landmark("exited with status %d (stopped as the shutdown request asked: status 0)", code)
		return 0, nil
	}
	r.landmark("exited with status %d", code)
	return code, nil
}

// send sends m (bounded: 30 s, even after ctx ended, so that replies written
// just before the command exits still go out).
func (r *AgentRun) send(ctx context.Context, m agent.Message) error {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	return r.Client.Send(sctx, m)
}

// outbound turns one line of the command into the message to send (ok=false:
// nothing to send, a declaration or a dropped line, reported as a landmark).
func (r *AgentRun) outbound(cl ChildLine, me agent.EntityID, pending *replyBook, acts *served, calls *callBook) (agent.Message, bool) {
	switch {
	case cl.Serve != nil:
		acts.set(cl.Serve)
		r.landmark("serves actions [%s]", strings.Join(cl.Serve, " "))
		return agent.Message{}, false
	case cl.Action != "":
		args := make([]any, len(cl.Args))
		for i, a := range cl.Args {
			args[i] = a
		}
		kwargs := make(map[string]any, len(cl.Kwargs))
		for k, v := range cl.Kwargs {
			kwargs[k] = v
		}
		m, err := agent.NewActionRequest(me, agent.AgentID(r.RunID, cl.To), cl.Action, args, kwargs)
		if err != nil {
			r.landmark("dropped call of %s on %s: %v", cl.Action, cl.To, err)
			return agent.Message{}, false
		}
		if cl.CallID != "" {
			calls.put(m.Header.Tag, cl.CallID)
		}
		return m, true
	case cl.Body == nil: // an answer to an action request
		req, ok := pending.take(uuid.MustParse(cl.ReplyTo))
		if !ok {
			r.landmark("dropped answer to %s: no pending request with that tag", cl.ReplyTo)
			return agent.Message{}, false
		}
		rm := agent.Message{Header: req}
		var m agent.Message
		var err error
		if cl.Error != nil {
			m, err = rm.UserError(*cl.Error)
		} else {
			m, err = rm.ActionResult(cl.Result)
		}
		if err != nil {
			r.landmark("dropped answer to %s: %v", cl.ReplyTo, err)
			return agent.Message{}, false
		}
		return m, true
	}
	m := agent.Message{Header: agent.Header{Src: me, Tag: uuid.New(), Kind: agent.KindRequest, ProtocolVersion: agent.ProtocolVersion}, Body: cl.Body}
	if cl.To != "" {
		m.Header.Dest = agent.AgentID(r.RunID, cl.To)
	}
	if cl.ReplyTo != "" {
		m.Header.Tag = uuid.MustParse(cl.ReplyTo)
		m.Header.Kind = agent.KindResponse
		if req, ok := pending.take(m.Header.Tag); ok {
			m.Header.Dest, m.Header.Label = req.Src, req.Label
		} else if cl.To == "" || cl.To == OperatorName {
			r.landmark("dropped reply to %s: no pending request with that tag", cl.ReplyTo)
			return agent.Message{}, false
		}
	} else if cl.To == OperatorName {
		r.landmark("dropped message to \"mosaic\": only replies may go to the operator")
		return agent.Message{}, false
	}
	return m, true
}

// served is the set of actions the wrapped command declared.
type served struct {
	mu       sync.Mutex
	names    []string
	declared chan struct{} // closed at the first declaration
	grace    time.Time     // until when a request waits for the first declaration
}

func newServed(grace time.Time) *served {
	return &served{declared: make(chan struct{}), grace: grace}
}

func (s *served) set(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.names = append([]string(nil), names...)
	select {
	case <-s.declared:
	default:
		close(s.declared)
	}
}

func (s *served) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.names...)
}

// has reports whether action is declared; before the first declaration it
// waits for one until the grace time (bounded) or ctx's end.
func (s *served) has(ctx context.Context, action string) bool {
	if wait := time.Until(s.grace); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-s.declared:
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	return slices.Contains(s.list(), action)
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

// replyBook remembers the header of each pending request, so replies reach
// user mailboxes (whose uids are not derived from names) with the request's
// label (Academy handles route responses by it).
type replyBook struct {
	mu sync.Mutex
	m  map[uuid.UUID]agent.Header
}

func (b *replyBook) put(h agent.Header) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.m) < 100_000 {
		b.m[h.Tag] = h
	}
}

func (b *replyBook) take(tag uuid.UUID) (agent.Header, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	h, ok := b.m[tag]
	delete(b.m, tag)
	return h, ok
}

// callBook maps the tag of each call the command made with a "call_id" to
// that id, echoed on the response line (bounded like replyBook).
type callBook struct {
	mu sync.Mutex
	m  map[uuid.UUID]string
}

func (b *callBook) put(tag uuid.UUID, id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.m) < 100_000 {
		b.m[tag] = id
	}
}

func (b *callBook) take(tag uuid.UUID) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, ok := b.m[tag]
	delete(b.m, tag)
	return id, ok
}

// inbox is the bounded queue of lines for a wrapped command's stdin: at most
// max bytes (and maxInboxLines lines) waiting; push never blocks.
type inbox struct {
	ch     chan []byte
	max    int64
	queued atomic.Int64
	broken atomic.Bool // stdin refused a write: the command closed it or died
}

// maxInboxLines bounds the number of queued lines, whatever their size.
const maxInboxLines = 4096

func newInbox(max int) *inbox {
	return &inbox{ch: make(chan []byte, maxInboxLines), max: int64(max)}
}

// push queues b unless that would pass the bound (false: not queued). Only
// the listener pushes, so the check and the add do not race with another push.
func (q *inbox) push(b []byte) bool {
	if q.queued.Load()+int64(len(b)) > q.max {
		return false
	}
	q.queued.Add(int64(len(b)))
	select {
	case q.ch <- b:
		return true
	default:
		q.queued.Add(-int64(len(b)))
		return false
	}
}

// done accounts for a line taken off the queue.
func (q *inbox) done(n int) { q.queued.Add(-int64(n)) }

// close ends the queue (the listener's end).
func (q *inbox) close() { close(q.ch) }

// stopGroup ends what is left of process group pgid after its leader exited: SIGTERM,
// then SIGKILL if anything still runs after grace. Bounded: it polls for at most grace.
func stopGroup(pgid int, grace time.Duration) {
	if syscall.Kill(-pgid, syscall.SIGTERM) != nil {
		return // no process left in the group
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if !groupAlive(pgid) { // zombies awaiting init count as gone
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}
