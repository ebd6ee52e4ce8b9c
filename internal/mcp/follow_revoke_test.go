package mcp

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/internal/core/coretest"
	"github.com/mosaic-hpc/mosaic/internal/model"
)

// TestFollowTaskEndsWhenTokenRevoked: wait_task's follow (up to 10 minutes) checks the
// caller's token on every poll, so revoking it ends the wait with a 401 at once.
func TestFollowTaskEndsWhenTokenRevoked(t *testing.T) {
	c := coretest.Start(t, coretest.Options{})
	admin := model.WithCaller(context.Background(), model.LocalCaller())
	if _, err := c.AddUser(admin, "alice", false); err != nil {
		t.Fatal(err)
	}
	tok, rec, err := c.CreateToken(admin, "alice", "")
	if err != nil {
		t.Fatal(err)
	}
	caller, err := c.Authenticate(context.Background(), tok)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(model.WithCaller(context.Background(), caller), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- CoreBackend(c).FollowTask(ctx, "", 0, -1, func(v1.Event) error { return nil })
	}()
	time.Sleep(2 * followPoll)
	if err := c.RevokeToken(admin, rec.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		var ve *v1.Error
		if !errors.As(err, &ve) || ve.Status != 401 {
			t.Fatalf("follow ended with %v, want the core's 401", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the follow ran on after the token was revoked")
	}
}
