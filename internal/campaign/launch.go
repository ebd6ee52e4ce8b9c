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
	// Color paints state transitions in it (the caller decides, from the real
	// terminal: Out may be a writer wrapped around it).
	Out          io.Writer
	Color        bool
	WaitingEvery time.Duration
	// Poll is the readiness/monitor poll period (default 1 s).
	Poll time.Duration
	// Logger receives the embedded exchange's log.
	Logger *slog.Logger
	// Tunnel says when a site reaches the launcher's exchange through a
	// reverse ssh tunnel and a relay on its login node: TunnelAuto (default:
	// when the login node cannot reach it), TunnelAlways or TunnelNever.
	Tunnel string
	// Jobs runs submit-mode sites' jobs as tasks of the core's engine (the
	// core implements it); submit-mode sites fail to start without it.
	Jobs Jobs
	// TasksStore names the store behind Jobs, recorded in the run directory
	// for `campaign stop` ("" = none).
	TasksStore string
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
//
// The phases are separate functions: planLaunch (local checks),
// setupExchange, persistRun, newBackends, bringUp (start and readiness),
// announceReady (bootstrap) and follow.
func Launch(ctx context.Context, o LaunchOptions) error {
	o.Out = &syncWriter{w: o.Out}
	o.defaults()
	plan, err := planLaunch(&o)
	if err != nil {
		return err
	}
	x, err := setupExchange(ctx, &o, plan)
	if err != nil {
		return err
	}
	defer x.Close()
	run, err := persistRun(&o, plan, x)
	if err != nil {
		return err
	}
	backends, err := newBackends(&o, plan, x, run.dir)
	if err != nil {
		run.finish(ctx, RunFailed, err)
		return err
	}
	defer closeAll(backends)
	if err := bringUp(ctx, &o, plan, x, run, backends); err != nil {
		return err
	}
	announceReady(ctx, &o, x, run, len(backends))
	return follow(ctx, o, backends, run.dir, run.tl, run.stopper(ctx, backends, o.Out), func(state string, e error) { run.finish(ctx, state, e) })
}

// defaults fills the zero durations, logger and writer.
func (o *LaunchOptions) defaults() {
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
	if o.Out == nil {
		o.Out = io.Discard
	}
}

// launchExchange is the exchange a launch uses: embedded in the launcher (srv
// set) or external, the URLs the launcher and each site's agents use, the
// run's operator token and the launcher's own client.
type launchExchange struct {
	srv                *exchange.Server // nil for an external exchange
	listenAddr         string
	backend, redisURL  string // the embedded exchange's backend ("memory" or "redis") and Redis URL
	localURL, agentURL string
	token              string
	bearer             string            // the user's Globus token (academy exchange; token is then "")
	siteURL            map[string]string // site -> URL its agents use (a tunnel's when one is open)
	cl                 *agent.Client
	closers            []func() // undone in reverse by Close
}

// Close ends the tunnels and the embedded exchange, last opened first.
func (x *launchExchange) Close() {
	for i := len(x.closers) - 1; i >= 0; i-- {
		x.closers[i]()
	}
	x.closers = nil
}

// setupExchange prepares the run's exchange before anything is persisted or
// started: an Academy one with the user's Globus token (setupAcademy), an
// external one (its token must be the run's, and it must know the
// campaign), or one embedded in this launcher on ExchangeListen with the
// campaign registered, each agent tagged with its site and the run token
// issued. It then opens the reverse tunnels sites need and, with CheckSites,
// checks every login node. On error everything it opened is closed.
func setupExchange(ctx context.Context, o *LaunchOptions, plan []sitePlan) (_ *launchExchange, err error) {
	x := &launchExchange{localURL: o.ExchangeURL, agentURL: o.ExchangeURL, token: o.ExchangeToken, siteURL: map[string]string{}}
	defer func() {
		if err != nil {
			x.Close()
		}
	}()
	out := o.Out
	if IsAcademy(o.Spec) {
		// Academy's exchange: the user's Globus bearer, no run token, no policy,
		// no tunnel (it is not ours to relay).
		if err := setupAcademy(ctx, o, x); err != nil {
			return nil, err
		}
		for _, p := range plan {
			x.siteURL[p.spec.Name] = x.agentURL
		}
		if o.CheckSites {
			if err := checkSites(ctx, plan, o, x.siteURL, out); err != nil {
				return nil, err
			}
		}
		return x, nil
	}
	if o.ExchangeURL == "" && o.Spec.Exchange.URL != "" {
		o.ExchangeURL, x.localURL, x.agentURL = o.Spec.Exchange.URL, o.Spec.Exchange.URL, o.Spec.Exchange.URL
	}
	if o.ExchangeURL == "" {
		if err := x.embed(ctx, o, plan); err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "exchange: serving run %s on %s\n", o.RunID, x.localURL)
	} else if x.token == "" {
		return nil, fmt.Errorf("--exchange-url %s needs a token: set %s", o.ExchangeURL, agent.EnvExchangeToken)
	} else if agent.IsAgentToken(x.token) {
		return nil, fmt.Errorf("--exchange-url %s needs the run's token (the one given to `mosaic exchange serve`), not an agent token (%s…): agents' tokens are derived from it", o.ExchangeURL, agent.AgentTokenPrefix)
	}
	if o.AgentExchangeURL != "" {
		x.agentURL = o.AgentExchangeURL
	}
	if x.cl, err = agent.New(x.localURL, x.token, agent.WithRequestWindow(5*time.Second)); err != nil {
		return nil, err
	}
	if x.srv == nil {
		if err := checkAgentTokens(ctx, x.localURL, x.token, o.RunID, o.Spec); err != nil {
			return nil, err
		}
	}
	for _, p := range plan {
		x.siteURL[p.spec.Name] = x.agentURL
	}
	if x.srv != nil && o.AgentExchangeURL == "" {
		tunnels, err := openTunnels(ctx, plan, o, x.listenAddr, x.siteURL, out)
		x.closers = append(x.closers, func() {
			for _, t := range tunnels {
				t.Close()
			}
		})
		if err != nil {
			return nil, err
		}
	}
	if o.CheckSites {
		if err := checkSites(ctx, plan, o, x.siteURL, out); err != nil {
			return nil, err
		}
	}
	return x, nil
}

// embed starts the launcher's own exchange (memory, or the campaign's Redis
// backend) on ExchangeListen, registers the campaign, tags each agent with its
// site and issues the run token.
func (x *launchExchange) embed(ctx context.Context, o *LaunchOptions, plan []sitePlan) error {
	var be exchange.Backend
	x.backend = BackendMemory
	if o.Spec.Exchange.Backend == BackendRedis {
		r, err := exchange.NewRedis(ctx, o.Spec.Exchange.RedisURL, "")
		if err != nil {
			return fmt.Errorf("exchange backend redis (%s): %w", RedactURL(o.Spec.Exchange.RedisURL), err)
		}
		be, x.backend, x.redisURL = r, BackendRedis, o.Spec.Exchange.RedisURL
	}
	cfg := o.ExchangeLimits
	cfg.Backend, cfg.Logger = be, o.Logger
	if cfg.MaxMessageBytes == 0 {
		cfg.MaxMessageBytes = o.Spec.Exchange.MaxMessageBytes
	}
	srv := exchange.NewServer(cfg)
	x.closers = append(x.closers, func() { srv.Close() })
	listen := o.ExchangeListen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("exchange: listen on %s: %w (pass --exchange-listen HOST:PORT with a free port, or --exchange-url)", listen, err)
	}
	sctx, stopSrv := context.WithCancel(context.WithoutCancel(ctx))
	srvDone := make(chan struct{})
	go func() { _ = srv.Serve(sctx, ln); close(srvDone) }()
	x.closers = append(x.closers, func() { stopSrv(); <-srvDone })
	x.srv, x.listenAddr = srv, ln.Addr().String()
	x.localURL = "http://" + x.listenAddr
	x.agentURL = x.localURL
	if err := srv.RegisterCampaign(ctx, o.RunID, o.Spec.Campaign); err != nil {
		return err
	}
	for _, p := range plan {
		for _, a := range p.spec.Agents {
			_ = srv.SetAgentSite(ctx, o.RunID, a, p.spec.Name)
		}
	}
	x.token, err = srv.IssueToken(ctx, o.RunID)
	return err
}

// launchRun is a run's directory as the launch keeps it up to date.
type launchRun struct {
	dir *RunDir
	abs string // absolute path of the campaign file
	tl  timelineSource
}

// persistRun writes the run directory before any remote work: the run's
// state (every site "planned", with the exchange URL its agents use, the
// launcher's pid and the store of its tasks) and the run token (0600), so that
// `campaign status` and `campaign stop` work from here on, even if the
// launcher dies.
func persistRun(o *LaunchOptions, plan []sitePlan, x *launchExchange) (*launchRun, error) {
	abs, _ := filepath.Abs(o.Spec.Path)
	st := RunState{RunID: o.RunID, Campaign: abs, CampaignName: o.Spec.Name, State: RunStarting, ExchangeURL: x.agentURL,
		ExchangeLocalURL: x.localURL, ExchangeListen: x.listenAddr, ExchangeBackend: x.backend, RedisURL: RedactURL(x.redisURL),
		MosaicBin: o.MosaicBin, Tunnel: o.Tunnel, LauncherPID: os.Getpid(), TasksStore: o.TasksStore}
	for _, p := range plan {
		st.Sites = append(st.Sites, SiteState{SiteSpec: p.spec, State: "planned", Exchange: x.siteURL[p.spec.Name]})
	}
	dir, err := CreateRunDir(o.Root, st)
	if err != nil {
		return nil, err
	}
	if err := dir.WriteToken(x.token); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Out, "run %s: directory %s\n", o.RunID, dir.Path)
	return &launchRun{dir: dir, abs: abs, tl: x.timeline(o.RunID)}, nil
}

// finish records the run's final state (and error), its timeline and counts.
func (r *launchRun) finish(ctx context.Context, state string, e error) {
	recordTimeline(context.WithoutCancel(ctx), r.dir, r.tl, -1)
	_ = r.dir.Update(func(s *RunState) {
		s.State = state
		if e != nil {
			s.Error = e.Error()
		}
	})
}

// timelineSource reads a run's timeline and per-site counts from the exchange
// the run uses.
type timelineSource func(ctx context.Context) ([]exchange.MessageRecord, []exchange.SiteCount, error)

// timelineReadTimeout bounds one read of the timeline (the exchange may be
// away: the follow loop must not wait for it).
const timelineReadTimeout = 10 * time.Second

// timeline is the run's timeline as this launch reads it: straight from the
// embedded exchange, else from the external one over GET /run/timeline with
// the run's token (agent.Client.Timeline).
func (x *launchExchange) timeline(run string) timelineSource {
	srv, cl := x.srv, x.cl
	return func(ctx context.Context) ([]exchange.MessageRecord, []exchange.SiteCount, error) {
		ctx, cancel := context.WithTimeout(ctx, timelineReadTimeout)
		defer cancel()
		if srv != nil {
			recs, err := srv.TimelineContext(ctx, run)
			if err != nil {
				return nil, nil, err
			}
			counts, err := srv.SiteCounts(ctx, run)
			return recs, counts, err
		}
		if cl == nil {
			return nil, nil, errors.New("no exchange client")
		}
		tl, err := cl.Timeline(ctx)
		if err != nil {
			return nil, nil, err
		}
		return tl.Messages, tl.Counts, nil
	}
}

// recordTimeline writes the run's timeline (timeline.json) and counts
// (state.json) when the number of messages differs from lastN (-1: always),
// and returns the number read; on a read error (the exchange away) it keeps
// what is recorded and returns lastN.
func recordTimeline(ctx context.Context, dir *RunDir, tl timelineSource, lastN int) int {
	if tl == nil {
		return lastN
	}
	recs, counts, err := tl(ctx)
	if err != nil {
		return lastN
	}
	if len(recs) == lastN {
		return lastN
	}
	if recs == nil {
		recs = []exchange.MessageRecord{}
	}
	_ = dir.WriteJSON("timeline.json", recs)
	_ = dir.Update(func(s *RunState) { s.Counts = counts })
	return len(recs)
}

// stopper returns the function that stops every site in parallel (bounded to
// two minutes, whatever ctx says), recording each stopped site.
func (r *launchRun) stopper(ctx context.Context, backends []Backend, out io.Writer) func(why string) {
	return func(why string) {
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
					_ = r.dir.UpdateSite(b.Site(), func(s *SiteState) {
						if !isFinalSiteState(s.State) || s.State == "ready" || s.State == "running" {
							s.State = "stopped"
						}
					})
				}
			}()
		}
		wg.Wait()
	}
}

// newBackends builds one backend per site: attach, submit (its job an engine
// task through o.Jobs) or the test hook NewBackend. On error the ones built
// are closed.
func newBackends(o *LaunchOptions, plan []sitePlan, x *launchExchange, dir *RunDir) ([]Backend, error) {
	backends := make([]Backend, len(plan))
	for i, p := range plan {
		l := SiteLaunch{Spec: p.spec, RunID: o.RunID, Campaign: p.campaign, MosaicBin: o.MosaicBin, Exchange: x.siteURL[p.spec.Name],
			Tokens: x.sliceTokens(o.RunID, p.spec.Agents), Startup: o.StartupTimeout, SpawnArgs: o.SpawnArgs, Forward: o.Forward, Dir: dir, Out: o.Out, Color: o.Color}
		var b Backend
		var err error
		switch {
		case o.NewBackend != nil:
			b, err = o.NewBackend(l, p.sys)
		case p.spec.Mode == ModeAttach:
			b, err = NewAttachBackend(p.sys, l, o.LocalEnv)
		default:
			b, err = NewSubmitBackend(p.sys, l, o.LocalEnv, o.Jobs)
		}
		if err != nil {
			closeAll(backends[:i])
			return nil, err
		}
		backends[i] = b
	}
	return backends, nil
}

// bringUp starts every site in parallel, then waits in parallel until each
// site's agents are all registered. Any failure (or ctx ending) stops every
// site and records the run as failed.
func bringUp(ctx context.Context, o *LaunchOptions, plan []sitePlan, x *launchExchange, run *launchRun, backends []Backend) error {
	stopAll := run.stopper(ctx, backends, o.Out)
	if err := parallel(ctx, backends, func(ctx context.Context, b Backend) error { return b.Start(ctx) }); err != nil {
		stopAll("a site failed to start")
		run.finish(ctx, RunFailed, err)
		return err
	}
	if err := parallel(ctx, backends, func(ctx context.Context, b Backend) error {
		return waitSiteReady(ctx, x.cl, *o, b, planFor(plan, b.Site()), run.dir, o.Out)
	}); err != nil {
		why := "a site failed before it was ready"
		if ctx.Err() != nil {
			why = "interrupted"
		}
		stopAll(why)
		run.finish(ctx, RunFailed, err)
		return err
	}
	return nil
}

// announceReady records the run as ready and, with AutoBootstrap, sends the
// user task (a failure leaves the agents running and prints the command that
// retries it); without, it prints that command.
func announceReady(ctx context.Context, o *LaunchOptions, x *launchExchange, run *launchRun, sites int) {
	out := o.Out
	_ = run.dir.Update(func(s *RunState) { s.State = RunReady })
	fmt.Fprintf(out, "all %d sites ready\n", sites)
	// The command to (re)send the user task: on an Academy exchange the bootstrap
	// takes the user's Globus token from the credential chain, on Mosaic's the
	// run token of the run directory.
	cmdline := fmt.Sprintf("%s campaign bootstrap --campaign %s --run-id %s --exchange-url %s", o.MosaicBin, run.abs, o.RunID, x.localURL)
	tokenNote := "  (token: " + filepath.Join(run.dir.Path, "token") + ")"
	withToken := agent.EnvExchangeToken + "=$(cat " + filepath.Join(run.dir.Path, "token") + ") " + cmdline
	if IsAcademy(o.Spec) {
		cmdline += " --exchange-type academy"
		tokenNote, withToken = "", cmdline
	}
	if !o.AutoBootstrap {
		fmt.Fprintf(out, "send the user task with:\n  %s%s\n", cmdline, tokenNote)
		return
	}
	err := Bootstrap(ctx, x.cl, o.Spec, o.RunID, BootstrapOptions{Recipient: o.Recipient, Timeout: time.Minute, Log: out})
	if err != nil {
		fmt.Fprintf(out, "bootstrap failed: %v\nthe agents keep running; rerun it with:\n  %s\n", err, withToken)
		return
	}
	_ = run.dir.Update(func(s *RunState) { s.Bootstrapped = true })
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
func follow(ctx context.Context, o LaunchOptions, backends []Backend, dir *RunDir, tl timelineSource, stopAll func(string), finish func(string, error)) error {
	out := o.Out
	final := map[string]bool{}
	var failures []error
	tick := time.NewTicker(max(o.Poll, 2*time.Second))
	defer tick.Stop()
	lastN := -1
	for {
		lastN = recordTimeline(ctx, dir, tl, lastN)
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
			printCounts(out, dir)
			fmt.Fprintf(out, "run %s finished\n", o.RunID)
			return nil
		}
		select {
		case <-ctx.Done():
			stopAll("interrupted")
			finish(RunStopped, ctx.Err())
			printCounts(out, dir)
			return fmt.Errorf("run %s stopped: %w", o.RunID, ctx.Err())
		case <-tick.C:
		}
	}
}

// printCounts prints the per-site message counts last recorded (finish
// records them from whichever exchange the run uses).
func printCounts(out io.Writer, dir *RunDir) {
	for _, c := range dir.State().Counts {
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
		return nil, argError(err)
	}
	if o.Spec == nil {
		return nil, argError(errors.New("no campaign: pass the campaign file (mosaic campaign launch FILE ...)"))
	}
	if err := o.Spec.Validate(Strict); err != nil {
		return nil, argError(fmt.Errorf("campaign is invalid:\n%w", err))
	}
	if len(o.Sites) == 0 {
		return nil, argError(errors.New("no --site given; add one per site, e.g. --site alpha:queue=cpu;walltime=00:30:00;agents=coordinator"))
	}
	var errs []error
	for _, sp := range o.Sites {
		if sp.Mode == ModeAuto {
			errs = append(errs, fmt.Errorf("--site %s: auto placement must be resolved before launch (campaign.ResolveAuto; the CLI asks the running core)", sp))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, argError(err)
	}
	if err := ResolveSlices(o.Spec, o.Sites); err != nil {
		return nil, argError(err)
	}
	if o.Catalog == nil {
		return nil, argError(errors.New("no sites catalog; pass --sites FILE or set MOSAIC_SITES"))
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
	return plan, argError(errors.Join(errs...))
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
