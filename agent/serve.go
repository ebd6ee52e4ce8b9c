package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Call sends dest an action request from mailbox me (JSON serialization) and
// waits up to timeout (<= 0: until ctx ends) for the response with its tag,
// reading me with Receive. It returns the result's JSON, an *ActionError when
// dest's action failed, a *MailboxTerminatedError when dest's mailbox was
// closed first, an *AcademyError for Academy's other error codes (e.g. one
// matching ErrActionCancelled), or an error matching ErrTimeout.
//
// Call reads the mailbox itself, so use it only on a mailbox nothing else
// reads (an operator's or a script's user mailbox): every other message that
// arrives meanwhile is dropped. An agent that also serves requests, or makes
// several calls at once, runs an Agent (Serve) and uses Agent.Call, which
// hands each response to its caller and each request to its handler.
func (c *Client) Call(ctx context.Context, me, dest EntityID, action string, args []any, kwargs map[string]any, timeout time.Duration) (json.RawMessage, error) {
	req, err := NewActionRequest(me, dest, action, args, kwargs)
	if err != nil {
		return nil, err
	}
	if err := c.Send(ctx, req); err != nil {
		return nil, fmt.Errorf("call %s on %s: %w", action, dest.NameOr(dest.UID.String()), err)
	}
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	// Bounded by the deadline (and ctx): each receive waits at most what is left.
	for {
		left := time.Duration(0)
		if !deadline.IsZero() {
			if left = time.Until(deadline); left <= 0 {
				return nil, &StatusError{Op: "call " + action, Code: http.StatusRequestTimeout, Text: fmt.Sprintf("no answer from %s within %s", dest.NameOr(dest.UID.String()), timeout)}
			}
		}
		m, err := c.Receive(ctx, me, left)
		if errors.Is(err, ErrTimeout) {
			continue // the loop's deadline check answers
		}
		if err != nil {
			return nil, fmt.Errorf("call %s on %s: %w", action, dest.NameOr(dest.UID.String()), err)
		}
		if m.Header.Kind == KindResponse && m.Header.Tag == req.Header.Tag {
			return m.Result()
		}
	}
}

// ActionFunc runs one action: args and kwargs are the request's JSON
// arguments. Its result is sent back as the action-response (JSON-encoded);
// an error is sent as a user-error-response carrying its text. ctx ends when
// the caller cancels the action (cancel-request) or the agent stops.
type ActionFunc func(ctx context.Context, from EntityID, args []json.RawMessage, kwargs map[string]json.RawMessage) (any, error)

// Agent owns one mailbox and its receive loop (Serve): it answers pings,
// stops on a shutdown request, runs registered actions, routes responses to
// the Call waiting for them, and hands every other message to OnMessage. It
// is safe for concurrent use once Serve runs.
type Agent struct {
	c  *Client
	me EntityID

	// OnMessage receives what is not handled above (e.g. "mosaic-text"
	// messages, responses nobody waits for). nil: they are dropped. It is
	// called from the receive loop: a slow OnMessage delays every message.
	OnMessage func(Message)

	// MaxActions bounds the actions running at once (0: DefaultMaxActions); a
	// request beyond it is answered at once with a "busy" user error. Set it
	// before Serve.
	MaxActions int

	mu      sync.Mutex
	actions map[string]ActionFunc
	waiting map[uuid.UUID]chan Message
	running map[uuid.UUID]*runningAction
	served  bool
}

// DefaultMaxActions is how many actions an Agent runs at once by default.
const DefaultMaxActions = 64

// runningAction is an action in flight, keyed by its request's tag.
type runningAction struct {
	from      EntityID // the requester: only it may cancel
	stop      context.CancelFunc
	cancelled bool // a cancel-request from the requester stopped it
}

// NewAgent returns an Agent of mailbox me (registered by the caller) on c.
func NewAgent(c *Client, me EntityID) *Agent {
	return &Agent{c: c, me: me, actions: map[string]ActionFunc{}, waiting: map[uuid.UUID]chan Message{}, running: map[uuid.UUID]*runningAction{}}
}

// ID returns the agent's mailbox id.
func (a *Agent) ID() EntityID { return a.me }

// Handle registers fn as action name (replacing any earlier one).
func (a *Agent) Handle(name string, fn ActionFunc) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.actions[name] = fn
}

// Actions returns the registered action names, sorted.
func (a *Agent) Actions() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]string, 0, len(a.actions))
	for n := range a.actions {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// ErrShutdown is what Serve returns after a shutdown request.
var ErrShutdown = errors.New("agent was asked to shut down")

// Serve runs the agent's receive loop until ctx ends, the mailbox is closed,
// or a shutdown-request arrives (then it returns an error matching
// ErrShutdown, after terminating the mailbox unless the request said
// terminate: false). Actions run concurrently, at most MaxActions at once (a
// request beyond that is answered "busy"; one whose tag is already running
// is refused); a cancel-request stops an action only when it comes from the
// action's requester, which then gets academy-error-response code 3
// (ErrorCodeActionCancelled), as from Academy's runtime. Serve cancels the
// ctx of the actions still running and waits for them before it returns.
// Call it once.
func (a *Agent) Serve(ctx context.Context) error {
	a.mu.Lock()
	if a.served {
		a.mu.Unlock()
		return errors.New("agent: Serve called twice")
	}
	a.served = true
	a.mu.Unlock()
	limit := a.MaxActions
	if limit <= 0 {
		limit = DefaultMaxActions
	}
	slots := make(chan struct{}, limit)
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	// One defer, cancel first: the actions still running see their ctx end,
	// then Serve waits for them (two defers would run wg.Wait first, LIFO,
	// and an action waiting on its ctx would hold Serve forever).
	defer func() {
		cancel()
		wg.Wait()
	}()
	var shutdown error
	err := a.c.Listen(sctx, a.me, 0, func(m Message) error {
		if m.Header.Kind == KindResponse {
			a.deliver(m)
			return nil
		}
		switch m.BodyKind() {
		case KindPingRequest:
			a.reply(sctx, m, func() (Message, error) { return m.Success() })
		case KindShutdownRequest:
			terminate, err := ShutdownTerminate(m.Body)
			if err != nil {
				terminate = true
			}
			shutdown = ErrShutdown
			if terminate {
				tctx, tcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
				if err := a.c.Terminate(tctx, a.me); err != nil {
					shutdown = fmt.Errorf("%w (terminating the mailbox failed: %w)", ErrShutdown, err)
				}
				tcancel()
			}
			return shutdown
		case KindCancelRequest:
			if target, err := CancelTarget(m.Body); err == nil {
				a.mu.Lock()
				// Only the requester may cancel: another sender that learnt
				// the tag cannot stop someone else's action.
				if r, ok := a.running[target]; ok && r.from.UID == m.Header.Src.UID {
					r.cancelled = true
					r.stop()
				}
				a.mu.Unlock()
			}
		case KindActionRequest:
			tag := m.Header.Tag
			a.mu.Lock()
			_, dup := a.running[tag]
			a.mu.Unlock()
			if dup {
				a.reply(sctx, m, func() (Message, error) {
					return m.UserError(fmt.Sprintf("agent %s is already running a request with tag %s; give each request a fresh tag", a.me.NameOr(a.me.UID.String()), tag))
				})
				return nil
			}
			select {
			case slots <- struct{}{}:
			default:
				a.reply(sctx, m, func() (Message, error) {
					return m.UserError(fmt.Sprintf("agent %s is busy: %d actions are running, its limit; try again later", a.me.NameOr(a.me.UID.String()), limit))
				})
				return nil
			}
			actx, stop := context.WithCancel(sctx)
			a.mu.Lock()
			a.running[tag] = &runningAction{from: m.Header.Src, stop: stop}
			a.mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				answer := a.run(actx, m)
				// The slot is free before the answer goes out: a requester that sends its
				// next request on reading this answer (after a cancel, say) finds room.
				a.mu.Lock()
				delete(a.running, tag)
				a.mu.Unlock()
				stop()
				<-slots
				a.reply(sctx, m, answer)
			}()
		default:
			if a.OnMessage != nil {
				a.OnMessage(m)
			}
		}
		return nil
	})
	if shutdown != nil {
		return shutdown
	}
	return err
}

// run executes one action request under actx (which a cancel-request ends) and
// returns how to build its answer (the caller sends it once the action's slot is free).
func (a *Agent) run(actx context.Context, m Message) func() (Message, error) {
	call, err := m.DecodeAction()
	if err != nil {
		return func() (Message, error) { return m.UserError(err.Error()) }
	}
	a.mu.Lock()
	fn, ok := a.actions[call.Action]
	a.mu.Unlock()
	if !ok {
		return func() (Message, error) { return m.UserError(UnknownActionText(a.me, call.Action, a.Actions())) }
	}
	v, err := fn(actx, m.Header.Src, call.Args, call.Kwargs)
	a.mu.Lock()
	cancelled := a.running[m.Header.Tag] != nil && a.running[m.Header.Tag].cancelled
	a.mu.Unlock()
	if cancelled {
		return func() (Message, error) { return m.AcademyErrorReply(ErrorCodeActionCancelled) }
	}
	if err != nil {
		return func() (Message, error) { return m.UserError(err.Error()) }
	}
	return func() (Message, error) {
		r, err := m.ActionResult(v)
		if err != nil {
			return m.UserError(fmt.Sprintf("action %s: its result cannot be sent as JSON: %v", call.Action, err))
		}
		return r, nil
	}
}

// UnknownActionText is the error text for a request of an action agent me
// does not declare.
func UnknownActionText(me EntityID, action string, declared []string) string {
	if len(declared) == 0 {
		return fmt.Sprintf("agent %s has no action %q: it declares no actions", me.NameOr(me.UID.String()), action)
	}
	return fmt.Sprintf("agent %s has no action %q; its actions are: %s", me.NameOr(me.UID.String()), action, strings.Join(declared, ", "))
}

// reply sends the answer build makes (bounded: 30 s, even after ctx ended, so
// that a caller is not left waiting).
func (a *Agent) reply(ctx context.Context, m Message, build func() (Message, error)) {
	r, err := build()
	if err != nil {
		return
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = a.c.Send(sctx, r)
}

// deliver hands a response to the Call waiting for its tag, or to OnMessage.
func (a *Agent) deliver(m Message) {
	a.mu.Lock()
	ch, ok := a.waiting[m.Header.Tag]
	delete(a.waiting, m.Header.Tag)
	a.mu.Unlock()
	if ok {
		ch <- m // buffered: never blocks
		return
	}
	if a.OnMessage != nil {
		a.OnMessage(m)
	}
}

// Call sends dest an action request and waits up to timeout (<= 0: until ctx
// ends) for its response, which Serve (running meanwhile) routes here by tag;
// other messages keep flowing to their handlers. Results and errors are those
// of Client.Call. Several calls may wait at once.
func (a *Agent) Call(ctx context.Context, dest EntityID, action string, args []any, kwargs map[string]any, timeout time.Duration) (json.RawMessage, error) {
	req, err := NewActionRequest(a.me, dest, action, args, kwargs)
	if err != nil {
		return nil, err
	}
	ch := make(chan Message, 1)
	a.mu.Lock()
	a.waiting[req.Header.Tag] = ch
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		delete(a.waiting, req.Header.Tag)
		a.mu.Unlock()
	}()
	if err := a.c.Send(ctx, req); err != nil {
		return nil, fmt.Errorf("call %s on %s: %w", action, dest.NameOr(dest.UID.String()), err)
	}
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	select {
	case m := <-ch:
		return m.Result()
	case <-expire:
		return nil, &StatusError{Op: "call " + action, Code: http.StatusRequestTimeout, Text: fmt.Sprintf("no answer from %s within %s", dest.NameOr(dest.UID.String()), timeout)}
	case <-ctx.Done():
		return nil, fmt.Errorf("call %s on %s: %w", action, dest.NameOr(dest.UID.String()), ctx.Err())
	}
}
