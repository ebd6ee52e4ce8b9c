// Package federation ticks every provider, merges their probe results into one
// ResourceSnapshot, and keeps its history: a ring in memory and, downsampled, in the store.
// A slow or failing site marks itself unhealthy and never delays the others.
package federation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
)

// HistorySink stores downsampled snapshots (implemented by *store.Store).
type HistorySink interface {
	SaveSnapshot(ctx context.Context, snap *model.ResourceSnapshot, bucket time.Duration) error
}

// Options configure a Collector.
type Options struct {
	Tick         time.Duration    // between probe rounds; default 5s
	ProbeTimeout time.Duration    // per probe; default the tick, at least 5s and at most 30s
	RingSize     int              // snapshots kept in memory; default 720
	Bucket       time.Duration    // store downsampling; default 1m
	Sink         HistorySink      // optional
	Clock        func() time.Time // default time.Now
	Logger       *slog.Logger
	// DownAfter is how many failed probes in a row turn "degraded" into "down"; default 2.
	DownAfter int
	// OnProbe, if set, is told each probe's system and duration (successful or not;
	// a probe cut off by ProbeTimeout counts the timeout), for metrics.
	OnProbe func(system string, took time.Duration)
}

// Collector owns the merged snapshot.
type Collector struct {
	opts      Options
	providers []provider.Provider

	mu       sync.RWMutex
	latest   *model.ResourceSnapshot
	ring     []*model.ResourceSnapshot // oldest first
	state    map[string]*systemState
	seq      uint64
	lastSave time.Time
	subs     map[chan *model.ResourceSnapshot]struct{}
}

type systemState struct {
	health  model.SystemHealth
	records []model.ResourceRecord // last good probe
}

// New makes a collector over providers (which must have unique System names).
func New(providers []provider.Provider, opts Options) (*Collector, error) {
	if opts.Tick <= 0 {
		opts.Tick = 5 * time.Second
	}
	if opts.ProbeTimeout <= 0 {
		// A login node over ssh needs a few seconds even when healthy; a hung one must
		// not hold the round for long.
		opts.ProbeTimeout = min(max(opts.Tick, 5*time.Second), 30*time.Second)
	}
	if opts.RingSize <= 0 {
		opts.RingSize = 720
	}
	if opts.Bucket <= 0 {
		opts.Bucket = time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.DownAfter <= 0 {
		opts.DownAfter = 2
	}
	c := &Collector{opts: opts, providers: providers, state: map[string]*systemState{}, subs: map[chan *model.ResourceSnapshot]struct{}{}}
	for _, p := range providers {
		if _, dup := c.state[p.System()]; dup {
			return nil, fmt.Errorf("federation: two providers for system %q; system names must be unique in the catalog", p.System())
		}
		c.state[p.System()] = &systemState{health: model.SystemHealth{
			System: p.System(), Provider: p.Kind(), Endpoint: p.Endpoint(), Health: model.HealthUnknown,
		}}
	}
	return c, nil
}

// Providers returns the providers in catalog order.
func (c *Collector) Providers() []provider.Provider { return c.providers }

// Provider returns the provider of a system.
func (c *Collector) Provider(system string) (provider.Provider, bool) {
	for _, p := range c.providers {
		if p.System() == system {
			return p, true
		}
	}
	return nil, false
}

// Tick returns the probe interval.
func (c *Collector) Tick() time.Duration { return c.opts.Tick }

// Run probes immediately, then every tick until ctx ends.
func (c *Collector) Run(ctx context.Context) {
	t := time.NewTicker(c.opts.Tick)
	defer t.Stop()
	for {
		c.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

type probeResult struct {
	p       provider.Provider
	records []model.ResourceRecord
	err     error
	latency time.Duration
	done    time.Time
}

// Refresh runs one probe round: all providers concurrently, each under the probe
// timeout. It returns when every probe has answered or timed out; a probe that ignores
// its context is abandoned (its late answer is dropped) so it cannot hold the round.
func (c *Collector) Refresh(ctx context.Context) *model.ResourceSnapshot {
	results := make(chan probeResult, len(c.providers))
	for _, p := range c.providers {
		go func(p provider.Provider) {
			pctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
			defer cancel()
			start := time.Now()
			inner := make(chan probeResult, 1)
			go func() {
				recs, err := p.Probe(pctx)
				inner <- probeResult{p: p, records: recs, err: err}
			}()
			var r probeResult
			select {
			case r = <-inner:
			case <-pctx.Done():
				r = probeResult{p: p, err: fmt.Errorf("probe of %s did not answer within %s: %w", p.System(), c.opts.ProbeTimeout, provider.ErrSiteDown)}
			}
			r.latency = time.Since(start)
			r.done = c.opts.Clock()
			results <- r
		}(p)
	}
	got := make([]probeResult, 0, len(c.providers))
	for range c.providers {
		got = append(got, <-results)
	}
	if c.opts.OnProbe != nil {
		for _, r := range got {
			c.opts.OnProbe(r.p.System(), r.latency)
		}
	}
	return c.merge(ctx, got)
}

func (c *Collector) merge(ctx context.Context, results []probeResult) *model.ResourceSnapshot {
	c.mu.Lock()
	for _, r := range results {
		st := c.state[r.p.System()]
		h := &st.health
		h.LastProbe = r.done
		h.ProbeLatencyMS = r.latency.Milliseconds()
		if r.err != nil {
			h.ConsecutiveBad++
			h.LastError = r.err.Error()
			switch {
			case errors.Is(r.err, provider.ErrNeedsLogin):
				h.Health = model.HealthNeedsLogin
			case h.ConsecutiveBad >= c.opts.DownAfter || errors.Is(r.err, provider.ErrSiteDown):
				h.Health = model.HealthDown
			default:
				h.Health = model.HealthDegraded
			}
			c.opts.Logger.Warn("probe failed", "system", h.System, "health", h.Health, "err", r.err)
			continue
		}
		h.ConsecutiveBad = 0
		h.LastError = ""
		h.LastSuccess = r.done
		h.Health = model.HealthOK
		if r.latency > c.opts.Tick {
			h.Health = model.HealthDegraded
			h.LastError = fmt.Sprintf("probe took %s, longer than the %s tick", r.latency.Round(time.Millisecond), c.opts.Tick)
		}
		st.records = r.records
	}
	c.seq++
	snap := &model.ResourceSnapshot{TakenAt: c.opts.Clock(), Seq: c.seq}
	n := 0
	for _, p := range c.providers {
		n += len(c.state[p.System()].records)
	}
	snap.Records = make([]model.ResourceRecord, 0, n)
	for _, p := range c.providers {
		st := c.state[p.System()]
		snap.Systems = append(snap.Systems, st.health)
		for _, rec := range st.records {
			rec.System = p.System()
			if rec.Provider == "" {
				rec.Provider = p.Kind()
			}
			if rec.Endpoint == "" {
				rec.Endpoint = p.Endpoint()
			}
			if st.health.Health != model.HealthOK {
				// A failing system keeps its last known shape, marked with its health.
				rec.Health = st.health.Health
				rec.LastError = st.health.LastError
			} else if rec.Health == "" {
				rec.Health = model.HealthOK
			}
			rec.ProbeLatencyMS = st.health.ProbeLatencyMS
			snap.Records = append(snap.Records, rec)
		}
	}
	model.SortRecords(snap.Records)
	c.latest = snap
	c.ring = append(c.ring, snap)
	if len(c.ring) > c.opts.RingSize {
		c.ring = append(c.ring[:0:0], c.ring[len(c.ring)-c.opts.RingSize:]...)
	}
	save := c.opts.Sink != nil && snap.TakenAt.Truncate(c.opts.Bucket) != c.lastSave.Truncate(c.opts.Bucket)
	if save {
		c.lastSave = snap.TakenAt
	}
	subs := make([]chan *model.ResourceSnapshot, 0, len(c.subs))
	for ch := range c.subs {
		subs = append(subs, ch)
	}
	c.mu.Unlock()

	if save {
		if err := c.opts.Sink.SaveSnapshot(ctx, snap, c.opts.Bucket); err != nil {
			c.opts.Logger.Error("saving snapshot history", "err", err)
		}
	}
	for _, ch := range subs {
		select {
		case ch <- snap:
		default: // a slow subscriber misses a snapshot, never blocks the collector
		}
	}
	return snap
}

// Snapshot returns the latest merged snapshot (nil before the first round). The
// returned value is shared and must not be modified.
func (c *Collector) Snapshot() *model.ResourceSnapshot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.latest
}

// Recent returns in-memory snapshots taken at or after since, oldest first.
func (c *Collector) Recent(since time.Time) []*model.ResourceSnapshot {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*model.ResourceSnapshot
	for _, s := range c.ring {
		if !s.TakenAt.Before(since) {
			out = append(out, s)
		}
	}
	return out
}

// Subscribe returns a channel receiving each new snapshot; call the returned function
// to stop. Slow receivers miss snapshots rather than blocking probes.
func (c *Collector) Subscribe() (<-chan *model.ResourceSnapshot, func()) {
	ch := make(chan *model.ResourceSnapshot, 4)
	c.mu.Lock()
	c.subs[ch] = struct{}{}
	c.mu.Unlock()
	return ch, func() {
		c.mu.Lock()
		delete(c.subs, ch)
		c.mu.Unlock()
	}
}
