package replay

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// WriteCalibration prints, for every policy with site-estimated placements, the
// calibration of its estimates per partition: quantiles of observed/predicted wait
// (with waits.DefaultSlack added to both) for the site's own estimate and for the
// learned correction the ranker used (the same as the site's when the policy has no
// learner), their mean absolute log-error and the share within 2×.
func (r *Report) WriteCalibration(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tPARTITION\tJOBS\tSAID NOW (LATE)\tSAID WAIT\tSITE p10/p50/p90\tSITE |LOG ERR|\tSITE ≤2×\tLEARNED p10/p50/p90\tLEARNED |LOG ERR|\tLEARNED ≤2×")
	seen := false
	for _, x := range r.Results {
		for _, c := range x.Calibration {
			seen = true
			var part string
			if c.System == "*" {
				part = "all"
			} else {
				short, _, _ := strings.Cut(c.System, "@")
				part = short + "/" + c.Partition
			}
			if c.Waiting == 0 {
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d (%d)\t0\t-\t-\t-\t-\t-\t-\n", x.Policy, part, c.Jobs, c.Now, c.NowLate)
				continue
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d (%d)\t%d\t%.2f/%.2f/%.2f\t%.2f\t%.0f%%\t%.2f/%.2f/%.2f\t%.2f\t%.0f%%\n", x.Policy, part, c.Jobs, c.Now, c.NowLate, c.Waiting,
				c.Raw.P10, c.Raw.P50, c.Raw.P90, c.Raw.MAE, 100*c.Raw.Within2x,
				c.Corrected.P10, c.Corrected.P50, c.Corrected.P90, c.Corrected.MAE, 100*c.Corrected.Within2x)
		}
	}
	if !seen {
		fmt.Fprintln(w, "no placement was made on a site estimate: nothing to calibrate")
		return nil
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "(SAID NOW: jobs the site expected to start within a minute, in brackets those that waited longer;")
	fmt.Fprintln(w, " the quantiles are of observed/predicted wait of the SAID WAIT jobs, 1 min added to both:")
	fmt.Fprintln(w, " < 1 the estimate was pessimistic, > 1 optimistic; LEARNED is the correction in use at placement)")
	return nil
}
