package campaign

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/internal/exchange"
)

// TestLaunchRecordsTheExternalExchangesTimeline: with --exchange-url the
// launcher reads the run's timeline and counts from that exchange (GET
// /run/timeline with the run's token) while it follows the run, and at its
// end: timeline.json, the counts in state.json and the printed counts, as with
// its own exchange.
func TestLaunchRecordsTheExternalExchangesTimeline(t *testing.T) {
	r := newLaunchRig(t, func(*scriptedBackend) {})
	srv := exchange.NewServer(exchange.Config{Logger: slog.New(slog.DiscardHandler)})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.RegisterCampaign(ctx, "t1", r.opts.Spec.Campaign); err != nil {
		t.Fatal(err)
	}
	tok, err := srv.IssueToken(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	r.opts.ExchangeURL, r.opts.ExchangeToken, r.opts.AutoBootstrap = ts.URL, tok, true
	done := make(chan error, 1)
	go func() { done <- Launch(ctx, r.opts) }()
	// While the run is followed, timeline.json gets the bootstrap message.
	path := filepath.Join(r.opts.Root, "t1", "timeline.json")
	var recs []exchange.MessageRecord
	for i := 0; i < 400; i++ {
		if data, err := os.ReadFile(path); err == nil && jsonUnmarshalOK(data, &recs) && len(recs) == 1 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(recs) != 1 || recs[0].Dest != "coordinator" || recs[0].DestSite != "aurora" {
		t.Fatalf("timeline.json while running: %+v\n%s", recs, r.out.String())
	}
	d, err := OpenRunDir(r.opts.Root, "t1")
	if err != nil {
		t.Fatal(err)
	}
	// The counts reach state.json after the timeline, in the same follow round: wait
	// for them (bounded) rather than read state.json between the two writes.
	st := d.State()
	for i := 0; i < 400 && len(st.Counts) == 0; i++ {
		time.Sleep(20 * time.Millisecond)
		if d, err = OpenRunDir(r.opts.Root, "t1"); err != nil {
			t.Fatal(err)
		}
		st = d.State()
	}
	if st.ExchangeLocalURL != ts.URL || st.ExchangeListen != "" || st.ExchangeBackend != "" || len(st.Counts) == 0 {
		t.Errorf("run state: local url %q listen %q backend %q counts %+v", st.ExchangeLocalURL, st.ExchangeListen, st.ExchangeBackend, st.Counts)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("launch: %v\n%s", err, r.out.String())
	}
	if !strings.Contains(r.out.String(), "site aurora       mailboxes 1  sent 0  received 1") {
		t.Errorf("no counts printed at the end:\n%s", r.out.String())
	}
	d, _ = OpenRunDir(r.opts.Root, "t1")
	counts := map[string]exchange.SiteCount{}
	for _, c := range d.State().Counts {
		counts[c.Site] = c
	}
	if counts["aurora"].Received != 1 || counts["crux"].Mailboxes != 2 || counts[""].Sent != 1 {
		t.Errorf("counts in state.json: %+v", d.State().Counts)
	}
}

// TestLaunchRecordsTheEmbeddedExchange: the launcher's own exchange is
// recorded for `campaign resume`: listen address, backend and local URL.
func TestLaunchRecordsTheEmbeddedExchange(t *testing.T) {
	r := newLaunchRig(t, func(*scriptedBackend) {})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Launch(ctx, r.opts) }()
	for i := 0; i < 250 && !strings.Contains(r.out.String(), "all 2 sites ready"); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	d, err := OpenRunDir(r.opts.Root, "t1")
	if err != nil {
		t.Fatal(err)
	}
	st := d.State()
	cancel()
	<-done
	if !strings.HasPrefix(st.ExchangeListen, "127.0.0.1:") || st.ExchangeLocalURL != "http://"+st.ExchangeListen || st.ExchangeBackend != BackendMemory || st.LauncherPID != os.Getpid() {
		t.Errorf("run state: listen %q local url %q backend %q pid %d", st.ExchangeListen, st.ExchangeLocalURL, st.ExchangeBackend, st.LauncherPID)
	}
}

func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"redis://127.0.0.1:6379/0":         "redis://127.0.0.1:6379/0",
		"redis://:s3cret@127.0.0.1:6379/0": "redis://:xxxxx@127.0.0.1:6379/0",
		"redis://user:s3cret@h:1/0":        "redis://user:xxxxx@h:1/0",
		"redis://user@h:1/0":               "redis://user@h:1/0",
		"redis://:s3cret@h:1/0\x7f":        "(a URL that does not parse)",
		"":                                 "",
		"http://[::1]:badport/:s3cret@x/0": "(a URL that does not parse)",
	} {
		if got := RedactURL(in); got != want || (strings.Contains(in, "s3cret") && strings.Contains(got, "s3cret")) {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func jsonUnmarshalOK(data []byte, v any) bool {
	return json.Unmarshal(data, v) == nil
}
