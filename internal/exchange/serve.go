package exchange

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"
)

// HTTPServer returns an http.Server for the exchange with the limits a server
// reachable by strangers needs: headers within 10 s and at most 64 KiB,
// idle keep-alive connections closed after 2 minutes, bodies read within
// Config.BodyReadTimeout (by the handlers, so that long polls and SSE streams
// have no write or read deadline once their body is in) and at most
// Config.MaxPendingAuth requests authenticated at once.
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
}

// HTTP server limits of HTTPServer.
const (
	ReadHeaderTimeout = 10 * time.Second
	IdleTimeout       = 2 * time.Minute
	MaxHeaderBytes    = 64 << 10
)

// Serve runs the exchange alone on ln until ctx ends, then stops: open receives
// and listen streams are released first, then the server shuts down (waiting at
// most 5 s for in-flight requests). It returns nil after a clean stop.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	base, release := context.WithCancel(context.Background())
	defer release()
	hs := s.HTTPServer()
	hs.BaseContext = func(net.Listener) context.Context { return base }
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
