package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// LaunchOptions configures Launch.
type LaunchOptions struct {
	Spec  *Spec
	RunID string
	Sites []SiteSpec
	// Catalog resolves site names to login nodes and dialects.
	Catalog *site.Catalog
	// Root is the campaigns directory (run directories are created under it).
	Root string
	// ExchangeURL is an external exchange the agents use (with ExchangeToken);
	// "" runs one in the launcher on ExchangeListen (default 127.0.0.1:0).
	ExchangeURL, ExchangeToken, ExchangeListen string
	// AgentExchangeURL overrides the URL handed to agents (e.g. a reachable
	// address of the launcher's host); "" = the listener's URL.
	AgentExchangeURL string
	// ExchangeLimits are the quotas of the launcher's own exchange (its
	// limit and lease fields; zero = the defaults). A campaign's
	// exchange.max_message_bytes wins over a zero MaxMessageBytes.
	ExchangeLimits exchange.Config
	// MosaicBin is the mosaic binary on the sites (default: this executable).
	MosaicBin string
	// AutoBootstrap sends the user task once every site is ready.
	AutoBootstrap bool
	Recipient     string
	// StartupTimeout bounds readiness (queue wait included); 0 = 600 s.
	StartupTimeout time.Duration
	// SpawnArgs are appended verbatim to every remote spawn-site.
	SpawnArgs []string
	// Forward is exported on every site before its env script.
	Forward map[string]string
	// Account and WorkDir are defaults for sites that do not set them.
	Account, WorkDir string
	// LocalEnv is extra environment for commands on kind-local sites.
	LocalEnv []string
	// Out receives progress; WaitingEvery is the "still waiting" period (30 s).
	Out          io.Writer
	WaitingEvery time.Duration
	// Poll is the readiness/monitor poll period (default 1 s).
	Poll time.Duration
	// Logger receives the embedded exchange's log.
	Logger *slog.Logger
	// Tunnel says when a site reaches the launcher's exchange through a
	// reverse ssh tunnel and a relay on its login node: TunnelAuto (default:
	// when the login node cannot reach it), TunnelAlways or TunnelNever.
	Tunnel string
	// NewBackend, when set, replaces the attach/submit backends (tests).
	NewBackend func(l SiteLaunch, sys site.System) (Backend, error)
	// CheckSites verifies on every login node, before launching, that mosaic
	// and the campaign file are there and the exchange answers.
	CheckSites bool
}

// Launch brings the campaign up on every site: all sites start in parallel,
// readiness (every agent of a slice registered) is awaited in parallel, any
// failure tears every started site down, and with AutoBootstrap the user task
// is sent once all are ready. It then follows the sites until they all end or
// ctx is cancelled (Ctrl-C), in which case every site is stopped: no job or
// process is left behind. Everything needed to stop the run later is in the
// run directory before any remote work starts.
func Launch(ctx context.Context, o LaunchOptions) (err error) {
	out := &syncWriter{w: o.Out}
	o.Out = out
	if o.StartupTimeout <= 0 {
		o.StartupTimeout = DefaultStartupTimeout
	}
	if o.WaitingEvery <= 0 {
		o.WaitingEvery = 30 * time.Second
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	plan, err := planLaunch(&o)
	if err != nil {
		return err
	}

	// Exchange: external, or embedded in this launcher.
	var srv *exchange.Server
	var listenAddr string
	localURL, agentURL, token := o.ExchangeURL, o.ExchangeURL, o.ExchangeToken
	if o.ExchangeURL == "" && o.Spec.Exchange.URL != "" {
		o.ExchangeURL, localURL, agentURL = o.Spec.Exchange.URL, o.Spec.Exchange.URL, o.Spec.Exchange.URL
	}
	if o.ExchangeURL == "" {
		var be exchange.Backend
		if o.Spec.Exchange.Backend == "redis" {
			r, rerr := exchange.NewRedis(ctx, o.Spec.Exchange.RedisURL, "")
			if rerr != nil {
				return fmt.Errorf("exchange backend redis (%s): %w", o.Spec.Exchange.RedisURL, rerr)
			}
			be = r
		}
		cfg := o.ExchangeLimits
		cfg.Backend, cfg.Logger = be, o.Logger
		if cfg.MaxMessageBytes == 0 {
			cfg.MaxMessageBytes = o.Spec.Exchange.MaxMessageBytes
		}
		srv = exchange.NewServer(cfg)
		defer srv.Close()
		listen := o.ExchangeListen
		if listen == "" {
			listen = "127.0.0.1:0"
		}
		ln, lerr := net.Listen("tcp", listen)
		if lerr != nil {
			return fmt.Errorf("exchange: listen on %s: %w (pass --exchange-listen HOST:PORT with a free port, or --exchange-url)", listen, lerr)
		}
		sctx, stopSrv := context.WithCancel(context.WithoutCancel(ctx))
		srvDone := make(chan struct{})
		go func() { _ = srv.Serve(sctx, ln); close(srvDone) }()
		defer func() { stopSrv(); <-srvDone }()
		listenAddr = ln.Addr().String()
		localURL = "http://" + listenAddr
		agentURL = localURL
		if err := srv.RegisterCampaign(ctx, o.RunID, o.Spec.Campaign); err != nil {
			return err
		}
		for _, p := range plan {
			for _, a := range p.spec.Agents {
				_ = srv.SetAgentSite(ctx, o.RunID, a, p.spec.Name)
			}
		}
		if token, err = srv.IssueToken(ctx, o.RunID); err != nil {
			return err
		}
		fmt.Fprintf(out, "exchange: serving run %s on %s\n", o.RunID, localURL)
	} else if token == "" {
		return fmt.Errorf("--exchange-url %s needs a token: set %s", o.ExchangeURL, agent.EnvExchangeToken)
	} else if agent.IsAgentToken(token) {
		return fmt.Errorf("--exchange-url %s needs the run's token (the one given to `mosaic exchange serve`), not an agent token (%s…): agents' tokens are derived from it", o.ExchangeURL, agent.AgentTokenPrefix)
	}
	if o.AgentExchangeURL != "" {
		agentURL = o.AgentExchangeURL
	}
	cl, err := agent.New(localURL, token, agent.WithRequestWindow(5*time.Second))
	if err != nil {
		return err
	}
	if srv == nil {
		if err := checkAgentTokens(ctx, localURL, token, o.RunID, o.Spec); err != nil {
			return err
		}
	}
	siteURL := map[string]string{}
	for _, p := range plan {
		siteURL[p.spec.Name] = agentURL
	}
	if srv != nil && o.AgentExchangeURL == "" {
		tunnels, err := openTunnels(ctx, plan, &o, listenAddr, siteURL, out)
		defer func() {
			for _, t := range tunnels {
				t.Close()
			}
		}()
		if err != nil {
			return err
		}
	}
	if o.CheckSites {
		if err := checkSites(ctx, plan, &o, siteURL, out); err != nil {
			return err
		}
	}

	// Persist before acting.
	abs, _ := filepath.Abs(o.Spec.Path)
	st := RunState{RunID: o.RunID, Campaign: abs, CampaignName: o.Spec.Name, State: RunStarting, ExchangeURL: agentURL, LauncherPID: os.Getpid()}
	for _, p := range plan {
		st.Sites = append(st.Sites, SiteState{SiteSpec: p.spec, State: "planned", Exchange: siteURL[p.spec.Name]})
	}
	dir, err := CreateRunDir(o.Root, st)
	if err != nil {
		return err
	}
	if err := dir.WriteToken(token); err != nil {
		return err
	}
	fmt.Fprintf(out, "run %s: directory %s\n", o.RunID, dir.Path)
	finish := func(state string, e error) {
		_ = dir.Update(func(s *RunState) {
			s.State = state
			if e != nil {
				s.Error = e.Error()
			}
		})
		if srv != nil {
			if recs, terr := srv.TimelineContext(context.WithoutCancel(ctx), o.RunID); terr == nil {
				_ = dir.WriteJSON("timeline.json", recs)
			}
		}
	}

	backends := make([]Backend, len(plan))
	for i, p := range plan {
		l := SiteLaunch{Spec: p.spec, RunID: o.RunID, Campaign: p.campaign, MosaicBin: o.MosaicBin, Exchange: siteURL[p.spec.Name],
			Tokens: SliceTokens(token, o.RunID, p.spec.Agents), Startup: o.StartupTimeout, SpawnArgs: o.SpawnArgs, Forward: o.Forward, Dir: dir, Out: out}
		var b Backend
		var berr error
		if o.NewBackend != nil {
			b, berr = o.NewBackend(l, p.sys)
		} else if p.spec.Mode == ModeAttach {
			b, berr = NewAttachBackend(p.sys, l, o.LocalEnv)
		} else {
			b, berr = NewSubmitBackend(p.sys, l, o.LocalEnv)
		}
		if berr != nil {
			closeAll(backends[:i])
			finish(RunFailed, berr)
			return berr
		}
		backends[i] = b
	}
	defer closeAll(backends)
	stopAll := func(why string) {
		fmt.Fprintf(out, "stopping every site (%s)\n", why)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		for _, b := range backends {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := b.Stop(sctx); err != nil {
					fmt.Fprintf(out, "%s: stop: %v\n", b.Site(), err)
				} else {
					_ = dir.UpdateSite(b.Site(), func(s *SiteState) {
						if !isFinalSiteState(s.State) || s.State == "ready" || s.State == "running" {
							s.State = "stopped"
						}
					})
				}
			}()
		}
		wg.Wait()
	}

	// Start in parallel.
	if err := parallel(ctx, backends, func(ctx context.Context, b Backend) error { return b.Start(ctx) }); err != nil {
		stopAll("a site failed to start")
		finish(RunFailed, err)
		return err
	}
	// Ready in parallel.
	if err := parallel(ctx, backends, func(ctx context.Context, b Backend) error {
		return waitSiteReady(ctx, cl, o, b, planFor(plan, b.Site()), dir, out)
	}); err != nil {
		why := "a site failed before it was ready"
		if ctx.Err() != nil {
			why = "interrupted"
		}
		stopAll(why)
		finish(RunFailed, err)
		return err
	}
	_ = dir.Update(func(s *RunState) { s.State = RunReady })
	fmt.Fprintf(out, "all %d sites ready\n", len(backends))
	if o.AutoBootstrap {
		berr := Bootstrap(ctx, cl, o.Spec, o.RunID, BootstrapOptions{Recipient: o.Recipient, Timeout: time.Minute, Log: out})
		if berr != nil {
			fmt.Fprintf(out, "bootstrap failed: %v\nthe agents keep running; rerun it with:\n  %s %s campaign bootstrap --campaign %s --run-id %s --exchange-url %s\n",
				berr, agent.EnvExchangeToken+"=$(cat "+filepath.Join(dir.Path, "token")+")", o.MosaicBin, abs, o.RunID, localURL)
		} else {
			_ = dir.Update(func(s *RunState) { s.Bootstrapped = true })
		}
	} else {
		fmt.Fprintf(out, "send the user task with:\n  %s campaign bootstrap --campaign %s --run-id %s --exchange-url %s  (token: %s)\n",
			o.MosaicBin, abs, o.RunID, localURL, filepath.Join(dir.Path, "token"))
	}
	return follow(ctx, o, backends, dir, srv, stopAll, finish)
}

// checkAgentTokens asks an external exchange, with the first agent's derived
// token, about that agent's mailbox: an exchange that does not know the run's
// campaign refuses every agent token, which is better said now than after
// every site has started.
func checkAgentTokens(ctx context.Context, url, token, runID string, s *Spec) error {
	if len(s.Agents) == 0 {
		return nil
	}
	name := s.Agents[0].Name
	c, err := agent.New(url, agent.TokenFor(token, runID, name), agent.WithRequestWindow(5*time.Second))
	if err != nil {
		return err
	}
	if _, err := c.Status(ctx, agent.AgentID(runID, name)); errors.Is(err, agent.ErrForbidden) {
		return fmt.Errorf("exchange %s refuses the token of agent %s derived from %s: it does not know run %s's campaign, or the token is not this run's; start it with `mosaic exchange serve --run-id %s --campaign %s` and the same token (%w)",
			url, name, agent.EnvExchangeToken, runID, runID, s.Path, err)
	} else if err != nil {
		return fmt.Errorf("exchange %s: %w", url, err)
	}
	return nil
}

// follow watches the sites until all end or ctx is cancelled.
func follow(ctx context.Context, o LaunchOptions, backends []Backend, dir *RunDir, srv *exchange.Server, stopAll func(string), finish func(string, error)) error {
	out := o.Out
	final := map[string]bool{}
	var failures []error
	tick := time.NewTicker(max(o.Poll, 2*time.Second))
	defer tick.Stop()
	lastN := -1
	for {
		if srv != nil {
			if recs, err := srv.TimelineContext(ctx, o.RunID); err == nil && len(recs) != lastN {
				lastN = len(recs)
				_ = dir.WriteJSON("timeline.json", recs)
			}
		}
		for _, b := range backends {
			if final[b.Site()] {
				continue
			}
			state, fin, err := b.Poll(ctx)
			if ctx.Err() != nil {
				break
			}
			if fin {
				final[b.Site()] = true
				_ = dir.UpdateSite(b.Site(), func(s *SiteState) {
					s.State = state
					if err != nil {
						s.Error = err.Error()
					}
				})
				if err != nil {
					failures = append(failures, err)
					fmt.Fprintln(out, err)
				} else {
					fmt.Fprintf(out, "%s: slice finished (%s)\n", b.Site(), state)
				}
			}
		}
		if len(final) == len(backends) {
			err := errors.Join(failures...)
			if err != nil {
				finish(RunFailed, err)
				return err
			}
			finish(RunFinished, nil)
			printCounts(ctx, out, srv, o.RunID)
			fmt.Fprintf(out, "run %s finished\n", o.RunID)
			return nil
		}
		select {
		case <-ctx.Done():
			stopAll("interrupted")
			finish(RunStopped, ctx.Err())
			printCounts(context.WithoutCancel(ctx), out, srv, o.RunID)
			return fmt.Errorf("run %s stopped: %w", o.RunID, ctx.Err())
		case <-tick.C:
		}
	}
}

func printCounts(ctx context.Context, out io.Writer, srv *exchange.Server, run string) {
	if srv == nil {
		return
	}
	counts, err := srv.SiteCounts(ctx, run)
	if err != nil {
		return
	}
	for _, c := range counts {
		fmt.Fprintf(out, "  site %-12s mailboxes %d  sent %d  received %d  cross-site %d\n", orDash(c.Site), c.Mailboxes, c.Sent, c.Received, c.CrossSite)
	}
}

// waitSiteReady waits until every agent of the site's slice is registered,
// failing at once when the slice dies, and printing "still waiting" lines.
func waitSiteReady(ctx context.Context, cl *agent.Client, o LaunchOptions, b Backend, p sitePlan, dir *RunDir, out io.Writer) error {
	start := time.Now()
	lastSay := start
	lastPoll := time.Time{}
	state := ""
	for {
		var missing []string
		for _, a := range p.spec.Agents {
			stx, err := cl.Status(ctx, agent.AgentID(o.RunID, a))
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				return fmt.Errorf("site %s: exchange status: %w", b.Site(), err)
			}
			if stx != agent.StatusActive {
				missing = append(missing, a)
			}
		}
		if len(missing) == 0 {
			_ = dir.UpdateSite(b.Site(), func(s *SiteState) { s.State = "ready" })
			fmt.Fprintf(out, "%s: ready (%s registered after %s)\n", b.Site(), strings.Join(p.spec.Agents, ", "), time.Since(start).Round(time.Second))
			return nil
		}
		if time.Since(lastPoll) >= 2*time.Second {
			lastPoll = time.Now()
			s, fin, err := b.Poll(ctx)
			state = s
			if err != nil && fin {
				return err
			}
			if fin {
				return fmt.Errorf("site %s: the slice ended (%s) before [%s] registered", b.Site(), s, strings.Join(missing, " "))
			}
		}
		if time.Since(start) > o.StartupTimeout {
			return fmt.Errorf("site %s: [%s] not registered after %s (state %s); check the site log (mosaic campaign status %s)", b.Site(), strings.Join(missing, " "), o.StartupTimeout, state, o.RunID)
		}
		if time.Since(lastSay) >= o.WaitingEvery {
			lastSay = time.Now()
			fmt.Fprintf(out, "%s: still waiting for [%s] (%s, %s)\n", b.Site(), strings.Join(missing, " "), state, time.Since(start).Round(time.Second))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(o.Poll):
		}
	}
}

type sitePlan struct {
	spec     SiteSpec
	sys      site.System
	campaign string
}

func planFor(plan []sitePlan, name string) sitePlan {
	for _, p := range plan {
		if p.spec.Name == name {
			return p
		}
	}
	return sitePlan{}
}

// planLaunch checks everything that can be checked locally, before any remote
// work: the campaign (strict), each --site, slices, and the catalog.
func planLaunch(o *LaunchOptions) ([]sitePlan, error) {
	if err := ValidateRunID(o.RunID); err != nil {
		return nil, err
	}
	if err := o.Spec.Validate(Strict); err != nil {
		return nil, fmt.Errorf("campaign is invalid:\n%w", err)
	}
	if len(o.Sites) == 0 {
		return nil, errors.New("no --site given; add one per site, e.g. --site alpha:queue=cpu;walltime=00:30:00;agents=coordinator")
	}
	var errs []error
	for _, sp := range o.Sites {
		if sp.Mode == ModeAuto {
			errs = append(errs, fmt.Errorf("--site %s: auto placement must be resolved before launch (campaign.ResolveAuto; the CLI asks the running core)", sp))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := ResolveSlices(o.Spec, o.Sites); err != nil {
		return nil, err
	}
	if o.Catalog == nil {
		return nil, errors.New("no sites catalog; pass --sites FILE or set MOSAIC_SITES")
	}
	if o.MosaicBin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("find the mosaic binary: %w; pass --mosaic-bin", err)
		}
		o.MosaicBin = exe
	}
	abs, err := filepath.Abs(o.Spec.Path)
	if err != nil {
		return nil, err
	}
	var plan []sitePlan
	for _, sp := range o.Sites {
		sys, ok := o.Catalog.System(sp.Name)
		if !ok {
			var names []string
			for _, s := range o.Catalog.Systems {
				names = append(names, s.Name)
			}
			errs = append(errs, fmt.Errorf("site %s is not in the sites catalog (known: %s)", sp.Name, strings.Join(names, ", ")))
			continue
		}
		if sys.Kind != site.KindSSH && sys.Kind != site.KindLocal {
			errs = append(errs, fmt.Errorf("site %s is of kind %s; campaigns launch on kind ssh or local sites", sp.Name, sys.Kind))
			continue
		}
		if sp.Account == "" {
			sp.Account = o.Account
		}
		if sp.WorkDir == "" {
			sp.WorkDir = o.WorkDir
		}
		if sp.Mode == ModeSubmit && sp.Account != "" && len(sys.Accounts) > 0 && !slices.Contains(sys.Accounts, sp.Account) {
			errs = append(errs, fmt.Errorf("site %s: account %s is not among the site's accounts (%s)", sp.Name, sp.Account, strings.Join(sys.Accounts, ", ")))
		}
		camp := sp.Campaign
		if camp == "" {
			camp = abs
		}
		plan = append(plan, sitePlan{spec: sp, sys: *sys, campaign: camp})
	}
	for k := range o.Forward {
		if !envKeyOK(k) {
			errs = append(errs, fmt.Errorf("--forward-env %q is not a valid variable name", k))
		}
	}
	return plan, errors.Join(errs...)
}

// parallel runs fn for every backend at once; the first failure cancels the
// others' context. It returns the failures (not the resulting cancellations).
func parallel(ctx context.Context, bs []Backend, fn func(context.Context, Backend) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(bs))
	var wg sync.WaitGroup
	for i, b := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[i] = fn(ctx, b); errs[i] != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	var real []error
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			real = append(real, e)
		}
	}
	if len(real) == 0 {
		for _, e := range errs {
			if e != nil {
				return e
			}
		}
	}
	return errors.Join(real...)
}

func closeAll(bs []Backend) {
	for _, b := range bs {
		if b != nil {
			_ = b.Close()
		}
	}
}

// openTunnels opens a tunnel for each ssh site that needs one (see
// LaunchOptions.Tunnel) and points the site's agents at it.
func openTunnels(ctx context.Context, plan []sitePlan, o *LaunchOptions, listenAddr string, siteURL map[string]string, out io.Writer) ([]*siteTunnel, error) {
	mode := o.Tunnel
	if mode == "" {
		mode = TunnelAuto
	}
	if mode == TunnelNever {
		return nil, nil
	}
	var mu sync.Mutex
	var tunnels []*siteTunnel
	errs := make([]error, len(plan))
	var wg sync.WaitGroup
	for i, p := range plan {
		if p.sys.Kind != site.KindSSH {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := newSiteConn(p.sys, o.LocalEnv)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close()
			if mode == TunnelAuto && (!loopbackURL(siteURL[p.spec.Name]) || pingFrom(ctx, conn, o.MosaicBin, siteURL[p.spec.Name])) {
				return
			}
			t, err := openTunnel(ctx, conn, o.MosaicBin, listenAddr)
			if err != nil {
				errs[i] = err
				return
			}
			mu.Lock()
			tunnels = append(tunnels, t)
			siteURL[p.spec.Name] = t.URL
			mu.Unlock()
			fmt.Fprintf(out, "%s: agents reach the exchange through a tunnel from %s at %s\n", p.spec.Name, conn.login(), t.URL)
		}()
	}
	wg.Wait()
	return tunnels, errors.Join(errs...)
}

func isFinalSiteState(s string) bool {
	switch s {
	case "succeeded", "failed", "cancelled", "stopped", "timeout", "submit_error":
		return true
	}
	return false
}
