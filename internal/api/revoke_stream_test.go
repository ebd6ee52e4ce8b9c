package api

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRevokedTokenEndsEventStream: an event stream opened with alice's token ends with
// an error message soon after the token is revoked, instead of running on.
func TestRevokedTokenEndsEventStream(t *testing.T) {
	hs, _ := coreServer(t, Options{Token: "tok"})
	alice := newUserToken(t, hs, "alice", false)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", hs.URL+"/api/events/stream", nil)
	req.Header.Set("Authorization", "Bearer "+alice.Token)
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("stream: %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "event: ready") {
	}
	mustCall(t, hs, "POST", "/api/tokens/"+alice.ID+"/revoke", "tok", nil, http.StatusNoContent, nil)
	start := time.Now()
	var sawError bool
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "event: error") {
			sawError = true
		}
		if sawError && strings.HasPrefix(line, "data:") && !strings.Contains(line, "revoked") {
			t.Fatalf("error message %q does not say the token was revoked", line)
		}
	}
	if !sawError {
		t.Fatalf("the stream ended without an error message: %v", sc.Err())
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the stream ran on %s after the revocation", d)
	}
}
