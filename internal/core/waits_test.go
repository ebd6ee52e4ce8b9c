package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// The core's learner of site-estimate errors is fed from the store's history when it
// starts (attempts whose site said 3h and that started after 1h, in a simulated
// system's time at 60×) and from every attempt the monitor then sees starting.
func TestCoreLearnsSiteEstimateErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, filepath.Join(dir, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	t0 := time.Now().Add(-time.Hour).UTC()
	if err := st.CreateTask(ctx, &store.TaskRow{Task: model.Task{ID: "old", Name: "old", Command: "true", State: model.TaskSucceeded, CreatedAt: t0, UpdatedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	const speed = 60
	wall := func(d time.Duration) time.Duration { return d / speed }
	for n := 1; n <= 10; n++ {
		created := t0.Add(time.Duration(n) * time.Minute)
		est, started := created.Add(wall(3*time.Hour)), created.Add(wall(time.Hour))
		if err := st.CreateAttempt(ctx, &model.Attempt{TaskID: "old", N: n, Tag: model.JobTag("old", n), System: "Alpha", Partition: "gpu",
			State: model.JobSucceeded, Spec: model.JobSpec{Tag: model.JobTag("old", n), Nodes: 1}, CreatedAt: created, EstimatedStart: &est}); err != nil {
			t.Fatal(err)
		}
		if err := st.UpdateAttempt(ctx, "old", n, store.AttemptUpdate{Started: &started}); err != nil {
			t.Fatal(err)
		}
	}

	cat, err := site.Parse("sites.yaml", []byte("systems:\n"+fmt.Sprintf(clockSystem, "Alpha")))
	if err != nil {
		t.Fatal(err)
	}
	p, err := simprov.New(cat.Systems[0], site.SimGlobal{Seed: 3}, simprov.Options{Speed: speed, WorkDir: filepath.Join(dir, "sim"),
		Tick: 20 * time.Millisecond, Configure: func(c *sim.Config) {
			c.WarmUp = -1
			for i := range c.Partitions {
				c.Partitions[i].Load.Utilization = 0
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	t.Cleanup(func() { p.Close() })
	c, err := New(Options{Catalog: cat, Store: st, Providers: []provider.Provider{p}, Tick: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if got := c.waits.Correct("Alpha", "gpu", 3*time.Hour); got < 59*time.Minute || got > 61*time.Minute {
		t.Fatalf("after loading the store's history, a 3h site estimate is corrected to %s, want about 1h", got)
	}

	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go c.Run(rctx)
	env := model.Envelope{GPUs: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)}}
	var res *SubmitResult
	for range 100 { // the first probe may not have finished
		res, err = c.SubmitTask(ctx, SubmitRequest{Name: "new", Command: "sleep 60", Envelope: &env})
		if err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	ch := res.Decision.ChosenCandidate()
	// The idle node starts it now; the history is of 3h estimates, which says
	// nothing of "now": the site's answer stands.
	if ch.WaitSource != "site" || ch.SiteWait != nil || ch.EstWait != 0 {
		t.Fatalf("chosen %s: source %q wait %s site wait %v; want the site's uncorrected 'now'", ch.Key(), ch.WaitSource, ch.EstWait, ch.SiteWait)
	}
	total := func() int64 {
		for _, s := range c.waits.Stats() {
			if s.System == "Alpha" && s.Partition == "gpu" {
				return s.Total
			}
		}
		return 0
	}
	deadline := time.Now().Add(20 * time.Second)
	for total() < 11 && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if got := total(); got != 11 {
		td, _ := c.Task(ctx, res.Task.ID)
		t.Fatalf("learner has %d observations of Alpha/gpu, want 11 (10 from the store, 1 from the new attempt); attempts %+v", got, td.Attempts)
	}
}

// countingSim counts the start-estimate calls the core makes of a simulated system.
type countingSim struct {
	*simprov.Provider
	mu      sync.Mutex
	single  int
	batches []int
}

func (c *countingSim) EstimateStart(ctx context.Context, spec model.JobSpec) (time.Time, error) {
	c.mu.Lock()
	c.single++
	c.mu.Unlock()
	return c.Provider.EstimateStart(ctx, spec)
}

func (c *countingSim) EstimateStarts(ctx context.Context, specs []model.JobSpec) ([]provider.Estimate, error) {
	c.mu.Lock()
	c.batches = append(c.batches, len(specs))
	c.mu.Unlock()
	return c.Provider.EstimateStarts(ctx, specs)
}

// A placement asks every feasible candidate's site in one batch per system: with 12
// partitions on each of two systems, two calls of 12 specs (before, 8 single calls in
// all, and 16 of the 24 candidates ranked on the queue model).
func TestCoreBatchesSiteEstimatesPerSystem(t *testing.T) {
	var b strings.Builder
	b.WriteString("systems:\n")
	for _, sys := range []string{"Alpha", "Beta"} {
		fmt.Fprintf(&b, "  - name: %s\n    kind: sim\n    accounts: [acct]\n    arch: x86_64\n    partitions:\n", sys)
		for i := range 12 {
			fmt.Fprintf(&b, "      - {name: gpu%02d, nodes: 1, cpu_cores: 64, memory_gb: 256, gpus: 4, gpu_model: A100, gpu_memory_gb: 40, max_walltime: 12h}\n", i)
		}
	}
	cat, err := site.Parse("sites.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var provs []provider.Provider
	counts := map[string]*countingSim{}
	for _, sys := range cat.Systems {
		p, err := simprov.New(sys, site.SimGlobal{Seed: 3}, simprov.Options{Speed: 60, WorkDir: filepath.Join(dir, sys.Name),
			Tick: 20 * time.Millisecond, Configure: func(c *sim.Config) { c.WarmUp = -1 }})
		if err != nil {
			t.Fatal(err)
		}
		p.Start()
		t.Cleanup(func() { p.Close() })
		cs := &countingSim{Provider: p}
		counts[sys.Name] = cs
		provs = append(provs, cs)
	}
	c, err := New(Options{Catalog: cat, Providers: provs, Tick: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Refresh(context.Background())
	env := model.Envelope{GPUs: model.IntRange{Min: 1, Max: 1}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)}}
	res, err := c.SubmitTask(context.Background(), SubmitRequest{Name: "b", Command: "true", Envelope: &env, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	feasible := res.Decision.Feasible()
	if len(feasible) != 24 {
		t.Fatalf("%d feasible candidates, want 24", len(feasible))
	}
	for _, c := range feasible {
		if c.WaitSource != "site" {
			t.Errorf("%s: wait source %q, want every candidate estimated by its site", c.Key(), c.WaitSource)
		}
	}
	for name, cs := range counts {
		if cs.single != 0 || len(cs.batches) != 1 || cs.batches[0] != 12 {
			t.Errorf("%s: %d single estimates, batches %v; want one batch of 12", name, cs.single, cs.batches)
		}
	}
}

// MOSAIC_LEARNED_WAITS=off (config.Config.NoLearnedWaits) reaches the core through
// Open: no learner is built, the store's history is not loaded, and attempts seen
// starting are not learned from; on (the default), the same store's history is.
func TestLearnedWaitsCanBeTurnedOff(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sites := filepath.Join(dir, "sites.yaml")
	cat := "systems:\n  - name: Solo\n    kind: sim\n    accounts: [a]\n    partitions:\n      - {name: cpu, nodes: 2, cpu_cores: 8, memory_gb: 16, max_walltime: 1h}\n    sim:\n      load: {utilization: 0}\n"
	if err := os.WriteFile(sites, []byte(cat), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "state", "mosaic.db")
	if err := os.MkdirAll(filepath.Dir(db), 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now().Add(-time.Hour).UTC()
	if err := st.CreateTask(ctx, &store.TaskRow{Task: model.Task{ID: "old", Name: "old", Command: "true", State: model.TaskSucceeded, CreatedAt: t0, UpdatedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 10; n++ {
		created := t0.Add(time.Duration(n) * time.Minute)
		est, started := created.Add(3*time.Minute), created.Add(time.Minute)
		if err := st.CreateAttempt(ctx, &model.Attempt{TaskID: "old", N: n, Tag: model.JobTag("old", n), System: "Solo", Partition: "cpu",
			State: model.JobSucceeded, Spec: model.JobSpec{Tag: model.JobTag("old", n), Nodes: 1}, CreatedAt: created, EstimatedStart: &est}); err != nil {
			t.Fatal(err)
		}
		if err := st.UpdateAttempt(ctx, "old", n, store.AttemptUpdate{Started: &started}); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	for _, off := range []bool{false, true} {
		cfg := &config.Config{SitesFile: sites, DBPath: db, StateDir: filepath.Join(dir, "state"), NoLearnedWaits: off}
		c, err := Open(ctx, OpenOptions{Config: cfg, ListenAddr: "127.0.0.1:8642"})
		if err != nil {
			t.Fatal(err)
		}
		if off {
			if c.waits != nil {
				t.Errorf("learned waits off: the core built a learner")
			}
			est := time.Now().Add(time.Hour)
			c.observeStart(&model.Attempt{System: "Solo", Partition: "cpu", CreatedAt: time.Now(), EstimatedStart: &est}, time.Now()) // must not learn (or panic)
		} else {
			var total int64
			if c.waits != nil {
				for _, s := range c.waits.Stats() {
					total += s.Total
				}
			}
			if total != 10 {
				t.Errorf("learned waits on: the learner holds %d observations of the store's history, want 10", total)
			}
		}
		c.Close()
	}
}
