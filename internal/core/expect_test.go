package core

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/sim"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

// expectingSim is a simulated site that says what the core announced and when.
type expectingSim struct {
	*simprov.Provider
	mu        sync.Mutex
	announced []model.JobSpec
	released  int
	live      int // announcements not yet released
	atSubmit  []int
}

func (e *expectingSim) ExpectSubmit(spec model.JobSpec) func() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.announced = append(e.announced, spec)
	e.live++
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.released++
		e.live--
	}
}

func (e *expectingSim) Submit(ctx context.Context, spec model.JobSpec) (string, error) {
	e.mu.Lock()
	e.atSubmit = append(e.atSubmit, e.live)
	e.mu.Unlock()
	return e.Provider.Submit(ctx, spec)
}

var _ provider.SubmissionExpecter = (*expectingSim)(nil)

// TestSubmitAnnouncesTheJobUntilTheSiteHasIt: a submitted task's job is announced to
// its site's provider (system, partition, the first attempt's tag) from the decision
// on and again by the dispatch, still announced when the provider's Submit runs, and
// released once the dispatch has returned; a dry run announces nothing.
func TestSubmitAnnouncesTheJobUntilTheSiteHasIt(t *testing.T) {
	cat, err := site.Parse("sites.yaml", []byte(`systems:
  - name: Alpha
    kind: sim
    accounts: [acct]
    arch: x86_64
    partitions:
      - {name: gpu, nodes: 2, cpu_cores: 64, memory_gb: 256, gpus: 4, gpu_model: A100, gpu_memory_gb: 40, max_walltime: 12h}
`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := simprov.New(cat.Systems[0], site.SimGlobal{Seed: 3}, simprov.Options{Speed: 60, WorkDir: filepath.Join(dir, "sim"),
		Tick: 20 * time.Millisecond, Configure: func(c *sim.Config) { c.WarmUp = -1 }})
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	t.Cleanup(func() { p.Close() })
	st, err := store.Open(context.Background(), filepath.Join(dir, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	es := &expectingSim{Provider: p}
	c, err := New(Options{Catalog: cat, Store: st, Providers: []provider.Provider{es}, Tick: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Refresh(context.Background())
	env := model.Envelope{GPUs: model.IntRange{Min: 2, Max: 2}, Walltime: model.DurationRange{Min: model.Duration(time.Hour), Max: model.Duration(time.Hour)}}
	if _, err := c.SubmitTask(context.Background(), SubmitRequest{Name: "dry", Command: "true", Envelope: &env, DryRun: true}); err != nil {
		t.Fatal(err)
	}
	if len(es.announced) != 0 {
		t.Fatalf("a dry run announced %d jobs", len(es.announced))
	}
	res, err := c.SubmitTask(context.Background(), SubmitRequest{Name: "real", Command: "true", Envelope: &env})
	if err != nil {
		t.Fatal(err)
	}
	es.mu.Lock()
	defer es.mu.Unlock()
	// Announced twice, by the core at the decision and by the dispatch before it
	// stores the attempt (the provider counts one job per tag).
	if len(es.announced) != 2 {
		t.Fatalf("%d announcements, want 2 (the core's and the dispatch's)", len(es.announced))
	}
	for _, a := range es.announced {
		if a.System != "Alpha" || a.Partition != "gpu" || a.Tag != model.JobTag(res.Task.ID, 1) || a.GPUs != 2 {
			t.Errorf("announced %+v, want Alpha/gpu, 2 GPUs, tag %s", a, model.JobTag(res.Task.ID, 1))
		}
	}
	if len(es.atSubmit) != 1 || es.atSubmit[0] != 2 {
		t.Errorf("announcements live at Submit: %v, want [2]", es.atSubmit)
	}
	if es.released != 2 || es.live != 0 {
		t.Errorf("released %d, live %d; want both released", es.released, es.live)
	}
}
