package replay

import (
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/scheduler"
)

// TestReplayReplansWithTheSchedulerDecision: a job placed on Alpha (2h to go, by both
// sites' estimates) moves to Beta once Beta's jobs end far before their walltime (the
// estimates assumed 5h): the replay weighs waiting jobs with scheduler.Replan, on two
// consecutive checks 10 minutes apart. With the confirmation raised out of reach it
// stays, which shows the thresholds given to the replay are the ones deciding.
func TestReplayReplansWithTheSchedulerDecision(t *testing.T) {
	fed := twoSites(4, 8)
	cfg := Config{Federation: fed, Home: "Alpha",
		Preload: []Preload{
			{System: "Alpha", Partition: "p", Nodes: 4, CoresPerNode: 8, Runtime: 2 * time.Hour, Walltime: 2 * time.Hour},
			{System: "Beta", Partition: "p", Nodes: 4, CoresPerNode: 8, Runtime: 20 * time.Minute, Walltime: 5 * time.Hour},
		},
		Jobs: []Job{rigidJob("j1", 30*time.Second, 8, time.Hour, 2*time.Hour)}}
	res := runPolicy(t, cfg, PolicyMosaic)
	o := res.Outcomes[0]
	if o.System != "Beta" || o.Migrations != 1 {
		t.Fatalf("j1 ended on %s after %d migrations, want moved once to Beta", o.System, o.Migrations)
	}
	// Beta frees at 20m; checks at 10m-past-submission steps see it at 21m and 31m.
	if o.Wait < 20*time.Minute || o.Wait > 45*time.Minute {
		t.Fatalf("j1 waited %s, want about half an hour (moved once Beta was free and confirmed)", o.Wait)
	}
	// The same with a move needing 100 confirmations: it stays on Alpha for the full 2h.
	cfg.Replan = scheduler.ReplanConfig{Confirm: 100}
	o = runPolicy(t, cfg, PolicyMosaic).Outcomes[0]
	if o.System != "Alpha" || o.Migrations != 0 || o.Wait < 110*time.Minute {
		t.Fatalf("with Confirm 100: j1 on %s, %d migrations, wait %s; want it kept on Alpha", o.System, o.Migrations, o.Wait)
	}
	// The earliest-start baseline never moves: it waits the 2h.
	if o := runPolicy(t, cfg, PolicyEarliestStart).Outcomes[0]; o.Migrations != 0 || o.System != "Alpha" {
		t.Fatalf("earliest-start: %s, %d migrations", o.System, o.Migrations)
	}
}

// TestReplayReplansShortJobsAtTheirScale: a job of a 3-minute limit is placed on Alpha
// (full for 8 minutes; Beta's jobs ask for 9) and Beta's jobs end after 2 minutes. The
// replay weighs it every tick (its interval, a tenth of its limit, is under the tick)
// and needs max(45 s, 30% of the wait left): it moves to Beta and starts minutes sooner.
// With the old fixed scale (10-minute interval and threshold, here by shares so large
// that both stay at 10 minutes) it is never weighed before Alpha frees up.
func TestReplayReplansShortJobsAtTheirScale(t *testing.T) {
	fed := twoSites(4, 8)
	cfg := Config{Federation: fed, Home: "Alpha",
		Preload: []Preload{
			{System: "Alpha", Partition: "p", Nodes: 4, CoresPerNode: 8, Runtime: 8 * time.Minute, Walltime: 8 * time.Minute},
			{System: "Beta", Partition: "p", Nodes: 4, CoresPerNode: 8, Runtime: 2 * time.Minute, Walltime: 9 * time.Minute},
		},
		Jobs: []Job{rigidJob("j1", 30*time.Second, 8, time.Minute, 3*time.Minute)}}
	o := runPolicy(t, cfg, PolicyMosaic).Outcomes[0]
	if o.System != "Beta" || o.Migrations != 1 || o.Wait > 5*time.Minute {
		t.Fatalf("j1 on %s after %d migrations, waited %s; want moved once to Beta, started within 5 minutes", o.System, o.Migrations, o.Wait)
	}
	cfg.Replan = scheduler.ReplanConfig{MinGainShare: 100, EveryShare: 100}
	o = runPolicy(t, cfg, PolicyMosaic).Outcomes[0]
	if o.System != "Alpha" || o.Migrations != 0 || o.Wait < 7*time.Minute {
		t.Fatalf("at the fixed 10-minute scale: j1 on %s, %d migrations, waited %s; want it kept on Alpha about 8 minutes", o.System, o.Migrations, o.Wait)
	}
}
