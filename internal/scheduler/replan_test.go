package scheduler

import (
	"strings"
	"testing"
	"time"
)

func TestReplanDecision(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	in := func(d time.Duration) time.Time { return now.Add(d) }
	cur := func(wait time.Duration) ReplanOption {
		return ReplanOption{System: "Beta", Partition: "cpu", Start: in(wait), At: now, Source: "Beta's own estimate"}
	}
	alt := func(sys string, wait time.Duration) ReplanOption {
		return ReplanOption{System: sys, Partition: "cpu", Start: in(wait), At: now, Source: sys + "'s own estimate"}
	}
	cases := []struct {
		name     string
		in       ReplanInput
		cfg      ReplanConfig
		move     bool
		to       string
		streak   int
		inReason string
	}{
		{name: "clear gain, confirmed", in: ReplanInput{Current: cur(2 * time.Hour), Alternatives: []ReplanOption{alt("Alpha", 10*time.Minute)}, Streak: 1, StreakTo: "Alpha:cpu"},
			move: true, to: "Alpha:cpu", streak: 2, inReason: "move Beta:cpu → Alpha:cpu"},
		{name: "clear gain, first sighting waits for confirmation", in: ReplanInput{Current: cur(2 * time.Hour), Alternatives: []ReplanOption{alt("Alpha", 10*time.Minute)}},
			to: "Alpha:cpu", streak: 1, inReason: "on 1 of the 2 consecutive checks"},
		{name: "streak on another alternative restarts", in: ReplanInput{Current: cur(2 * time.Hour), Alternatives: []ReplanOption{alt("Alpha", 10*time.Minute)}, Streak: 5, StreakTo: "Gamma:cpu"},
			to: "Alpha:cpu", streak: 1},
		{name: "confirm 1 moves at once", cfg: ReplanConfig{Confirm: 1}, in: ReplanInput{Current: cur(2 * time.Hour), Alternatives: []ReplanOption{alt("Alpha", 10*time.Minute)}},
			move: true, to: "Alpha:cpu", streak: 1},
		// Absolute threshold: 30% of 20m is 6m, but 10m is needed; 8m sooner is not enough.
		{name: "below the absolute threshold", in: ReplanInput{Current: cur(20 * time.Minute), Alternatives: []ReplanOption{alt("Alpha", 12*time.Minute)}, Streak: 1, StreakTo: "Alpha:cpu"},
			inReason: "no alternative clears them"},
		// Relative threshold: 30% of 10h is 3h; 2h sooner is not enough.
		{name: "below the relative threshold", in: ReplanInput{Current: cur(10 * time.Hour), Alternatives: []ReplanOption{alt("Alpha", 8*time.Hour)}, Streak: 1, StreakTo: "Alpha:cpu"},
			inReason: "= 3h"},
		{name: "just at both thresholds moves", in: ReplanInput{Current: cur(time.Hour), Alternatives: []ReplanOption{alt("Alpha", 42*time.Minute)}, Streak: 1, StreakTo: "Alpha:cpu"},
			move: true, to: "Alpha:cpu", streak: 2},
		{name: "tie stays", in: ReplanInput{Current: cur(time.Hour), Alternatives: []ReplanOption{alt("Alpha", time.Hour)}, Streak: 1, StreakTo: "Alpha:cpu"},
			inReason: "no alternative clears them"},
		{name: "worse stays", in: ReplanInput{Current: cur(time.Hour), Alternatives: []ReplanOption{alt("Alpha", 3*time.Hour)}, Streak: 1, StreakTo: "Alpha:cpu"}},
		{name: "equal gains: the ranker's first wins", in: ReplanInput{Current: cur(3 * time.Hour), Alternatives: []ReplanOption{alt("Gamma", 0), alt("Alpha", 0)}, Streak: 1, StreakTo: "Gamma:cpu"},
			move: true, to: "Gamma:cpu", streak: 2},
		{name: "the largest gain wins", in: ReplanInput{Current: cur(3 * time.Hour), Alternatives: []ReplanOption{alt("Gamma", time.Hour), alt("Alpha", 0)}, Streak: 1, StreakTo: "Alpha:cpu"},
			move: true, to: "Alpha:cpu", streak: 2},
		{name: "budget used up", in: ReplanInput{Current: cur(5 * time.Hour), Alternatives: []ReplanOption{alt("Alpha", 0)}, Moves: 2, Streak: 1, StreakTo: "Alpha:cpu"},
			inReason: "move budget is 2"},
		{name: "bigger budget", cfg: ReplanConfig{MaxMoves: 3}, in: ReplanInput{Current: cur(5 * time.Hour), Alternatives: []ReplanOption{alt("Alpha", 0)}, Moves: 2, Streak: 1, StreakTo: "Alpha:cpu"},
			move: true, to: "Alpha:cpu", streak: 2, inReason: "move 3 of 3"},
		{name: "stale current estimate", in: ReplanInput{Current: ReplanOption{System: "Beta", Partition: "cpu", Start: in(5 * time.Hour), At: now.Add(-time.Hour)},
			Alternatives: []ReplanOption{alt("Alpha", 0)}, Streak: 1, StreakTo: "Alpha:cpu"}, inReason: "refresh it"},
		{name: "unknown current estimate", in: ReplanInput{Current: ReplanOption{System: "Beta", Partition: "cpu"}, Alternatives: []ReplanOption{alt("Alpha", 0)}},
			inReason: "stale or unknown"},
		{name: "stale alternative is not weighed", in: ReplanInput{Current: cur(5 * time.Hour),
			Alternatives: []ReplanOption{{System: "Alpha", Partition: "cpu", Start: now, At: now.Add(-2 * time.Hour)}}, Streak: 1, StreakTo: "Alpha:cpu"}},
		{name: "starts now: keep the place", in: ReplanInput{Current: cur(0), Alternatives: []ReplanOption{alt("Alpha", 0)}}, inReason: "keep its place"},
		// Back to a system the task left: 2× the 36m needed for a 2h wait = 1h12m.
		{name: "moving back needs a larger margin", in: ReplanInput{Current: cur(2 * time.Hour), Alternatives: []ReplanOption{alt("Alpha", time.Hour)}, Left: []string{"Alpha"}, Moves: 1, Streak: 1, StreakTo: "Alpha:cpu"}},
		{name: "moving back with a large enough margin", in: ReplanInput{Current: cur(2 * time.Hour), Alternatives: []ReplanOption{alt("Alpha", 30*time.Minute)}, Left: []string{"Alpha"}, Moves: 1, Streak: 1, StreakTo: "Alpha:cpu"},
			move: true, to: "Alpha:cpu", streak: 2},
		{name: "the current placement itself is not an alternative", in: ReplanInput{Current: cur(2 * time.Hour), Alternatives: []ReplanOption{{System: "Beta", Partition: "cpu", Start: now, At: now}}}},
		// At 60×, a 1-minute wall-clock wait is an hour of site time: thresholds apply in site time.
		{name: "simulated clock", in: ReplanInput{Speed: 60, Current: cur(2 * time.Minute), Alternatives: []ReplanOption{alt("Alpha", 0)}, Streak: 1, StreakTo: "Alpha:cpu"},
			move: true, to: "Alpha:cpu", streak: 2, inReason: "expected to start in 2h"},
		{name: "simulated clock below threshold", in: ReplanInput{Speed: 60, Current: cur(20 * time.Second), Alternatives: []ReplanOption{alt("Alpha", 12*time.Second)}, Streak: 1, StreakTo: "Alpha:cpu"}},
		// A job of a 2-minute limit: the absolute threshold is a quarter of it (30s), so a
		// 1m30s gain on a 2-minute wait clears max(30s, 36s); the same gain on an hour's job
		// is below its 10 minutes.
		{name: "short job: scaled absolute threshold", in: ReplanInput{Walltime: 2 * time.Minute, Current: cur(2 * time.Minute), Alternatives: []ReplanOption{alt("Alpha", 30*time.Second)}, Streak: 1, StreakTo: "Alpha:cpu"},
			move: true, to: "Alpha:cpu", streak: 2, inReason: "max(30s (for a 2m walltime), 30% of the 2m wait left) = 36s"},
		{name: "long job: the full absolute threshold", in: ReplanInput{Walltime: time.Hour, Current: cur(2 * time.Minute), Alternatives: []ReplanOption{alt("Alpha", 30*time.Second)}, Streak: 1, StreakTo: "Alpha:cpu"},
			inReason: "max(10m, 30% of"},
		// The floor: a 10-second job still needs 5 s, what a submit and a cancel cost.
		{name: "tiny job: the floor", in: ReplanInput{Walltime: 10 * time.Second, Current: cur(8 * time.Second), Alternatives: []ReplanOption{alt("Alpha", 4*time.Second)}, Streak: 1, StreakTo: "Alpha:cpu"},
			inReason: "max(5s (for a 10s walltime)"},
		{name: "alternative already free counts from now", in: ReplanInput{Current: cur(time.Hour), Alternatives: []ReplanOption{alt("Alpha", -time.Hour)}, Streak: 1, StreakTo: "Alpha:cpu"},
			move: true, to: "Alpha:cpu", streak: 2, inReason: "1h sooner"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Now = now
			d := Replan(c.in, c.cfg)
			if d.Move != c.move {
				t.Fatalf("move = %v, want %v: %s | %s", d.Move, c.move, d.Reason, d.TableText(now, c.in.Speed))
			}
			to := ""
			if d.To != nil {
				to = d.To.Key()
			}
			if to != c.to || d.Streak != c.streak {
				t.Fatalf("to %q streak %d, want %q streak %d: %s", to, d.Streak, c.to, c.streak, d.Reason)
			}
			if !strings.Contains(d.Reason, c.inReason) {
				t.Fatalf("reason %q lacks %q", d.Reason, c.inReason)
			}
			if len(d.Table) != 1+len(c.in.Alternatives) {
				t.Fatalf("table has %d rows, want the current and every alternative: %s", len(d.Table), d.TableText(now, c.in.Speed))
			}
		})
	}
}

// TestReplanNeverForAWorsePlace: over many random inputs (walltimes from unknown to
// hours), a move always goes to an alternative that starts strictly sooner by at least
// both thresholds, and never by less than the floor.
func TestReplanNeverForAWorsePlace(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	cfg := DefaultReplanConfig()
	scaled := 0
	for i := range 5000 {
		wait := time.Duration(i%97) * 7 * time.Minute
		a := time.Duration((i*31)%113) * 5 * time.Minute
		wall := []time.Duration{0, 30 * time.Second, 3 * time.Minute, 20 * time.Minute, 4 * time.Hour}[i%5]
		if i%2 == 1 { // short jobs, short waits
			wait, a = wait/60, a/60
		}
		in := ReplanInput{Now: now, Walltime: wall, Current: ReplanOption{System: "B", Partition: "p", Start: now.Add(wait), At: now},
			Alternatives: []ReplanOption{{System: "A", Partition: "p", Start: now.Add(a), At: now}}, Streak: 1, StreakTo: "A:p"}
		d := Replan(in, cfg)
		if !d.Move {
			continue
		}
		gain := wait - a
		if gain < cfg.GainFor(wall) || gain < cfg.MinGainFloor || float64(gain) < cfg.MinGainRatio*float64(wait) {
			t.Fatalf("moved for a gain of %s on a wait of %s: %s", gain, wait, d.Reason)
		}
		if gain < cfg.MinGain {
			scaled++
		}
	}
	if scaled == 0 {
		t.Fatal("no move below the unscaled 10 minutes: the short jobs' cases do not exercise the scaling")
	}
}

// TestReplanThresholdsScaleWithTheJob: the absolute threshold shrinks with the job's
// walltime and the check interval with the wait it still expects, each between its
// floor and the configured value; unknown (walltime 0, wait negative) keeps the
// configured values.
func TestReplanThresholdsScaleWithTheJob(t *testing.T) {
	cfg := DefaultReplanConfig()
	for _, c := range []struct{ wall, gain time.Duration }{
		{0, 10 * time.Minute},
		{10 * time.Second, 5 * time.Second},
		{time.Minute, 15 * time.Second},
		{2 * time.Minute, 30 * time.Second},
		{20 * time.Minute, 5 * time.Minute},
		{40 * time.Minute, 10 * time.Minute},
		{48 * time.Hour, 10 * time.Minute},
	} {
		if g := cfg.GainFor(c.wall); g != c.gain {
			t.Errorf("GainFor(%s) = %s, want %s", c.wall, g, c.gain)
		}
	}
	for _, c := range []struct{ wait, every time.Duration }{
		{-1, 10 * time.Minute},
		{0, 5 * time.Second},
		{30 * time.Second, 5 * time.Second},
		{time.Minute, 6 * time.Second},
		{2 * time.Minute, 12 * time.Second},
		{50 * time.Minute, 5 * time.Minute},
		{3 * time.Hour, 10 * time.Minute},
	} {
		if e := cfg.CheckEvery(10*time.Minute, c.wait); e != c.every {
			t.Errorf("CheckEvery(10m, wait %s) = %s, want %s", c.wait, e, c.every)
		}
	}
	// The caller's interval is an upper bound, also below the floor (a test engine's 2s).
	if e := cfg.CheckEvery(2*time.Second, time.Minute); e != 2*time.Second {
		t.Errorf("CheckEvery(2s, 1m) = %s, want 2s", e)
	}
	// Zero fields take the defaults; set ones are kept.
	got := ReplanConfig{MinGain: time.Hour, MinGainShare: 0.5}.WithDefaults()
	if got.GainFor(30*time.Minute) != 15*time.Minute || got.MinGainFloor != 5*time.Second || got.EveryShare != 0.1 || got.EveryFloor != 5*time.Second {
		t.Errorf("WithDefaults: %+v", got)
	}
}
