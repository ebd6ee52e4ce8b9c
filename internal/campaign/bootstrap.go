package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
)

// OperatorName is the name of the user mailbox that sends the bootstrap
// message; agents see it as "from":"mosaic".
const OperatorName = "mosaic"

// BootstrapOptions configures Bootstrap.
type BootstrapOptions struct {
	// Recipient is the agent that receives the user task; "" = the campaign's
	// initial_agent.
	Recipient string
	// Timeout bounds the wait for the recipient's mailbox; 0 = DefaultStartupTimeout.
	Timeout time.Duration
	// Poll is the status poll interval; 0 = 500ms.
	Poll time.Duration
	// Log receives progress lines.
	Log io.Writer
	// AnswerTimeout bounds the wait for an Academy recipient's answer to the
	// bootstrap action; 0 = DefaultBootstrapAnswerWait. No answer by then is not
	// an error (the action may run for the whole campaign).
	AnswerTimeout time.Duration
}

// DefaultBootstrapAnswerWait is how long Bootstrap waits for an Academy
// initial agent's answer to the bootstrap action.
const DefaultBootstrapAnswerWait = 10 * time.Second

// ErrNotDeclared says a named agent is not declared in the campaign.
var ErrNotDeclared = errors.New("agent is not declared in the campaign")

// Bootstrap waits for the recipient's mailbox (found by its deterministic uid)
// and sends it the campaign's user_task from an operator mailbox: to an agent
// declared "protocol": "academy" as an action request (JSON serialization,
// action bootstrap_action, default receive_message, the task its one
// positional argument), whose answer it then waits for (AnswerTimeout) and
// logs; to a Mosaic-wrapped agent as a plain "mosaic-text" request. A
// recipient the campaign does not declare is refused at once (ErrNotDeclared,
// naming the declared agents); when the recipient never appears the error is
// an *agent.MissingPeersError naming it and its uid. An Academy recipient
// answering with an error fails Bootstrap with an *agent.ActionError.
func Bootstrap(ctx context.Context, c *agent.Client, s *Spec, runID string, o BootstrapOptions) error {
	rcpt := o.Recipient
	if rcpt == "" {
		rcpt = s.InitialAgent
	}
	if err := ValidateName(rcpt); err != nil {
		return fmt.Errorf("bootstrap recipient: %w", err)
	}
	if _, ok := s.Agent(rcpt); !ok {
		return fmt.Errorf("bootstrap recipient %q: %w %s (declared: %s); name one of those with --recipient", rcpt, ErrNotDeclared, s.file(), strings.Join(s.Names(), ", "))
	}
	if o.AnswerTimeout <= 0 {
		o.AnswerTimeout = DefaultBootstrapAnswerWait
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultStartupTimeout
	}
	logf := func(format string, args ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, "bootstrap: "+format+"\n", args...)
		}
	}
	logf("waiting for %s (uid %s) on %s", rcpt, AgentUID(runID, rcpt), c.URL())
	if _, err := c.WaitForPeers(ctx, runID, []string{rcpt}, o.Timeout, o.Poll); err != nil {
		return err
	}
	op := agent.UserID(OperatorName)
	if err := c.Register(ctx, op); err != nil {
		return fmt.Errorf("bootstrap: register operator mailbox: %w", err)
	}
	defer func() {
		tctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = c.Terminate(tctx, op)
	}()
	dest := agent.AgentID(runID, rcpt)
	if !s.IsAcademy(rcpt) {
		if err := c.Send(ctx, agent.NewText(op, dest, s.UserTask)); err != nil {
			return fmt.Errorf("bootstrap: send the user task to %s: %w", rcpt, err)
		}
		logf("sent the user task to %s", rcpt)
		return nil
	}
	action := s.BootstrapActionName()
	req, err := agent.NewActionRequest(op, dest, action, []any{s.UserTask}, nil)
	if err != nil {
		return fmt.Errorf("bootstrap: %w", err)
	}
	if err := c.Send(ctx, req); err != nil {
		return fmt.Errorf("bootstrap: send the user task to %s: %w", rcpt, err)
	}
	logf("sent the user task to Academy agent %s as action %s", rcpt, action)
	// Bounded by AnswerTimeout (and ctx): only the answer can arrive on the
	// operator mailbox, which is this call's alone.
	deadline := time.Now().Add(o.AnswerTimeout)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			logf("no answer from %s within %s; its %s action keeps running", rcpt, o.AnswerTimeout, action)
			return nil
		}
		m, err := c.Receive(ctx, op, left)
		if errors.Is(err, agent.ErrTimeout) {
			continue
		}
		if err != nil {
			return fmt.Errorf("bootstrap: wait for the answer of %s: %w", rcpt, err)
		}
		if m.Header.Kind != agent.KindResponse || m.Header.Tag != req.Header.Tag {
			continue
		}
		v, err := m.Result()
		if err != nil {
			return fmt.Errorf("bootstrap: %s's %s action failed: %w", rcpt, action, err)
		}
		logf("%s answered: %s", rcpt, clip(string(v), 400))
		return nil
	}
}

// clip shortens s to at most n bytes for a log line.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// IsMissingPeers reports whether err says a peer (or recipient) never registered.
func IsMissingPeers(err error) (*agent.MissingPeersError, bool) {
	var mp *agent.MissingPeersError
	ok := errors.As(err, &mp)
	return mp, ok
}
