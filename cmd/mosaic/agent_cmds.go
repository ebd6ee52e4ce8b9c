package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/core"
)

// hangupContext is cancelled on SIGINT, SIGTERM or SIGHUP (an attach session's
// terminal closing), so that agents and mailboxes are always cleaned up.
func hangupContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
}

// exchangeFlags are the flags of commands that talk to an exchange.
type exchangeFlags struct {
	url, typ string
}

func (x *exchangeFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&x.url, "exchange-url", "", "exchange base URL (default $"+agent.EnvExchangeURL+", then the campaign's exchange.url); the token comes from $"+agent.EnvExchangeToken)
	cmd.Flags().StringVar(&x.typ, "exchange-type", "", exchangeTypeUsage)
}

// exchangeTypeUsage documents --exchange-type.
const exchangeTypeUsage = "mosaic (Mosaic's exchange, run token) or academy (Academy's hosted exchange, or --exchange-url's, with your Globus token from `mosaic login`; http = academy); default: the campaign's exchange.type, else mosaic"

// apply sets the campaign's exchange type from --exchange-type (a usage error
// when unknown).
func (x *exchangeFlags) apply(spec *campaign.Spec) error {
	return usage(campaign.ApplyExchangeType(spec, x.typ))
}

// academyBearer is the Globus token an academy exchange gets: an explicit
// $MOSAIC_EXCHANGE_TOKEN, else the credential chain's for the exchange's scope.
func academyBearer(ctx context.Context, spec *campaign.Spec) (string, error) {
	tok, _, err := campaign.AcademyBearer(ctx, spec, os.Getenv(agent.EnvExchangeToken), core.NewGlobus(nil).ExchangeBearer)
	return tok, err
}

// exchangeURL resolves the exchange URL: flag, env, then the campaign's url
// (then, for an academy exchange, the hosted one).
func (x *exchangeFlags) exchangeURL(spec *campaign.Spec) (string, error) {
	u := x.url
	if u == "" {
		u = os.Getenv(agent.EnvExchangeURL)
	}
	if u == "" && spec != nil {
		u = spec.Exchange.URL
	}
	if u == "" && campaign.IsAcademy(spec) {
		u = campaign.DefaultAcademyExchangeURL
	}
	if u == "" {
		return "", fmt.Errorf("no exchange URL: pass --exchange-url, export %s, or set exchange.url in the campaign", agent.EnvExchangeURL)
	}
	return u, nil
}

// newExchangeClient is an exchange client of u with tok. It reconnects for up to
// agent.DefaultReconnectFor when the exchange goes away and says so on stderr when it
// is back (the agent's lifecycle line).
func newExchangeClient(u, tok, site string) (*agent.Client, error) {
	return agent.New(u, tok, agent.WithSite(site), agent.WithRequestWindow(30*time.Second),
		agent.WithReconnect(agent.DefaultReconnectFor, func(d time.Duration) {
			fmt.Fprintf(os.Stderr, "mosaic: exchange %s: reconnected after %s\n", u, d)
		}))
}

// operatorClient builds a client with the run's token ($MOSAIC_EXCHANGE_TOKEN),
// for commands that act as the run's operator (bootstrap). What it checks here
// — no exchange URL, one that is not http(s), an agent's token or a malformed
// bearer in $MOSAIC_EXCHANGE_TOKEN — is a usage error (exit 126); fetching or
// refreshing the Globus token and the academy exchange's bearer check are work
// that can fail (the network, a 5xx, the token service): plain errors (exit 125).
func (x *exchangeFlags) operatorClient(ctx context.Context, spec *campaign.Spec) (*agent.Client, error) {
	u, err := x.exchangeURL(spec)
	if err != nil {
		return nil, usage(err)
	}
	if campaign.IsAcademy(spec) {
		tok, err := academyBearerChecked(ctx, spec)
		if err != nil {
			return nil, err
		}
		c, err := newExchangeClient(u, tok, "")
		if err != nil {
			return nil, usage(err)
		}
		return c, campaign.CheckAcademyBearer(ctx, c, spec, "")
	}
	tok := os.Getenv(agent.EnvExchangeToken)
	if agent.IsAgentToken(tok) {
		return nil, usagef("%s holds an agent's token; this command needs the run's token (the launcher keeps it in the run directory's token file)", agent.EnvExchangeToken)
	}
	c, err := newExchangeClient(u, tok, "")
	return c, usage(err)
}

// academyBearerChecked is academyBearer with its errors sorted: a bearer given in
// $MOSAIC_EXCHANGE_TOKEN is only checked locally (its errors are usage errors);
// the credential chain's may have fetched or refreshed one over the network.
func academyBearerChecked(ctx context.Context, spec *campaign.Spec) (string, error) {
	tok, err := academyBearer(ctx, spec)
	if err != nil && os.Getenv(agent.EnvExchangeToken) != "" {
		return "", usage(err)
	}
	return tok, err
}

func newAgentCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "agent", Short: "Run one agent of a federated campaign",
		Example: `  mosaic agent run examples/campaigns/federated-chat.jsonc --run-id chat-1 --name worker-a`}
	cmd.AddCommand(newAgentRunCmd())
	return cmd
}

func newAgentRunCmd() *cobra.Command {
	var file, run, name, site string
	var startup time.Duration
	var x exchangeFlags
	cmd := &cobra.Command{
		Use:   "run [--campaign] F --run-id R --name X [-- CMD ARGS...]",
		Short: "Register an agent's mailbox, wait for its peers, and run it with messages on stdin/fd 3",
		Long: `Registers the agent's mailbox under its deterministic uid (UUIDv5 of "<run>/<name>"),
with the agent's own token: $MOSAIC_EXCHANGE_TOKEN when it is an agent token (mxa_…),
else the token derived from the run token it holds. Only one live process may hold an
agent's mailbox: a second ` + "`agent run`" + ` of the same agent exits 125 naming the first (host,
pid); after a crash the mailbox is free again once the first's lease lapses. It then
waits for its allowed peers, then runs CMD (default: the agent's command in the campaign).
Inbound messages arrive on the command's stdin as JSON lines; it sends by writing JSON lines
on fd 3 (MOSAIC_OUTBOX_FD=3) or on stdout prefixed with "@mosaic ". Landmarks (registered,
waiting for peers, discovered N peers, first message from ...) go to stderr as they happen.
The wrapper answers ping-request itself, stops the command on shutdown-request, and
serves the actions the command declares with a {"serve":[...]} line on fd 3
(docs/CAMPAIGNS.md, "Academy agents"). An agent declared "protocol": "academy" is a
Python Academy agent: the wrapper neither registers nor pipes; it runs the command with
MOSAIC_AGENT_UID and MOSAIC_PEER_UIDS, and the agent registers its own mailbox.
The command gets only its own token in MOSAIC_EXCHANGE_TOKEN. Its exit status is
mosaic's; the mailbox is terminated on exit. The campaign file is the first argument
or --campaign F; the agent's command comes after --. An argument error (a missing flag
or file, an agent the campaign does not declare, a bad run id or exchange URL) exits 126
before anything is registered; the wrapper's own failures exit 125.`,
		Example: `  mosaic agent run examples/campaigns/federated-chat.jsonc --run-id chat-1 --name worker-a
  mosaic agent run examples/campaigns/federated-chat.jsonc --run-id chat-1 --name coordinator -- python3 coordinator.py`,
		ValidArgsFunction: completeCampaignFile,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "run-id", "name"); err != nil {
				return err
			}
			fileArgs, command := agentRunArgs(cmd, file, args)
			if len(fileArgs) > 1 {
				return usagef("%s takes one argument before --, the campaign file; got %d: %s (put the agent's command after --)",
					cmd.CommandPath(), len(fileArgs), strings.Join(fileArgs, " "))
			}
			spec, _, err := loadCampaignArg(cmd, file, fileArgs)
			if err != nil {
				return err
			}
			if err := runIDArg(run); err != nil {
				return err
			}
			// Here, not in RunAgent: its errors exit 125 (the wrapper's failure).
			if err := checkAgentFlag(spec, "name", name); err != nil {
				return err
			}
			if site == "" {
				site = os.Getenv(agent.EnvSite)
			}
			if err := x.apply(spec); err != nil {
				return err
			}
			u, err := x.exchangeURL(spec)
			if err != nil {
				return usage(err)
			}
			// The agent's own token: given, or derived from the run's.
			tok := agent.TokenFor(os.Getenv(agent.EnvExchangeToken), run, name)
			if campaign.IsAcademy(spec) { // the user's Globus token
				if tok, err = academyBearerChecked(cmd.Context(), spec); err != nil {
					return err
				}
			}
			c, err := newExchangeClient(u, tok, site)
			if err != nil {
				return usage(err)
			}
			if !cmd.Flags().Changed("startup-timeout") && spec.Exchange.DiscoverTimeout > 0 {
				startup = spec.Exchange.DiscoverTimeout.D()
			}
			ctx, stop := hangupContext()
			defer stop()
			code, err := campaign.RunAgent(ctx, campaign.AgentRun{
				Spec: spec, RunID: run, Name: name, Site: site, Client: c, ExchangeURL: u, Token: tok,
				StartupTimeout: startup, Log: os.Stderr, Stdout: os.Stdout, Stderr: os.Stderr, Command: command,
			})
			if err != nil {
				return &exitError{code: commandExit(code), kind: kindError, msg: err.Error()}
			}
			if code != 0 {
				return &exitError{code: jobExit(code)}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "campaign", "", "campaign file (JSONC)")
	f.StringVar(&run, "run-id", "", "run id (the same on every site)")
	f.StringVar(&name, "name", "", "agent name")
	f.StringVar(&site, "site", "", "site tag for the timeline (default $MOSAIC_SITE)")
	f.DurationVar(&startup, "startup-timeout", campaign.DefaultStartupTimeout, "how long to wait for peers (default: the campaign's exchange.discover_timeout, else 10m)")
	x.add(cmd)
	return cmd
}

// agentRunArgs splits `agent run`'s arguments into the campaign file's (before --)
// and the agent's command (after --). With --campaign and no --, every argument is
// the command, as before the positional file was accepted (`agent run --campaign F
// --run-id R --name X cmd`).
func agentRunArgs(cmd *cobra.Command, file string, args []string) (fileArgs, command []string) {
	dash := cmd.ArgsLenAtDash()
	switch {
	case dash >= 0:
		return args[:dash], args[dash:]
	case file != "":
		return nil, args
	}
	return args, nil
}
