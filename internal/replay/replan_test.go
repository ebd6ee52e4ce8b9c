package replay

import (
	"context"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/scheduler"
	"github.com/mosaic-hpc/mosaic/internal/sim"
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

// TestShrunkCandidatesAreEstimatedAsSubmitted: a moldable job (8..16 cores, 6 h at 16)
// arrives where Alpha has 8 cores free for 10 hours (then a whole-node job holds its
// reservation) and Beta is full for 2 hours. At 8 cores on Alpha the job needs 12 hours,
// so it does not fit the hole: Alpha would start it at 11h, Beta at 2h. The sites must
// be asked about the job as the replay submits it (12 hours at 8 cores); asked at the
// envelope's 6 hours, Alpha said "now", the job went there and waited until
// replanning moved it.
func TestShrunkCandidatesAreEstimatedAsSubmitted(t *testing.T) {
	fed := twoSites(1, 16)
	cfg := Config{Federation: fed, Home: "Alpha",
		Preload: []Preload{
			{System: "Alpha", Partition: "p", Nodes: 1, CoresPerNode: 8, Runtime: 10 * time.Hour, Walltime: 10 * time.Hour},
			{At: time.Second, System: "Alpha", Partition: "p", Nodes: 1, CoresPerNode: 16, Runtime: time.Hour, Walltime: time.Hour},
			{System: "Beta", Partition: "p", Nodes: 1, CoresPerNode: 16, Runtime: 2 * time.Hour, Walltime: 2 * time.Hour},
		},
		Jobs: []Job{{ID: "j1", Arrival: 30 * time.Second, Runtime: 6 * time.Hour, Walltime: 6 * time.Hour, MinCores: 8, MaxCores: 16}}}
	o := runPolicy(t, cfg, PolicyMosaic).Outcomes[0]
	if o.System != "Beta" || o.Migrations != 0 {
		t.Fatalf("j1 ended on %s after %d migrations (%d cores, waited %s); want placed on Beta at once", o.System, o.Migrations, o.Cores, o.Wait)
	}
	if o.Wait < 2*time.Hour-time.Minute || o.Wait > 2*time.Hour+time.Minute {
		t.Fatalf("j1 waited %s, want about 2h (Beta frees then)", o.Wait)
	}

	// The estimator itself: for the job being placed, 8 cores on Alpha are asked about
	// at 12 hours; between decisions (no job) at the spec's own walltime.
	w, err := newWorld(fed, 1)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := w.unitFor("Alpha", "p")
	for _, p := range cfg.Preload[:2] {
		if _, err := u.submit(sim.JobRequest{Partition: "p", Nodes: 1, CoresPerNode: p.CoresPerNode, Runtime: p.Runtime, Walltime: p.Walltime}); err != nil {
			t.Fatal(err)
		}
	}
	u.c.AdvanceTo(Epoch.Add(time.Minute))
	w.now = Epoch.Add(time.Minute)
	spec := model.JobSpec{System: "Alpha", Partition: "p", Nodes: 1, NTasks: 1, CPUsPerTask: 8, Walltime: model.Duration(6 * time.Hour)}
	est := estimator{w}
	asSpec, err := est.EstimateStart(context.Background(), "Alpha", spec)
	if err != nil {
		t.Fatal(err)
	}
	w.placing = &jobState{Job: cfg.Jobs[0]}
	asSubmitted, err := est.EstimateStart(context.Background(), "Alpha", spec)
	if err != nil {
		t.Fatal(err)
	}
	if d := asSpec.Sub(w.now); d > time.Minute {
		t.Errorf("estimate at the spec's 6h: in %s, want now (it fits the 10-hour hole)", d)
	}
	if d := asSubmitted.Sub(w.now); d < 10*time.Hour {
		t.Errorf("estimate for the job as submitted (12h at 8 cores): in %s, want after Alpha's 10-hour hole", d)
	}
}
