package exchange

import (
	"context"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/exchange/redistest"
)

// startRedis starts a private redis-server for this test (redistest.Start).
func startRedis(tb testing.TB) string { return redistest.Start(tb) }

// newRedisBackend returns a Redis backend on a fresh server (one per test
// function; subtests share it under distinct key prefixes).
func newRedisBackend(tb testing.TB, url, prefix string) Backend {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := NewRedis(ctx, url, prefix)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { r.Close() })
	return r
}
