package campaign

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
)

// Where a run's timeline was read (RunTimeline.Source).
const (
	TimelineFromRunExchange = "run-exchange"  // live, from the exchange the run's launcher uses (its own or an external one)
	TimelineFromRunDir      = "run-directory" // timeline.json, as the launcher last recorded it
)

// RunExchangeTimeout bounds the live read of a run's exchange; past it the run
// directory answers.
const RunExchangeTimeout = 5 * time.Second

// RunTimeline is a run's timeline as ReadRunTimeline found it.
type RunTimeline struct {
	RunID    string                   `json:"run_id"`
	Source   string                   `json:"source"`
	Messages []exchange.MessageRecord `json:"messages"`
	Counts   []exchange.SiteCount     `json:"counts"`
}

// ReadRunTimeline reads a run's timeline and per-site counts: live from the
// exchange its launcher uses (the URL the run directory records, with the run
// token of its 0600 file; embedded in the launcher or external) while the run
// is not over; else, or when that exchange does not answer, from the run
// directory (timeline.json and the counts state.json last recorded). Messages
// are in time order.
func ReadRunTimeline(ctx context.Context, d *RunDir) (*RunTimeline, error) {
	st := d.State()
	out := &RunTimeline{RunID: st.RunID}
	if tl, ok := liveTimeline(ctx, d); ok {
		out.Source, out.Messages, out.Counts = TimelineFromRunExchange, tl.Messages, tl.Counts
	} else {
		out.Source = TimelineFromRunDir
		if err := d.ReadJSON("timeline.json", &out.Messages); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("run %s: timeline.json: %w", st.RunID, err)
		}
		out.Counts = st.Counts
	}
	if out.Messages == nil {
		out.Messages = []exchange.MessageRecord{}
	}
	if out.Counts == nil {
		out.Counts = []exchange.SiteCount{}
	}
	sort.SliceStable(out.Messages, func(i, j int) bool { return out.Messages[i].Time.Before(out.Messages[j].Time) })
	return out, nil
}

// liveTimeline reads the run's timeline from the exchange its launcher uses,
// while the run is not over (ok=false: none recorded, the run ended, no
// token, or the exchange did not answer).
func liveTimeline(ctx context.Context, d *RunDir) (*agent.Timeline, bool) {
	st := d.State()
	if st.ExchangeLocalURL == "" || IsFinalRunState(st.State) {
		return nil, false
	}
	tok, err := d.Token()
	if err != nil || tok == "" {
		return nil, false
	}
	cl, err := agent.New(st.ExchangeLocalURL, tok, agent.WithReconnect(0, nil))
	if err != nil {
		return nil, false
	}
	ctx, cancel := context.WithTimeout(ctx, RunExchangeTimeout)
	defer cancel()
	tl, err := cl.Timeline(ctx)
	if err != nil || tl.Run != st.RunID {
		return nil, false
	}
	return tl, true
}

// IsFinalRunState reports whether a run in state s is over (finished, failed
// or stopped): nothing follows it any more.
func IsFinalRunState(s string) bool { return isFinalRunState(s) }
