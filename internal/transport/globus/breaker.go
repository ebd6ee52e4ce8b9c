package globus

import (
	"fmt"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/errs"
)

// Breaker defaults: an endpoint found offline is not asked again for DefaultBreakerTTL
// (never less than MinBreakerTTL), as the Diamond portal's per-endpoint breaker.
const (
	DefaultBreakerTTL = 60 * time.Second
	MinBreakerTTL     = 30 * time.Second
)

// Breaker is one endpoint's circuit breaker. While open, calls fail at once with an
// error wrapping errs.ErrSiteDown instead of queueing tasks nobody will run.
type Breaker struct {
	// TTL is how long the breaker stays open; 0 means DefaultBreakerTTL.
	TTL time.Duration
	// Now is the clock.
	Now func() time.Time

	mu        sync.Mutex
	openUntil time.Time
	reason    string
	trips     int
}

func (b *Breaker) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

func (b *Breaker) ttl() time.Duration {
	switch {
	case b.TTL == 0:
		return DefaultBreakerTTL
	case b.TTL < MinBreakerTTL:
		return MinBreakerTTL
	}
	return b.TTL
}

// Allow returns nil when calls may proceed, else why not.
func (b *Breaker) Allow() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := b.now(); now.Before(b.openUntil) {
		return fmt.Errorf("%s (circuit open for another %s): %w", b.reason, b.openUntil.Sub(now).Round(time.Second), errs.ErrSiteDown)
	}
	return nil
}

// Trip opens the breaker for its TTL.
func (b *Breaker) Trip(reason string) {
	b.mu.Lock()
	b.openUntil = b.now().Add(b.ttl())
	b.reason = reason
	b.trips++
	b.mu.Unlock()
}

// Reset closes the breaker (a call succeeded).
func (b *Breaker) Reset() {
	b.mu.Lock()
	b.openUntil, b.reason = time.Time{}, ""
	b.mu.Unlock()
}

// Open reports whether the breaker is open now.
func (b *Breaker) Open() bool { return b.Allow() != nil }

// Trips counts how often the breaker opened.
func (b *Breaker) Trips() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.trips
}

// Breakers hands out one Breaker per endpoint id. A core holds one set for its
// providers; there is no process-wide set, so two cores never trip each other.
type Breakers struct {
	TTL time.Duration
	mu  sync.Mutex
	m   map[string]*Breaker
}

// For returns the endpoint's breaker, creating it.
func (bs *Breakers) For(endpoint string) *Breaker {
	bs.mu.Lock()
	defer bs.mu.Unlock()
	if bs.m == nil {
		bs.m = map[string]*Breaker{}
	}
	b, ok := bs.m[endpoint]
	if !ok {
		b = &Breaker{TTL: bs.TTL}
		bs.m[endpoint] = b
	}
	return b
}
