package core

import (
	"context"
	"testing"
	"time"
)

// TestCloseStopsRunFirst: Close cancels Run and waits for its monitor, recovery and
// probe goroutines before closing providers and the store, so nothing writes to a
// closed store and the store's lease is never passed on while a round still runs.
func TestCloseStopsRunFirst(t *testing.T) {
	w := newSimWorld(t, 60, [][2]string{{"A@X", ""}})
	ran := make(chan struct{})
	go func() { w.c.Run(context.Background()); close(ran) }()
	// Let Run get going (first snapshot, recovery, a few monitor rounds).
	if err := w.c.WaitReady(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := w.c.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ran:
	default:
		t.Fatal("Close returned while Run was still running: its rounds could still write to the closed store")
	}
}
