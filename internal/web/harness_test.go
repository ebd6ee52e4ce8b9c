package web_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider"
	"github.com/mosaic-hpc/mosaic/internal/provider/simprov"
	"github.com/mosaic-hpc/mosaic/internal/server"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
	"github.com/mosaic-hpc/mosaic/internal/transport/rigenv"
)

const chromiumPath = "/usr/bin/chromium"

// demo is the demo federation (the embedded six simulated systems) behind a real
// HTTP listener on 127.0.0.1, with the API server the UI talks to.
type demo struct {
	// campaigns switches the campaign-route fixture on (see serveCampaignFixture).
	campaigns atomic.Bool
	core      *core.Core
	srv       *server.Server
	http      *httptest.Server
	store     *store.Store
}

// startDemo assembles the simulated federation in-process like core.Open does, fast:
// simulated time runs 120× real time (a 2 s job uses 4 of its 10 simulated minutes) and the core probes every 500 ms. Thirty minutes
// of history are written through the store so the heatmap has something to draw.
func startDemo(t *testing.T) *demo {
	t.Helper()
	return startDemoWith(t, nil)
}

// startDemoWith is startDemo with the API options adjusted by opts (nil: none).
func startDemoWith(t *testing.T, opts func(*server.Options)) *demo {
	t.Helper()
	dir := t.TempDir()
	cat := site.Default()
	cat.Sim.Speed = 120
	cat.Sim.WorkDir = filepath.Join(dir, "sim")
	var provs []provider.Provider
	for _, sys := range cat.Systems {
		p, err := simprov.New(sys, cat.Sim, simprov.Options{Logger: slog.New(slog.DiscardHandler), Tick: 50 * time.Millisecond})
		if err != nil {
			t.Fatalf("sim provider %s: %v", sys.Name, err)
		}
		p.Start()
		t.Cleanup(func() { p.Close() })
		provs = append(provs, p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	st, err := store.Open(ctx, filepath.Join(dir, "mosaic.db"))
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	c, err := core.New(core.Options{Catalog: cat, Store: st, Providers: provs, Tick: 500 * time.Millisecond, MonitorEvery: 250 * time.Millisecond})
	if err != nil {
		t.Fatalf("core: %v", err)
	}
	go c.Run(ctx)
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	if err := c.WaitReady(wctx); err != nil {
		t.Fatal(err)
	}
	seedHistory(t, ctx, c, st)
	var o server.Options
	o.Token = "ui-test-token"
	if opts != nil {
		opts(&o)
	}
	srv, err := server.New(c, o)
	if err != nil {
		t.Fatal(err)
	}
	d := &demo{core: c, srv: srv, store: st}
	d.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.campaigns.Load() && strings.HasPrefix(r.URL.Path, "/api/campaigns") {
			serveCampaignFixture(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(d.http.Close)
	return d
}

// serveCampaignFixture answers the campaign routes in the shapes of
// internal/api/campaigns.go (core.CampaignRunSummary, CampaignRunDetail and
// CampaignTimeline), so the campaigns view is tested with a two-site run whatever
// state the launcher is in on this machine.
func serveCampaignFixture(w http.ResponseWriter, r *http.Request) {
	t0 := time.Now().Add(-10 * time.Minute).UTC()
	summary := map[string]any{"run_id": "run-7f3a", "campaign": "docking-sweep", "state": "running",
		"sites": []string{"Delta@NCSA", "Anvil@RCAC"}, "created": t0, "updated": t0.Add(9 * time.Minute)}
	counts := []map[string]any{
		{"site": "Delta@NCSA", "mailboxes": 3, "sent": 11, "received": 10, "cross_site": 5, "bytes": 5800},
		{"site": "Anvil@RCAC", "mailboxes": 2, "sent": 5, "received": 6, "cross_site": 5, "bytes": 2700},
	}
	detail := map[string]any{}
	for k, v := range summary {
		detail[k] = v
	}
	detail["exchange_url"] = "http://127.0.0.1:8642/exchange"
	detail["bootstrapped"] = true
	detail["counts"] = counts
	detail["site_status"] = []map[string]any{
		{"name": "Delta@NCSA", "mode": "submit", "agents": []string{"planner-0", "worker-0", "worker-1"}, "submitted_job": "28788224001", "state": "running"},
		{"name": "Anvil@RCAC", "mode": "attach", "agents": []string{"worker-2", "worker-3"}, "job_id": "28788224002", "state": "running"},
	}
	var msgs []map[string]any
	agents := []struct{ name, site string }{{"planner-0", "Delta@NCSA"}, {"worker-0", "Delta@NCSA"}, {"worker-1", "Delta@NCSA"}, {"worker-2", "Anvil@RCAC"}, {"worker-3", "Anvil@RCAC"}}
	for i := 0; i < 16; i++ {
		src, dst := agents[0], agents[1+i%4]
		if i%3 == 2 {
			src, dst = dst, src
		}
		msgs = append(msgs, map[string]any{"run": "run-7f3a", "time": t0.Add(time.Duration(i) * 30 * time.Second), "src": src.name, "dest": dst.name,
			"src_site": src.site, "dest_site": dst.site, "kind": "action-request", "size": 512 + i, "cross_site": src.site != dst.site})
	}
	var body any
	switch r.URL.Path {
	case "/api/campaigns":
		body = map[string]any{"runs": []any{summary}}
	case "/api/campaigns/run-7f3a":
		body = detail
	case "/api/campaigns/run-7f3a/timeline":
		body = map[string]any{"run_id": "run-7f3a", "source": "exchange", "messages": msgs, "counts": counts}
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(body)
}

// seedHistory writes 30 one-minute samples ending now, derived from the live snapshot
// with a varying load, so the queue-history heatmap has a time axis.
func seedHistory(t *testing.T, ctx context.Context, c *core.Core, st *store.Store) {
	t.Helper()
	snap, err := c.Federation()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := 30; i >= 1; i-- {
		cp := *snap
		cp.TakenAt = now.Add(-time.Duration(i) * time.Minute)
		cp.Records = append([]model.ResourceRecord(nil), snap.Records...)
		for j := range cp.Records {
			r := &cp.Records[j]
			r.Timestamp = cp.TakenAt
			r.PendingJobs = (r.PendingJobs + i*(j+3)) % 40
			if r.TotalGPUs > 0 {
				r.FreeGPUs = (r.TotalGPUs * ((i + j) % 10)) / 10
			}
			r.FreeCores = (r.TotalCores * ((i * (j + 1)) % 10)) / 10
		}
		if err := st.SaveSnapshot(ctx, &cp, time.Minute); err != nil {
			t.Fatalf("seed history: %v", err)
		}
	}
}

// browser is one headless Chromium tab with every console error, uncaught exception
// and browser-log error collected.
type browser struct {
	ctx       context.Context
	mu        sync.Mutex
	errors    []string
	netErrors []string // HTTP error statuses the console logged ("network" source)
	shots     string
}

// chromiumOrSkip returns the Chromium path, skipping locally and failing under CI when
// it is missing.
func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err == nil {
		return chromiumPath
	}
	if p, err := exec.LookPath("chromium"); err == nil {
		return p
	}
	msg := "Chromium not found at " + chromiumPath + ": install it with `apt-get install -y chromium` to run the browser tests"
	rigenv.Missing(t, msg)
	return ""
}

// newBrowser starts headless Chromium with an empty profile and a width×height window.
func newBrowser(t *testing.T, width, height int) *browser {
	t.Helper()
	exe := chromiumOrSkip(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(width, height),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	t.Cleanup(func() { cancel(); acancel() })
	// The first Do starts the browser; it must not carry a timeout.
	if err := chromedp.Do(ctx); err != nil {
		t.Fatalf("start Chromium (%s): %v", exe, err)
	}
	b := &browser{ctx: ctx, shots: shotDir(t)}
	msgs := chromedp.Console(ctx)
	go func() {
		for m, err := range msgs {
			if err != nil {
				return
			}
			// HTTP error statuses are reported with source "network"; the tests judge
			// expected ones (a campaigns route that is not there yet may 404).
			if m.IsException() || (m.Type == chromedp.ConsoleError && m.Source != "network") {
				b.addError(m.String() + " (" + m.URL + ")")
			} else if m.Type == chromedp.ConsoleError {
				b.mu.Lock()
				b.netErrors = append(b.netErrors, m.String()+" ("+m.URL+")")
				b.mu.Unlock()
			}
		}
	}()
	return b
}

func (b *browser) addError(s string) {
	b.mu.Lock()
	b.errors = append(b.errors, s)
	b.mu.Unlock()
}

// noErrors fails the test if the page logged an error or threw.
func (b *browser) noErrors(t *testing.T, where string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.errors) > 0 {
		t.Fatalf("%s: the page reported errors:\n  %s", where, strings.Join(b.errors, "\n  "))
	}
}

// noNetworkErrors fails the test if the console logged an HTTP error status, except
// for URLs containing one of the expected substrings.
func (b *browser) noNetworkErrors(t *testing.T, where string, expected ...string) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var bad []string
	for _, e := range b.netErrors {
		ok := false
		for _, x := range expected {
			ok = ok || strings.Contains(e, x)
		}
		if !ok {
			bad = append(bad, e)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("%s: the console logged HTTP errors:\n  %s", where, strings.Join(bad, "\n  "))
	}
}

// do runs actions with a deadline.
func (b *browser) do(t *testing.T, what string, timeout time.Duration, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, timeout)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		loc, _ := chromedp.Run(b.ctx, chromedp.Location())
		b.mu.Lock()
		errs := append([]string(nil), b.errors...)
		b.mu.Unlock()
		b.shot(t, "failure-"+safe(what))
		t.Fatalf("%s: %v (page %s; page errors: %v)", what, err, loc, errs)
	}
}

// eval evaluates a JavaScript expression.
func eval[T any](t *testing.T, b *browser, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// waitJS polls a JavaScript condition until it is true.
func (b *browser) waitJS(t *testing.T, what, cond string, timeout time.Duration) {
	t.Helper()
	b.do(t, what, timeout, chromedp.Func(func(ctx context.Context, tg *chromedp.Target) error {
		_, err := chromedp.Poll[bool](cond, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(0))(ctx, tg)
		return err
	}))
}

// shot writes a PNG of the viewport into the screenshot directory.
func (b *browser) shot(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	// Toasts come and go; keep them out of the pictures.
	_, _ = chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById('toasts')?.replaceChildren()`))
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Logf("screenshot %s: %v", name, err)
		return
	}
	p := filepath.Join(b.shots, name+".png")
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot %s", p)
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, strings.ToLower(s))
}

// shotDir is $MOSAIC_UI_SCREENSHOTS when set (kept), else a temporary directory.
func shotDir(t *testing.T) string {
	if d := os.Getenv("MOSAIC_UI_SCREENSHOTS"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}
