package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
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
}

// Bootstrap waits for the recipient's mailbox (found by its deterministic uid)
// and sends it the campaign's user_task from an operator mailbox. When the
// recipient never appears the error is an *agent.MissingPeersError naming it
// and its uid.
func Bootstrap(ctx context.Context, c *agent.Client, s *Spec, runID string, o BootstrapOptions) error {
	rcpt := o.Recipient
	if rcpt == "" {
		rcpt = s.InitialAgent
	}
	if err := ValidateName(rcpt); err != nil {
		return fmt.Errorf("bootstrap recipient: %w", err)
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
	if err := c.Send(ctx, agent.NewText(op, agent.AgentID(runID, rcpt), s.UserTask)); err != nil {
		return fmt.Errorf("bootstrap: send the user task to %s: %w", rcpt, err)
	}
	logf("sent the user task to %s", rcpt)
	return nil
}

// IsMissingPeers reports whether err says a peer (or recipient) never registered.
func IsMissingPeers(err error) (*agent.MissingPeersError, bool) {
	var mp *agent.MissingPeersError
	ok := errors.As(err, &mp)
	return mp, ok
}
