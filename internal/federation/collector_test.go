package federation

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
)

// staticProvider answers probes from a fixed record list, optionally after a delay or
// by ignoring its context entirely (a hung SSH connection).
type staticProvider struct {
	name      string
	records   []model.ResourceRecord
	delay     time.Duration
	ignoreCtx bool
	err       error
}

func (p *staticProvider) System() string   { return p.name }
func (p *staticProvider) Kind() string     { return "sim" }
func (p *staticProvider) Endpoint() string { return "sim://" + p.name }
func (p *staticProvider) Probe(ctx context.Context) ([]model.ResourceRecord, error) {
	if p.delay > 0 {
		if p.ignoreCtx {
			time.Sleep(p.delay)
		} else {
			select {
			case <-time.After(p.delay):
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return p.records, p.err
}
func (p *staticProvider) Submit(context.Context, model.JobSpec) (string, error) {
	return "", provider.ErrUnsupported
}
func (p *staticProvider) Status(context.Context, []string) (map[string]model.JobStatus, error) {
	return nil, provider.ErrUnsupported
}
func (p *staticProvider) Cancel(context.Context, []string) error { return provider.ErrUnsupported }
func (p *staticProvider) EstimateStart(context.Context, model.JobSpec) (time.Time, error) {
	return time.Time{}, provider.ErrUnsupported
}
func (p *staticProvider) Logs(context.Context, string, int) (model.Logs, error) {
	return model.Logs{}, provider.ErrUnsupported
}

func recs(system string, n int) []model.ResourceRecord {
	out := make([]model.ResourceRecord, n)
	for i := range out {
		out[i] = model.ResourceRecord{System: system, Partition: fmt.Sprintf("p%03d", i), Account: "acct",
			GPUsPerNode: 4, TotalGPUs: 40, FreeGPUs: i % 40, TotalCores: 640, FreeCores: 64}
	}
	return out
}

func TestHangingProviderDoesNotDelaySnapshot(t *testing.T) {
	hung := &staticProvider{name: "Hung@X", delay: 10 * time.Second, ignoreCtx: true}
	slow := &staticProvider{name: "Slow@X", delay: 10 * time.Second}
	good := &staticProvider{name: "Good@X", records: recs("Good@X", 3)}
	c, err := New([]provider.Provider{hung, slow, good}, Options{Tick: time.Second, ProbeTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	snap := c.Refresh(context.Background())
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("snapshot took %s; a hung provider held the round past its %s timeout", el, 300*time.Millisecond)
	}
	if len(snap.Records) != 3 {
		t.Fatalf("want the good system's 3 records, got %d", len(snap.Records))
	}
	for _, name := range []string{"Hung@X", "Slow@X"} {
		h, ok := snap.System(name)
		if !ok || h.Health != model.HealthDown || h.LastError == "" {
			t.Errorf("%s: want down with an error, got %+v", name, h)
		}
	}
	if h, _ := snap.System("Good@X"); h.Health != model.HealthOK {
		t.Errorf("good system: %+v", h)
	}
}

func TestFailingSystemKeepsLastShapeMarked(t *testing.T) {
	p := &staticProvider{name: "Flaky@X", records: recs("Flaky@X", 2)}
	c, _ := New([]provider.Provider{p}, Options{Tick: time.Second, DownAfter: 2})
	c.Refresh(context.Background())
	p.err = errors.New("sinfo: connection reset")
	snap := c.Refresh(context.Background())
	h, _ := snap.System("Flaky@X")
	if h.Health != model.HealthDegraded {
		t.Fatalf("first failure should be degraded, got %s", h.Health)
	}
	if len(snap.Records) != 2 || snap.Records[0].Health != model.HealthDegraded || snap.Records[0].LastError == "" {
		t.Fatalf("records should keep shape with health degraded: %+v", snap.Records)
	}
	snap = c.Refresh(context.Background())
	if h, _ := snap.System("Flaky@X"); h.Health != model.HealthDown || h.ConsecutiveBad != 2 {
		t.Fatalf("second failure should be down, got %+v", h)
	}
	p.err = fmt.Errorf("token expired: %w", provider.ErrNeedsLogin)
	snap = c.Refresh(context.Background())
	if h, _ := snap.System("Flaky@X"); h.Health != model.HealthNeedsLogin {
		t.Fatalf("want needs-login, got %s", h.Health)
	}
	p.err = nil
	snap = c.Refresh(context.Background())
	if h, _ := snap.System("Flaky@X"); h.Health != model.HealthOK || h.ConsecutiveBad != 0 || h.LastError != "" {
		t.Fatalf("recovered: %+v", h)
	}
}

func TestDuplicateSystemRefused(t *testing.T) {
	a := &staticProvider{name: "A"}
	if _, err := New([]provider.Provider{a, a}, Options{}); err == nil {
		t.Fatal("duplicate system names must be refused")
	}
}

type memSink struct{ n int }

func (m *memSink) SaveSnapshot(context.Context, *model.ResourceSnapshot, time.Duration) error {
	m.n++
	return nil
}

func TestRingAndDownsampling(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	sink := &memSink{}
	p := &staticProvider{name: "A", records: recs("A", 1)}
	c, _ := New([]provider.Provider{p}, Options{RingSize: 3, Bucket: time.Minute, Sink: sink,
		Clock: func() time.Time { return now }})
	for i := 0; i < 10; i++ {
		c.Refresh(context.Background())
		now = now.Add(20 * time.Second)
	}
	if got := len(c.Recent(time.Time{})); got != 3 {
		t.Fatalf("ring holds %d, want 3", got)
	}
	// 10 rounds 20 s apart span 4 one-minute buckets.
	if sink.n != 4 {
		t.Fatalf("saved %d times, want one per minute bucket (4)", sink.n)
	}
	if c.Snapshot().Seq != 10 {
		t.Fatalf("seq %d", c.Snapshot().Seq)
	}
}

func TestSubscribe(t *testing.T) {
	p := &staticProvider{name: "A", records: recs("A", 1)}
	c, _ := New([]provider.Provider{p}, Options{})
	ch, stop := c.Subscribe()
	defer stop()
	c.Refresh(context.Background())
	select {
	case s := <-ch:
		if s.Seq != 1 {
			t.Fatalf("seq %d", s.Seq)
		}
	case <-time.After(time.Second):
		t.Fatal("no snapshot delivered")
	}
}

// BenchmarkMerge1000Partitions measures one probe round's merge over 1,000 partition
// records spread over 6 systems (probes answer instantly, so this is the merge cost).
func BenchmarkMerge1000Partitions(b *testing.B) {
	var ps []provider.Provider
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("Sys%d@X", i)
		n := 1000 / 6
		if i == 0 {
			n += 1000 % 6
		}
		ps = append(ps, &staticProvider{name: name, records: recs(name, n)})
	}
	c, _ := New(ps, Options{RingSize: 16})
	results := make([]probeResult, len(ps))
	for i, p := range ps {
		r, _ := p.Probe(context.Background())
		results[i] = probeResult{p: p, records: r, done: time.Now()}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.merge(context.Background(), results)
	}
	b.ReportMetric(1000, "partitions/op")
}
