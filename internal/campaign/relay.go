package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Relay accepts connections on ln and forwards each to the address to, until
// ctx ends (then the listener and every open connection are closed). At most
// maxConns connections are relayed at once; more wait for a free slot.
func Relay(ctx context.Context, ln net.Listener, to string, maxConns int) error {
	if maxConns <= 0 {
		maxConns = 1024
	}
	slots := make(chan struct{}, maxConns)
	var mu sync.Mutex
	open := map[net.Conn]struct{}{}
	track := func(c net.Conn, add bool) {
		mu.Lock()
		defer mu.Unlock()
		if add {
			open[c] = struct{}{}
		} else {
			delete(open, c)
		}
	}
	go func() {
		<-ctx.Done()
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
	}()
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		in, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("relay: accept: %w", err)
		}
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			in.Close()
			return nil
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			out, err := (&net.Dialer{Timeout: 10 * time.Second}).DialContext(ctx, "tcp", to)
			if err != nil {
				in.Close()
				return
			}
			track(in, true)
			track(out, true)
			done := make(chan struct{}, 2)
			pipe := func(dst, src net.Conn) {
				_, _ = io.Copy(dst, src)
				if tc, ok := dst.(*net.TCPConn); ok {
					_ = tc.CloseWrite()
				}
				done <- struct{}{}
			}
			go pipe(out, in)
			go pipe(in, out)
			<-done
			<-done
			in.Close()
			out.Close()
			track(in, false)
			track(out, false)
		}()
	}
}
