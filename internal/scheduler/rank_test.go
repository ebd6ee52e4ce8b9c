package scheduler

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestWaitScoreOnTheJobsScale: the wait score weighs a wait against the job's own
// walltime up to an hour (WaitScale), at least a minute (MinWaitScale); an unknown
// walltime uses the hour.
func TestWaitScoreOnTheJobsScale(t *testing.T) {
	for _, tc := range []struct {
		wait, wall time.Duration
		want       float64
	}{
		{0, time.Minute, 1},
		{0, 0, 1},
		{time.Hour, 0, 0.5},                               // unknown walltime: the hour
		{time.Hour, 48 * time.Hour, 0.5},                  // long jobs keep the hour
		{3 * time.Hour, 48 * time.Hour, 0.25},             // ...so a long job does not make a wait cheap
		{time.Minute, time.Minute, 0.5},                   // a one-minute job waiting one minute
		{3 * time.Minute, time.Minute, 0.25},              // scores like an hour's job waiting three hours
		{3 * time.Hour, time.Hour, 0.25},                  // this one
		{10 * time.Minute, 30 * time.Minute, 0.75},        // 1/(1 + 1/3)
		{30 * time.Second, 10 * time.Second, 2.0 / 3},     // under a minute: the minute
		{maxWait, time.Minute, 1 / (1 + 14*24*60.0)},      // finite at the cap
		{-time.Second, time.Hour, 1 / (1 - 1.0/3600)},     // (waits are clamped at 0 before)
		{2 * time.Minute, -time.Minute, 1 / (1 + 2.0/60)}, // a negative walltime is unknown
	} {
		if got := waitScore(tc.wait, tc.wall); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("waitScore(%s, %s) = %v, want %v", tc.wait, tc.wall, got, tc.want)
		}
	}
}

// TestShortJobStartsNowRatherThanWaitForACheaperSite is the demo federation's case: a
// one-minute, 64-core job can start now on a core-charged shared partition, or in 3
// minutes on an exclusive, node-charged one at a third of the rate (so it costs 0.5%
// as much). With the wait scored in hours the 3 minutes looked like nothing and the
// cheap site won; on the job's scale they are three times its length, and it starts
// now. A four-hour job in the same picture still takes the cheap site: 3 minutes are
// little next to four hours (and next to the hour a long job's wait is scored on).
func TestShortJobStartsNowRatherThanWaitForACheaperSite(t *testing.T) {
	snap := &model.ResourceSnapshot{TakenAt: fixedNow, Records: []model.ResourceRecord{
		cpuRec("Cheap@A", "gg", "acct-a", 144, 256, 100, 0, 10, 48, true, 0.33),
		cpuRec("Now@B", "shared", "acct-b", 128, 256, 100, 10, 0, 48, false, 1),
	}}
	model.SortRecords(snap.Records)
	est := fixedEstimator{"Cheap@A": 3 * time.Minute, "Now@B": 0}
	for _, tc := range []struct {
		wall model.Duration
		want string
	}{
		{model.Duration(time.Minute), "Now@B/shared/acct-b"},
		{hours(4), "Cheap@A/gg/acct-a"},
	} {
		task := &model.Task{ID: "t-short", Name: "short", Command: "./run", Envelope: model.Envelope{
			CPUCores: model.IntRange{Min: 64, Max: 64}, Walltime: model.DurationRange{Min: tc.wall, Max: tc.wall},
			Objective: model.ObjEarliestStart}}
		d, err := newTestScheduler(Options{Estimator: est}).Place(context.Background(), task, snap, PlaceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if d.Chosen != tc.want {
			var tab string
			for _, c := range d.Feasible() {
				tab += "\n  " + c.Key() + " wait " + c.EstWait.String()
			}
			t.Errorf("walltime %s: chose %s, want %s; candidates:%s", tc.wall, d.Chosen, tc.want, tab)
		}
	}
}

// Waits of hours are weighed against each other, as costs are: relative to the best
// candidate's. Scored as an absolute 1/(1+wait/hour), a 6-hour and a 40-hour wait
// scored 0.14 and 0.02, and a site charging 16× fewer SUs took the job for 34 more
// hours of wait under earliest_start (nasa-lublin seed 7, docs/PLACEMENT.md). Under
// min_cost the cheaper site still wins.
func TestLongWaitsAreWeighedAgainstTheBest(t *testing.T) {
	snap := &model.ResourceSnapshot{TakenAt: fixedNow, Records: []model.ResourceRecord{
		cpuRec("Near@A", "normal", "acct-a", 128, 256, 100, 0, 10, 48, false, 16),
		cpuRec("Far@B", "normal", "acct-b", 128, 256, 100, 0, 10, 48, false, 1),
	}}
	model.SortRecords(snap.Records)
	est := fixedEstimator{"Near@A": 6 * time.Hour, "Far@B": 40 * time.Hour}
	for _, tc := range []struct {
		obj  model.Objective
		want string
	}{
		{model.ObjEarliestStart, "Near@A/normal/acct-a"},
		{model.ObjMinCost, "Far@B/normal/acct-b"},
	} {
		task := &model.Task{ID: "t-long", Name: "long", Command: "./run", Envelope: model.Envelope{
			CPUCores: model.IntRange{Min: 64, Max: 64}, Walltime: model.DurationRange{Min: hours(24), Max: hours(24)},
			Objective: tc.obj}}
		d, err := newTestScheduler(Options{Estimator: est}).Place(context.Background(), task, snap, PlaceOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var tab string
		for _, c := range d.Feasible() {
			tab += fmt.Sprintf("\n  %s wait %s cost %.0f SU scores %+v", c.Key(), c.EstWait, c.CostSU, c.Scores)
			if c.Key() == tc.want && tc.obj == model.ObjEarliestStart && c.Scores.Wait != 1 {
				t.Errorf("the least wait scores %.4f, want 1", c.Scores.Wait)
			}
		}
		if d.Chosen != tc.want {
			t.Errorf("%s: chose %s, want %s; candidates:%s", tc.obj, d.Chosen, tc.want, tab)
		}
	}
}
