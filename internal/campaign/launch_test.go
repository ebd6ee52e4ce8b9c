package campaign

import (
	"context"
	"errors"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// scriptedBackend registers its slice's mailboxes on the launcher's exchange
// (as a real slice would) unless told to fail; it records Start/Stop.
type scriptedBackend struct {
	l         SiteLaunch
	failStart bool
	dieAfter  time.Duration // 0 = never dies; else Poll fails after this
	noAgents  bool

	mu      sync.Mutex
	started time.Time
	stopped bool
}

func (b *scriptedBackend) Site() string { return b.l.Spec.Name }
func (b *scriptedBackend) Start(ctx context.Context) error {
	if b.failStart {
		return errors.New("site " + b.l.Spec.Name + ": sbatch refused the job: invalid partition")
	}
	b.mu.Lock()
	b.started = time.Now()
	b.mu.Unlock()
	if b.noAgents {
		return nil
	}
	for _, a := range b.l.Spec.Agents {
		// Each agent registers with its own token, as spawn-site does.
		c, err := agent.New(b.l.Exchange, b.l.Tokens[a], agent.WithSite(b.l.Spec.Name))
		if err != nil {
			return err
		}
		if err := c.Register(ctx, agent.AgentID(b.l.RunID, a)); err != nil {
			return err
		}
	}
	return nil
}
func (b *scriptedBackend) Poll(ctx context.Context) (string, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.stopped {
		return "cancelled", true, nil
	}
	if b.dieAfter > 0 && time.Since(b.started) > b.dieAfter {
		return "failed", true, errors.New("site " + b.l.Spec.Name + ": job ended failed\n--- tail of site.log ---\npython3: not found")
	}
	return "pending", false, nil
}
func (b *scriptedBackend) Stop(ctx context.Context) error {
	b.mu.Lock()
	b.stopped = true
	b.mu.Unlock()
	return nil
}
func (b *scriptedBackend) Close() error { return nil }

type launchRig struct {
	mu       sync.Mutex
	backends map[string]*scriptedBackend
	out      syncBuf
	opts     LaunchOptions
}

func newLaunchRig(t *testing.T, configure func(*scriptedBackend)) *launchRig {
	s, err := Load(filepath.Join(exampleDir, "federated-chat.jsonc"))
	if err != nil {
		t.Fatal(err)
	}
	cat := &site.Catalog{Systems: []site.System{{Name: "aurora", Kind: site.KindLocal}, {Name: "crux", Kind: site.KindLocal}}}
	r := &launchRig{backends: map[string]*scriptedBackend{}}
	r.opts = LaunchOptions{
		Spec: s, RunID: "t1", Catalog: cat, Root: t.TempDir(), MosaicBin: "/bin/true",
		Sites:          []SiteSpec{{Name: "aurora", Mode: ModeSubmit, Queue: "q", Walltime: 60e9}, {Name: "crux", Mode: ModeAttach, Host: "h"}},
		StartupTimeout: 5 * time.Second, Poll: 20 * time.Millisecond, WaitingEvery: 100 * time.Millisecond, Out: &r.out,
		NewBackend: func(l SiteLaunch, _ site.System) (Backend, error) {
			b := &scriptedBackend{l: l}
			configure(b)
			r.mu.Lock()
			r.backends[l.Spec.Name] = b
			r.mu.Unlock()
			return b, nil
		},
	}
	return r
}

func (r *launchRig) allStopped(t *testing.T) {
	t.Helper()
	for n, b := range r.backends {
		if !b.stopped {
			t.Errorf("site %s was not stopped:\n%s", n, r.out.String())
		}
	}
}

func TestLaunchStartFailureStopsEverySite(t *testing.T) {
	r := newLaunchRig(t, func(b *scriptedBackend) { b.failStart = b.l.Spec.Name == "crux" })
	err := Launch(context.Background(), r.opts)
	if err == nil || !strings.Contains(err.Error(), "invalid partition") {
		t.Fatalf("err %v", err)
	}
	r.allStopped(t)
	d, _ := OpenRunDir(r.opts.Root, "t1")
	if d.State().State != RunFailed {
		t.Errorf("run state %s", d.State().State)
	}
}

func TestLaunchSiteDyingBeforeReadyFailsAtOnce(t *testing.T) {
	r := newLaunchRig(t, func(b *scriptedBackend) {
		if b.l.Spec.Name == "aurora" {
			b.noAgents, b.dieAfter = true, 250*time.Millisecond
		}
	})
	// A long startup timeout: failing "at once" means failing on the site's death (its
	// error and log tail), never by running into the timeout.
	r.opts.StartupTimeout = 2 * time.Minute
	err := Launch(context.Background(), r.opts)
	if err == nil || !strings.Contains(err.Error(), "python3: not found") {
		t.Fatalf("err %v; want the log tail", err)
	}
	if strings.Contains(err.Error(), "not registered after") {
		t.Errorf("a dead site must fail the launch at once, not at the timeout: %v", err)
	}
	if !strings.Contains(r.out.String(), "aurora: still waiting for [coordinator]") {
		t.Errorf("no still-waiting line:\n%s", r.out.String())
	}
	r.allStopped(t)
}

func TestLaunchReadyBootstrapThenInterrupt(t *testing.T) {
	r := newLaunchRig(t, func(*scriptedBackend) {})
	r.opts.AutoBootstrap = true
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Launch(ctx, r.opts) }()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(r.out.String(), "sent the user task to coordinator") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	err := <-done
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v\n%s", err, r.out.String())
	}
	r.allStopped(t)
	d, _ := OpenRunDir(r.opts.Root, "t1")
	st := d.State()
	if st.State != RunStopped || !st.Bootstrapped {
		t.Errorf("run state %+v", st)
	}
}

func TestLaunchRefusesBeforeRemoteWork(t *testing.T) {
	r := newLaunchRig(t, func(*scriptedBackend) {})
	r.opts.Sites = []SiteSpec{{Name: "aurora", Mode: ModeSubmit, Queue: "q", Walltime: 60e9}}
	err := Launch(context.Background(), r.opts)
	if err == nil || !strings.Contains(err.Error(), "no --site runs agent(s) worker-a, worker-b") || len(r.backends) != 0 {
		t.Fatalf("err %v, backends %d", err, len(r.backends))
	}
	r.opts.Sites = []SiteSpec{{Name: "aurora", Mode: ModeSubmit, Queue: "q", Walltime: 60e9}, {Name: "nowhere", Mode: ModeAttach, Host: "h", Agents: []string{"worker-a", "worker-b"}}}
	if err := Launch(context.Background(), r.opts); err == nil || !strings.Contains(err.Error(), "site nowhere is not in the sites catalog") {
		t.Fatalf("err %v", err)
	}
}

// TestLaunchExternalExchange: with --exchange-url the launcher hands each site
// the agents' tokens derived from the run token; an exchange that does not know
// the campaign (and so none of those tokens) is refused before any site starts.
func TestLaunchExternalExchange(t *testing.T) {
	for _, withCampaign := range []bool{false, true} {
		r := newLaunchRig(t, func(*scriptedBackend) {})
		srv := exchange.NewServer(exchange.Config{Logger: slog.New(slog.DiscardHandler)})
		ts := httptest.NewServer(srv)
		defer ts.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if withCampaign {
			if err := srv.RegisterCampaign(ctx, "t1", r.opts.Spec.Campaign); err != nil {
				t.Fatal(err)
			}
		}
		tok, err := srv.IssueToken(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		r.opts.ExchangeURL, r.opts.ExchangeToken = ts.URL, tok
		if withCampaign {
			done := make(chan error, 1)
			go func() { done <- Launch(ctx, r.opts) }()
			for i := 0; i < 250 && !strings.Contains(r.out.String(), "all 2 sites ready"); i++ {
				time.Sleep(20 * time.Millisecond)
			}
			cancel()
			err = <-done
		} else {
			err = Launch(ctx, r.opts)
		}
		if !withCampaign {
			if err == nil || !strings.Contains(err.Error(), "--campaign") || len(r.backends) != 0 {
				t.Errorf("exchange without the campaign: %v (%d sites started)", err, len(r.backends))
			}
			continue
		}
		// The sites registered with their own tokens (scriptedBackend), so the
		// launch got as far as following them.
		if !strings.Contains(r.out.String(), "all 2 sites ready") {
			t.Errorf("external exchange with the campaign: %v\n%s", err, r.out.String())
		}
		for _, b := range r.backends {
			for _, a := range b.l.Spec.Agents {
				if b.l.Tokens[a] != agent.TokenFor(tok, "t1", a) {
					t.Errorf("site %s got token %q for %s", b.Site(), b.l.Tokens[a], a)
				}
			}
			if len(b.l.Tokens) != len(b.l.Spec.Agents) {
				t.Errorf("site %s got tokens of other sites' agents: %v", b.Site(), b.l.Tokens)
			}
		}
	}
}

// TestLaunchExchangeLimits: the launcher's own exchange enforces the limits it
// is given (here: fewer mailboxes than the campaign has agents).
func TestLaunchExchangeLimits(t *testing.T) {
	r := newLaunchRig(t, func(*scriptedBackend) {})
	r.opts.ExchangeLimits = exchange.Config{MaxMailboxesPerRun: 2}
	err := Launch(context.Background(), r.opts)
	if err == nil || !strings.Contains(err.Error(), "MaxMailboxesPerRun=2") {
		t.Fatalf("err %v, want the mailbox quota", err)
	}
	r.allStopped(t)
}
