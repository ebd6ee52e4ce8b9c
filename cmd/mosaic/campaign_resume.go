package main

import (
	"errors"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/internal/campaign"
)

func newCampaignResumeCmd() *cobra.Command {
	var sitesFile, redisURL string
	var quotas exchangeQuotaFlags
	cmd := &cobra.Command{
		Use:   "resume RUN [--redis-url URL]",
		Short: "Take over a run whose launcher died: serve its exchange again and follow it to the end",
		Long: `For a run whose launcher is gone (killed, its machine rebooted). The launcher's exchange
comes back on the address it listened on, from the Redis that holds its state (campaign
"exchange": {"backend": "redis", "redis_url": ...}): mailboxes, queued messages, tokens and
the timeline. Its agents, which retry for up to 10 minutes, reconnect and carry on; reverse
tunnels are reopened on the ports the agents know. Resume then follows every site like
launch (states, timeline.json, counts) until the run ends; Ctrl-C stops every site.

A run on an external exchange (--exchange-url) is only followed. Refused (exit 126): a run that
is over, one still followed by a live launcher or resume, and one whose exchange kept its
state in the launcher's memory (exchange.backend "memory"): that state died with it, so stop
the run (mosaic campaign stop RUN) and launch it again on Redis.`,
		Example: `  mosaic campaign resume chat-1
  mosaic campaign resume chat-1 --redis-url redis://127.0.0.1:6379/0`,
		Args:              runArg(true),
		ValidArgsFunction: completeRunArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The run first: an unknown run is named as such, not as a missing catalog.
			if _, _, err := findRunFirst(args[0]); err != nil {
				return err
			}
			cfg, cat, err := campaignEnv(sitesFile)
			if err != nil {
				return usage(err)
			}
			if cat == nil {
				return usagef("no sites catalog: pass --sites FILE or set MOSAIC_SITES (the run's sites are followed through it)")
			}
			o := campaign.ResumeOptions{Root: campaign.CampaignsRoot(cfg.StateDir), RunID: args[0], Catalog: cat, RedisURL: redisURL, Out: cmd.ErrOrStderr()}
			quotas.apply(&o.ExchangeLimits)
			if !cmd.Flags().Changed("exchange-max-message-bytes") {
				o.ExchangeLimits.MaxMessageBytes = 0 // the campaign's, else the default
			}
			ctx, stop := hangupContext()
			defer stop()
			if err := campaign.Resume(ctx, o); err != nil {
				switch {
				case errors.Is(err, campaign.ErrNotResumable):
					return usage(err)
				case ctx.Err() != nil:
					return &exitError{code: exitInterrupted, kind: kindInterrupted, msg: err.Error()}
				}
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&sitesFile, "sites", "", "sites catalog (default $MOSAIC_SITES)")
	f.StringVar(&redisURL, "redis-url", "", "the Redis holding the run's exchange state, when it is not the campaign file's exchange.redis_url any more")
	quotas.addPrefixed(cmd, "exchange-")
	return cmd
}
