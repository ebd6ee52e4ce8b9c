package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
)

func newCampaignTimelineCmd() *cobra.Command {
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "timeline RUN",
		Short: "Show a launched run's messages across sites in time order, and counts per site",
		Long: `Reads the run's timeline live from the exchange its launcher uses (the launcher's own,
or the external one of --exchange-url, with the run token of the run directory) while the
run is not over; else, or when that exchange does not answer, from the run directory
(timeline.json and the counts the launcher last recorded). "source" says which.`,
		Example: `  mosaic campaign timeline chat-1
  mosaic campaign timeline chat-1 --jq '.messages[] | select(.cross_site) | .kind'`,
		Args:              runArg(true),
		ValidArgsFunction: completeRunArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, d, err := findRunFirst(args[0]) // an unknown run: exit 126, as status and stop
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			tl, err := campaign.ReadRunTimeline(ctx, d)
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), tl)
			}
			return printTimeline(cmd.OutOrStdout(), tl)
		},
	}
	addJSONFlag(cmd, &j, campaign.RunTimeline{})
	return cmd
}

func printTimeline(w io.Writer, tl *campaign.RunTimeline) error {
	fmt.Fprintf(w, "run %s: %d messages (from the %s)\n", tl.RunID, len(tl.Messages), map[string]string{
		campaign.TimelineFromRunExchange: "run's exchange", campaign.TimelineFromRunDir: "run directory"}[tl.Source])
	tw := table(w)
	fmt.Fprintln(tw, "TIME\tFROM\tSITE\tTO\tSITE\tKIND\tBYTES\tCROSS-SITE")
	for _, m := range tl.Messages {
		cross := ""
		if m.CrossSite() {
			cross = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\n", m.Time.Local().Format(time.TimeOnly+".000"), dash(m.Src), dash(m.SrcSite),
			dash(m.Dest), dash(m.DestSite), m.Kind, m.Size, cross)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	printSiteCounts(w, tl.Counts)
	return nil
}

// printSiteCounts prints per-site message counts as the launcher does.
func printSiteCounts(w io.Writer, counts []exchange.SiteCount) {
	for _, c := range counts {
		fmt.Fprintf(w, "  site %-12s mailboxes %d  sent %d  received %d  cross-site %d\n", dash(c.Site), c.Mailboxes, c.Sent, c.Received, c.CrossSite)
	}
}
