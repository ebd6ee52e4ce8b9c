package core

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// clockSystem is one simulated system with a single 4-GPU node and a 12h cap.
const clockSystem = `
  - name: %s
    kind: sim
    accounts: [acct]
    arch: x86_64
    partitions:
      - name: gpu
        nodes: 1
        cpu_cores: 64
        memory_gb: 256
        gpus: 4
        gpu_model: A100
        gpu_memory_gb: 40
        max_walltime: 12h
`

// clockCore builds a core over simulated systems at speed with no background load,
// plus (when real is set) one ssh system that is never probed; it returns the core and
// its simulated providers.
func clockCore(t *testing.T, speed float64, real bool, names ...string) (*Core, map[string]*simprov.Provider) {
	t.Helper()
	var b strings.Builder
	b.WriteString("systems:\n")
	for _, n := range names {
		fmt.Fprintf(&b, clockSystem, n)
	}
	if real {
		b.WriteString("  - name: Real@Site\n    kind: ssh\n    host: 127.0.0.1\n    accounts: [acct]\n    partitions:\n      - {name: cpu, nodes: 1, cpu_cores: 8, memory_gb: 16}\n")
	}
	cat, err := site.Parse("test-sites.yaml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sims := map[string]*simprov.Provider{}
	var provs []provider.Provider
	for _, sys := range cat.Systems {
		if sys.Kind != site.KindSim {
			continue
		}
		p, err := simprov.New(sys, site.SimGlobal{Seed: 3}, simprov.Options{Speed: speed, WorkDir: filepath.Join(dir, "sim"),
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
		sims[sys.Name] = p
		provs = append(provs, p)
	}
	st, err := store.Open(context.Background(), filepath.Join(dir, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := New(Options{Catalog: cat, Store: st, Providers: provs, Tick: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	c.Refresh(context.Background())
	return c, sims
}

// TestAboutSimClock: About says how fast the simulated clock runs, in a field and in
// the sentence every surface shows; a core without simulated systems says nothing.
func TestAboutSimClock(t *testing.T) {
	c, _ := clockCore(t, 60, false, "Alpha", "Beta")
	sc := c.About().Sim
	if sc == nil {
		t.Fatal("About has no sim clock for an all-simulated federation")
	}
	if sc.Speed != 60 || len(sc.Systems) != 2 || sc.Systems["Alpha"] != 60 || sc.Systems["Beta"] != 60 {
		t.Errorf("sim clock %+v, want speed 60 on Alpha and Beta", sc)
	}
	if want := "simulated federation at 60× — 1h of walltime takes 1m real time"; sc.Summary != want {
		t.Errorf("summary %q, want %q", sc.Summary, want)
	}

	c, _ = clockCore(t, 120, true, "Alpha")
	if sc := c.About().Sim; sc == nil || !strings.HasPrefix(sc.Summary, "simulated systems (Alpha) at 120× — 1h of walltime takes 30s real time") {
		t.Errorf("mixed federation: sim clock %+v", sc)
	}

	noSim, err := New(Options{Catalog: &site.Catalog{}, Tick: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if sc := noSim.About().Sim; sc != nil {
		t.Errorf("no simulated system, yet About says %+v", sc)
	}
}

func TestRealTime(t *testing.T) {
	for _, tc := range []struct {
		d     time.Duration
		speed float64
		want  string
	}{
		{time.Hour, 60, "1m"}, {30 * time.Minute, 60, "30s"}, {90 * time.Minute, 60, "1m30s"}, {time.Minute, 60, "1s"},
		{5 * time.Second, 60, "83ms"}, {time.Hour, 7, "8m34s"}, {time.Minute, 600, "100ms"}, {time.Nanosecond, 60, "<1ms"},
		{time.Hour, 1, "1h"}, {time.Hour, 0, "1h"}, {0, 60, "0s"}, {100 * time.Second, 60, "1.7s"},
	} {
		if got := RealTime(tc.d, tc.speed); got != tc.want {
			t.Errorf("RealTime(%s, %v) = %q, want %q", tc.d, tc.speed, got, tc.want)
		}
	}
	if got := SpeedText(60); got != "60×" {
		t.Errorf("SpeedText(60) = %q", got)
	}
	if got := SpeedText(2.5); got != "2.5×" {
		t.Errorf("SpeedText(2.5) = %q", got)
	}
}

// TestSimSiteEstimatesAndShorterWalltime: on a simulated system the scheduler gets the
// site's own start estimates (before, every one failed for want of a job tag and the
// queue model stood in), in the site's time (a simulated system answers in wall-clock
// time; at 60× a 4h wait is 4 real minutes), and takes walltime.min where the site's
// backfill starts it materially sooner, saying so in the rationale.
func TestSimSiteEstimatesAndShorterWalltime(t *testing.T) {
	c, sims := clockCore(t, 60, false, "Alpha")
	p := sims["Alpha"]
	ctx := context.Background()
	job := func(tag string, gpus int, wall time.Duration) {
		t.Helper()
		_, err := p.Submit(ctx, model.JobSpec{Tag: tag, Name: tag, Partition: "gpu", Account: "acct", Nodes: 1, NTasks: 1, CPUsPerTask: 16 * gpus,
			GPUs: gpus, GPUsPerNode: gpus, Walltime: model.Duration(wall), Command: "sleep 600"})
		if err != nil {
			t.Fatal(err)
		}
	}
	job("running", 2, 4*time.Hour) // half the node, 4h
	job("waiting", 4, 4*time.Hour) // the whole node: reserved from when "running" ends
	c.Refresh(ctx)

	// 2 GPUs fit beside "running" now, but only a job ending before the reservation
	// may backfill there: 2h does, 8h waits until "waiting" is done (about 8h).
	env := model.Envelope{GPUs: model.IntRange{Min: 2}, Walltime: model.DurationRange{Min: model.Duration(2 * time.Hour), Max: model.Duration(8 * time.Hour)}}
	res, err := c.SubmitTask(ctx, SubmitRequest{Name: "bf", Command: "true", Envelope: &env, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Decision
	ch := d.ChosenCandidate()
	if ch == nil {
		t.Fatal("no chosen candidate")
	}
	if ch.WaitSource != "site" {
		t.Fatalf("wait source %q (wait %s), want the site's estimate; rationale: %s", ch.WaitSource, ch.EstWait, d.Rationale)
	}
	if d.Spec.Walltime != model.Duration(2*time.Hour) || d.Spec.CPUsPerTask != 32 || d.Spec.MemoryGB != 128 {
		t.Errorf("spec %+v, want walltime.min 2h (backfill) and the 2 GPUs' share: 32 cores, 128 GB", *d.Spec)
	}
	if ch.EstWait.D() > 15*time.Minute {
		t.Errorf("estimated wait %s, want a backfill start", ch.EstWait)
	}
	if !strings.Contains(d.Rationale, "walltime 2h instead of 8h: starts ") || !strings.Contains(d.Rationale, " sooner by backfill") {
		t.Errorf("rationale %q does not say why the walltime is shorter", d.Rationale)
	}
	// The long walltime's wait is in the site's time: hours (about 8h), not minutes.
	i := strings.Index(d.Rationale, "vs ")
	if i < 0 {
		t.Fatalf("rationale %q has no long-walltime wait", d.Rationale)
	}
	long, err := model.ParseDuration(strings.TrimRight(strings.Fields(d.Rationale[i+3:])[0], ")."))
	if err != nil || long.D() < 7*time.Hour || long.D() > 9*time.Hour {
		t.Errorf("long walltime's wait %s (%v), want about 8h of simulated time; rationale %q", long, err, d.Rationale)
	}
}
