package api

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/mosaic-hpc/mosaic/api/v1"
	"github.com/mosaic-hpc/mosaic/client"
)

// wireClient is the Go client on a real core behind the real API, and the query
// string of every request it sent.
func wireClient(t *testing.T) (*client.Client, *httptest.Server, func(path string) []string) {
	t.Helper()
	hs, _ := coreServer(t, Options{Token: "tok"})
	var mu sync.Mutex
	queries := map[string][]string{}
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries[r.URL.Path] = append(queries[r.URL.Path], r.URL.RawQuery)
		mu.Unlock()
		hs.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(rec.Close)
	cl, err := client.New(rec.URL, "tok")
	if err != nil {
		t.Fatal(err)
	}
	return cl, hs, func(path string) []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), queries[path]...)
	}
}

func recordKeys(rs []v1.ResourceRecord) []string {
	var ks []string
	for _, r := range rs {
		ks = append(ks, r.System+"/"+r.Partition+"/"+r.Account)
	}
	return ks
}

// TestIdleZeroQueryIsAnyQueue: the zero v1.IdleQuery means what GET /api/idle without
// max_queue means, any queue depth: the client sends no max_queue and gets the same
// partitions, including ones with jobs pending. MaxQueue: v1.Ptr(0) asks for empty
// queues. Before, the client always sent max_queue (0 for the zero value), so
// IdleQuery{GPUs: 1} kept only partitions with nothing pending.
func TestIdleZeroQueryIsAnyQueue(t *testing.T) {
	cl, hs, queries := wireClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var direct struct {
		Partitions []v1.ResourceRecord `json:"partitions"`
	}
	if code := apiGet(t, hs, "/api/idle", nil, &direct); code != 200 {
		t.Fatalf("GET /api/idle: %d", code)
	}
	pending := 0
	for _, r := range direct.Partitions {
		if r.PendingJobs > 0 {
			pending++
		}
	}
	if pending == 0 {
		t.Fatal("no idle partition has pending jobs in the simulated federation: the test proves nothing")
	}
	got, err := cl.Idle(ctx, v1.IdleQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if g, w := strings.Join(recordKeys(got), " "), strings.Join(recordKeys(direct.Partitions), " "); g != w {
		t.Fatalf("client.Idle(IdleQuery{}) = %s\nGET /api/idle       = %s", g, w)
	}
	for _, q := range queries("/api/idle") {
		if strings.Contains(q, "max_queue") {
			t.Errorf("the zero query sent %q", q)
		}
	}
	empty, err := cl.Idle(ctx, v1.IdleQuery{MaxQueue: v1.Ptr(0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(empty) != len(direct.Partitions)-pending {
		t.Errorf("MaxQueue 0: %d partitions, want the %d with nothing pending", len(empty), len(direct.Partitions)-pending)
	}
	for _, r := range empty {
		if r.PendingJobs != 0 {
			t.Errorf("MaxQueue 0 kept %s/%s with %d pending", r.System, r.Partition, r.PendingJobs)
		}
	}
}

// TestValidationErrorsKeepTheirDetails: a request the API's schema refuses comes back
// through the client with each problem's location, message and value (huma's
// errors[]), and the error's text names them. Before, v1.Error dropped them and the
// caller read only "validation failed".
func TestValidationErrorsKeepTheirDetails(t *testing.T) {
	cl, _, _ := wireClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := cl.Idle(ctx, v1.IdleQuery{Provider: "slurmish", MaxQueue: v1.Ptr(-7)})
	var ve *v1.Error
	if !errors.As(err, &ve) || ve.Status != http.StatusUnprocessableEntity {
		t.Fatalf("got %v, want a 422 problem", err)
	}
	where := map[string]v1.ErrorItem{}
	for _, d := range ve.Errors {
		where[d.Location] = d
	}
	for loc, val := range map[string]any{"query.provider": "slurmish", "query.max_queue": -7.0} {
		d, ok := where[loc]
		if !ok || d.Message == "" || d.Value != val {
			t.Errorf("%s: detail %+v, want its message and value %v (all: %+v)", loc, d, val, ve.Errors)
		}
		if !strings.Contains(err.Error(), loc) {
			t.Errorf("the error's text %q does not name %s", err, loc)
		}
	}
}
