package main

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
)

func newExchangeCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "exchange", Short: "The agent message exchange (Academy cloud-exchange protocol)",
		Example: `  mosaic exchange serve --addr 127.0.0.1:7700 --token-file run.token --run-id chat-1
  mosaic exchange ping --url http://127.0.0.1:7700`}
	cmd.AddCommand(newExchangeServeCmd(), newExchangePingCmd(), newExchangeRelayCmd())
	return cmd
}

func newExchangeServeCmd() *cobra.Command {
	var addr, token, tokenFile, run, file, redisURL, logFormat string
	var q exchangeQuotaFlags
	cmd := &cobra.Command{
		Use:   "serve --addr HOST:PORT --token TOKEN [--run-id R] [--campaign F]",
		Short: "Run the exchange alone, protocol routes at the root",
		Long: `Serves the Academy cloud-exchange protocol at the root of --addr. The token (from --token,
--token-file or $MOSAIC_EXCHANGE_TOKEN) is the run token of --run-id. With --campaign the
exchange enforces that campaign for the run: each declared agent has its own token, derived
from the run token (mxa_…; ` + "`mosaic agent run`" + ` and the launcher derive it the same way), that
opens only its own mailbox; agents send only as themselves and only to their allowed_peers;
the run token opens user mailboxes (bootstrap, operators), status, stats and teardown.
Without --campaign the run token acts for every mailbox of the run (plain Academy use).
Quotas bound what one run can make the exchange hold (429/413 beyond).`,
		Example: `  mosaic exchange serve --addr 127.0.0.1:7700 --token-file run.token --run-id chat-1
  mosaic exchange serve --addr 0.0.0.0:7700 --token-file run.token --run-id chat-1 \
    --campaign examples/campaigns/federated-chat.jsonc --redis redis://127.0.0.1:6379/0`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if v := os.Getenv("MOSAIC_LOG_FORMAT"); !cmd.Flags().Changed("log-format") && v != "" {
				logFormat = v
			}
			log, err := newLogger(cmd.ErrOrStderr(), logFormat, os.Getenv("MOSAIC_LOG_LEVEL"))
			if err != nil {
				return err
			}
			if token == "" && tokenFile != "" {
				b, err := os.ReadFile(tokenFile)
				if err != nil {
					return fmt.Errorf("token file: %w", err)
				}
				token = strings.TrimSpace(string(b))
			}
			if token == "" {
				token = os.Getenv("MOSAIC_EXCHANGE_TOKEN")
			}
			if token == "" {
				return usagef("no token: pass --token, --token-file or export MOSAIC_EXCHANGE_TOKEN (agents send it as Authorization: Bearer)")
			}
			if err := campaign.ValidateRunID(run); err != nil {
				return err
			}
			var be exchange.Backend
			if redisURL != "" {
				r, err := exchange.NewRedis(cmd.Context(), redisURL, "")
				if err != nil {
					return err
				}
				be = r
			}
			cfg := exchange.Config{Backend: be, Logger: log}
			q.apply(&cfg)
			srv := exchange.NewServer(cfg)
			defer srv.Close()
			ctx, stop := signalContext()
			defer stop()
			if err := srv.AddToken(ctx, token, run); err != nil {
				return err
			}
			if file != "" {
				spec, err := campaign.Load(file)
				if err != nil {
					return err
				}
				if err := spec.Validate(campaign.Strict); err != nil {
					return err
				}
				if err := srv.RegisterCampaign(ctx, run, spec.Campaign); err != nil {
					return err
				}
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", addr, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "exchange: serving run %s on http://%s\n", run, ln.Addr())
			return srv.Serve(ctx, ln)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "addr", "127.0.0.1:7700", "listen address")
	f.StringVar(&token, "token", "", "bearer token agents must send (prefer --token-file or $MOSAIC_EXCHANGE_TOKEN: flags show in ps)")
	f.StringVar(&tokenFile, "token-file", "", "file holding the token")
	f.StringVar(&run, "run-id", "default", "run the token is bound to")
	f.StringVar(&file, "campaign", "", "campaign whose allowed_peers to enforce for the run")
	f.StringVar(&redisURL, "redis", "", "redis:// URL of a shared backend (default: in memory)")
	f.StringVar(&logFormat, "log-format", "text", "log format on stderr: text (logfmt) or json (one object a line); env MOSAIC_LOG_FORMAT")
	q.add(cmd)
	return cmd
}

// exchangeQuotaFlags are the limits of an exchange server (0 = the default,
// a negative value = no limit).
type exchangeQuotaFlags struct {
	maxMessage, maxQueued, maxQueuedBytes, maxMailboxes, maxTotal int64
	lease                                                         time.Duration
}

func (q *exchangeQuotaFlags) add(cmd *cobra.Command) { q.addPrefixed(cmd, "") }

// addPrefixed adds the flags, each name prefixed (e.g. "exchange-" on launch).
func (q *exchangeQuotaFlags) addPrefixed(cmd *cobra.Command, p string) {
	f := cmd.Flags()
	f.Int64Var(&q.maxMessage, p+"max-message-bytes", exchange.DefaultMaxMessageBytes, "largest message (413 beyond)")
	f.Int64Var(&q.maxQueued, p+"max-queued-messages", exchange.DefaultMaxQueuedMessages, "messages queued, and requests unanswered, per mailbox (429 beyond)")
	f.Int64Var(&q.maxQueuedBytes, p+"max-queued-bytes", exchange.DefaultMaxQueuedBytes, "bytes queued per mailbox (413 beyond)")
	f.Int64Var(&q.maxMailboxes, p+"max-mailboxes-per-run", exchange.DefaultMaxMailboxesPerRun, "mailboxes per run (429 beyond)")
	f.Int64Var(&q.maxTotal, p+"max-total-bytes", exchange.DefaultMaxTotalBytes, "bytes queued in the whole exchange (413 beyond)")
	f.DurationVar(&q.lease, p+"lease-ttl", exchange.DefaultLeaseTTL, "how long a registered agent holds its mailbox after it was last seen (a second live registration is refused until then)")
}

func (q *exchangeQuotaFlags) apply(c *exchange.Config) {
	c.MaxMessageBytes, c.MaxQueuedMessages, c.MaxQueuedBytes = q.maxMessage, q.maxQueued, q.maxQueuedBytes
	c.MaxMailboxesPerRun, c.MaxTotalBytes, c.LeaseTTL = q.maxMailboxes, q.maxTotal, q.lease
}

func newExchangePingCmd() *cobra.Command {
	var u string
	cmd := &cobra.Command{
		Use:     "ping --url URL",
		Short:   "Check that an exchange answers from this machine (used by launch's preflight)",
		Example: `  mosaic exchange ping --url http://127.0.0.1:7700`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, cancel := context.WithTimeout(cmd.Context(), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(u, "/")+"/discover", strings.NewReader("{}"))
			if err != nil {
				return err
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("exchange %s does not answer: %w", u, err)
			}
			resp.Body.Close()
			// Any protocol answer (401 without a token) proves reachability.
			if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusForbidden {
				return fmt.Errorf("%s answered HTTP %d; is it an exchange?", u, resp.StatusCode)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "exchange %s reachable\n", u)
			return nil
		},
	}
	cmd.Flags().StringVar(&u, "url", "", "exchange base URL")
	_ = cmd.MarkFlagRequired("url")
	return cmd
}

func newExchangeRelayCmd() *cobra.Command {
	var listen, to string
	var maxConns int
	cmd := &cobra.Command{
		Use:    "relay --to HOST:PORT [--listen ADDR]",
		Short:  "Forward TCP connections to an exchange (run on a login node by launch's tunnel)",
		Hidden: true,
		Long: `Listens on --listen (port 0 = a free port) and forwards every connection to --to. Prints
"relay: listening on HOSTNAME:PORT" once ready. Stops when stdin closes (its ssh session ended)
or on SIGINT/SIGTERM/SIGHUP.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := hangupContext()
			defer stop()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("relay: listen on %s: %w", listen, err)
			}
			host, _ := os.Hostname()
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			fmt.Fprintf(cmd.OutOrStdout(), "relay: listening on %s:%s\n", host, port)
			go func() { // the session's end closes stdin
				_, _ = io.Copy(io.Discard, cmd.InOrStdin())
				stop()
			}()
			return campaign.Relay(ctx, ln, to, maxConns)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "0.0.0.0:0", "listen address (port 0 = a free port)")
	cmd.Flags().StringVar(&to, "to", "", "address to forward to")
	cmd.Flags().IntVar(&maxConns, "max-conns", 1024, "most simultaneous connections")
	_ = cmd.MarkFlagRequired("to")
	return cmd
}
