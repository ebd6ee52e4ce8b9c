package client

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestNewSeveralBaseURLs(t *testing.T) {
	for _, c := range []struct {
		in    string
		bases int
		bad   bool
	}{
		{"http://127.0.0.1:8642", 1, false},
		{"http://a:1,http://b:2,https://c:3/", 3, false},
		{" http://a:1 , http://b:2 ", 2, false},
		{"http://a:1,", 0, true},
		{",http://a:1", 0, true},
		{"http://a:1,,http://b:2", 0, true},
		{"http://a:1,ftp://b:2", 0, true},
		{"http://a:1,b:2", 0, true},
		{"", 0, true},
		{"http://", 0, true},
	} {
		cl, err := New(c.in, "tok")
		if c.bad {
			if err == nil {
				t.Errorf("New(%q) accepted, want an error", c.in)
			} else if !strings.Contains(err.Error(), "want http://host:port") {
				t.Errorf("New(%q): %v, want advice", c.in, err)
			}
			continue
		}
		if err != nil || len(cl.bases) != c.bases || cl.URL() != cl.bases[0].String() {
			t.Errorf("New(%q): %v, %d bases, want %d", c.in, err, len(cl.bases), c.bases)
		}
	}
}

func FuzzNewBaseURLs(f *testing.F) {
	for _, s := range []string{"http://a:1", "http://a:1,https://b:2", ",", "http://[::1]:8642,http://x", "http://a:1,%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		c, err := New(s, "tok")
		if err != nil {
			return
		}
		if len(c.bases) == 0 || len(c.bases) != strings.Count(s, ",")+1 {
			t.Fatalf("New(%q): %d bases", s, len(c.bases))
		}
		for _, b := range c.bases {
			if (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
				t.Fatalf("New(%q) kept base %q", s, b)
			}
		}
	})
}

// TestSubmitFailsOverWithOneIdempotencyKey: with three base URLs — one refusing
// connections, one answering 503 (a follower without a leader) — a submission lands
// on the third, every try carrying the same Idempotency-Key, and the client sticks to
// the replica that answered.
func TestSubmitFailsOverWithOneIdempotencyKey(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	var mu sync.Mutex
	var keys []string
	record := func(r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("Idempotency-Key"))
		mu.Unlock()
	}
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		w.Header().Set("Retry-After", "2")
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"status":503,"detail":"no replica is the leader right now"}`))
	}))
	defer follower.Close()
	leaderHits := 0
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record(r)
		mu.Lock()
		leaderHits++
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer tok" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"task": map[string]any{"id": "t1"}})
	}))
	defer leader.Close()
	c, err := New(strings.Join([]string{down, follower.URL, leader.URL}, ","), "tok")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := c.Submit(ctx, SubmitRequest{Name: "x", Command: "true"})
	if err != nil || res.Task == nil || res.Task.ID != "t1" {
		t.Fatalf("submit: %+v %v", res, err)
	}
	mu.Lock()
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("keys sent: %q, want the same non-empty key on the follower and the leader", keys)
	}
	first := keys[0]
	mu.Unlock()
	// The next call goes straight to the replica that answered, with a new key.
	if _, err := c.Submit(ctx, SubmitRequest{Name: "y", Command: "true"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(keys) != 3 || keys[2] == first || leaderHits != 2 {
		t.Fatalf("second submit: keys %q, leader hits %d; want one new key, straight to the leader", keys, leaderHits)
	}
}

// TestOneBaseURLDoesNotRetry: a single core answering 503 is reported as is (laptop
// mode keeps its behaviour), and a 4xx is never tried elsewhere.
func TestOneBaseURLDoesNotRetry(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c, _ := New(srv.URL, "tok")
	_, err := c.Submit(context.Background(), SubmitRequest{Name: "x"})
	var ae *APIError
	if !errors.As(err, &ae) || ae.Status != 503 || hits != 1 {
		t.Fatalf("one base: %v after %d hits, want the 503 after one", err, hits)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		w.WriteHeader(http.StatusUnprocessableEntity)
	}))
	defer bad.Close()
	hits = 0
	c, _ = New(bad.URL+","+srv.URL, "tok")
	if _, err := c.Submit(context.Background(), SubmitRequest{Name: "x"}); !errors.As(err, &ae) || ae.Status != 422 || hits != 1 {
		t.Fatalf("a 422 with two bases: %v after %d hits, want it at once", err, hits)
	}
}

// TestFailoverOnlyWhenNotCarriedOut: with two replicas, a POST without an
// Idempotency-Key goes to the second only when the first certainly did not carry it
// out (a 503 marked Mosaic-No-Leader); a 502 (forwarded, no answer) or an unmarked 503
// is reported as is. A GET is tried on the next replica after either.
func TestFailoverOnlyWhenNotCarriedOut(t *testing.T) {
	for _, c := range []struct {
		name     string
		method   string
		status   int
		marked   bool
		failover bool
	}{
		{"POST 503 no leader", http.MethodPost, 503, true, true},
		{"POST 503 unmarked", http.MethodPost, 503, false, false},
		{"POST 502 sent, no answer", http.MethodPost, 502, false, false},
		{"GET 502", http.MethodGet, 502, false, true},
		{"GET 503 unmarked", http.MethodGet, 503, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			first, second := 0, 0
			a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				first++
				mu.Unlock()
				if c.marked {
					w.Header().Set("Mosaic-No-Leader", "1")
				}
				w.WriteHeader(c.status)
			}))
			defer a.Close()
			b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				second++
				mu.Unlock()
				w.Write([]byte(`{}`))
			}))
			defer b.Close()
			cl, err := New(a.URL+","+b.URL, "tok")
			if err != nil {
				t.Fatal(err)
			}
			err = cl.doWith(context.Background(), c.method, "/api/x", nil, map[string]string{}, nil, nil)
			mu.Lock()
			defer mu.Unlock()
			if c.failover {
				if err != nil || second != 1 {
					t.Fatalf("%v, second replica hit %d times; want the request sent there", err, second)
				}
				return
			}
			var ae *APIError
			if !errors.As(err, &ae) || ae.Status != c.status || first != 1 || second != 0 {
				t.Fatalf("%v (hits %d, %d); want the %d reported, never sent to the second replica", err, first, second, c.status)
			}
		})
	}
}

// TestCampaignJobSubmitFailsOverWithOneIdempotencyKey: a campaign launcher's job
// submission carries an Idempotency-Key, the same on every replica it is tried on
// (a follower's 502, a forward that got no answer, is retried because of it), and
// a new key for the next job.
func TestCampaignJobSubmitFailsOverWithOneIdempotencyKey(t *testing.T) {
	var kl keyLog
	follower := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kl.record(r)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusBadGateway)
		w.Write([]byte(`{"status":502,"detail":"the leader did not answer the forwarded request"}`))
	}))
	defer follower.Close()
	leader := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kl.record(r)
		if r.URL.Path != "/api/campaign-jobs" || r.Method != http.MethodPost {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(map[string]any{"task_id": "t1"})
	}))
	defer leader.Close()
	c, err := New(follower.URL+","+leader.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	id, err := c.SubmitCampaignJob(ctx, CampaignJobRequest{RunID: "r1", Site: "A"})
	if err != nil || id != "t1" {
		t.Fatalf("submit: %q %v", id, err)
	}
	keys := kl.sent()
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("keys sent: %q, want the same non-empty key on the follower and the leader", keys)
	}
	first := keys[0]
	if _, err := c.SubmitCampaignJob(ctx, CampaignJobRequest{RunID: "r1", Site: "B"}); err != nil {
		t.Fatal(err)
	}
	if keys = kl.sent(); len(keys) != 3 || keys[2] == "" || keys[2] == first {
		t.Fatalf("second job: keys %q; want one new key", keys)
	}
}

// keyLog records the Idempotency-Key of every request test servers receive.
type keyLog struct {
	mu   sync.Mutex
	keys []string
}

func (l *keyLog) record(r *http.Request) {
	l.mu.Lock()
	l.keys = append(l.keys, r.Header.Get("Idempotency-Key"))
	l.mu.Unlock()
}

func (l *keyLog) sent() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.keys...)
}
