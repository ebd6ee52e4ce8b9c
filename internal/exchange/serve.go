package exchange

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// Serve runs the exchange alone on ln until ctx ends, then stops: open receives
// and listen streams are released first, then the server shuts down (waiting at
// most 5 s for in-flight requests). It returns nil after a clean stop.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	base, release := context.WithCancel(context.Background())
	defer release()
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("exchange server on %s: %w", ln.Addr(), err)
	case <-ctx.Done():
	}
	release() // ends blocking receives and SSE streams
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		return fmt.Errorf("exchange server shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("exchange server on %s: %w", ln.Addr(), err)
	}
	return nil
}
