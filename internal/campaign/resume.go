package campaign

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/internal/exchange"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/provider/hpc"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// ResumeOptions configures Resume.
type ResumeOptions struct {
	// Root is the campaigns directory; RunID the run to resume.
	Root, RunID string
	// Catalog resolves the run's sites (for tunnels, job states and stop).
	Catalog *site.Catalog
	// RedisURL overrides the Redis the run's exchange used ("" = the campaign
	// file's exchange.redis_url, which must be the one the run recorded).
	RedisURL string
	// ExchangeLimits are the quotas of the resumed exchange (zero = defaults;
	// a campaign's exchange.max_message_bytes wins over a zero MaxMessageBytes).
	ExchangeLimits exchange.Config
	// LocalEnv is extra environment for commands on kind-local sites.
	LocalEnv []string
	// Out receives progress; Poll is the monitor period (default 1 s).
	Out    io.Writer
	Poll   time.Duration
	Logger *slog.Logger
}

// ErrNotResumable marks a run that Resume refuses (over, still followed, or
// an exchange whose state is gone); the message says what to do instead.
var ErrNotResumable = errors.New("run cannot be resumed")

// Resume takes over a run whose launcher died: it serves the launcher's
// embedded exchange again on the same address from the same Redis (mailboxes,
// queued messages, tokens, policies and the timeline live there, so agents
// reconnect and nothing delivered is lost), reopens the reverse tunnels sites
// used, records itself as the run's follower, then follows every site to the
// end like launch does (states, timeline.json, counts, final state). Ctrl-C
// stops every site (as `campaign stop`). A run on an external exchange is only
// followed (that exchange is not the launcher's to serve). Refused, before
// anything is served: a run that is over, one whose launcher (or another
// resume) is still alive, and one whose exchange kept its state in the dead
// launcher's memory.
func Resume(ctx context.Context, o ResumeOptions) error {
	o.Out = &syncWriter{w: o.Out}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	d, err := OpenRunDir(o.Root, o.RunID)
	if err != nil {
		return err
	}
	st := d.State()
	if err := resumable(st); err != nil {
		return err
	}
	tok, err := d.Token()
	if err != nil {
		return fmt.Errorf("run %s: %w; without the run token the exchange cannot be resumed", o.RunID, err)
	}
	x := &launchExchange{localURL: st.ExchangeLocalURL, agentURL: st.ExchangeURL, token: tok, listenAddr: st.ExchangeListen, siteURL: map[string]string{}}
	defer x.Close()
	if st.ExchangeListen != "" {
		if err := x.reserve(ctx, o, st); err != nil {
			return err
		}
	} else {
		if x.localURL == "" {
			x.localURL = st.ExchangeURL
		}
		fmt.Fprintf(o.Out, "exchange: run %s uses the external exchange %s; following it\n", o.RunID, x.localURL)
	}
	if x.cl, err = agent.New(x.localURL, tok, agent.WithRequestWindow(5*time.Second), agent.WithReconnect(0, nil)); err != nil {
		return err
	}
	if err := d.Update(func(s *RunState) { s.LauncherPID = os.Getpid() }); err != nil {
		return fmt.Errorf("run %s: record this process as its follower: %w", o.RunID, err)
	}
	if x.srv != nil {
		if err := reopenTunnels(ctx, o, st, x); err != nil {
			fmt.Fprintf(o.Out, "warning: %v\n", err)
		}
	}
	backends := make([]Backend, 0, len(st.Sites))
	for _, s := range st.Sites {
		b := &resumedSite{st: s, runID: o.RunID, localEnv: o.LocalEnv}
		if sys, ok := o.Catalog.System(s.Name); ok {
			b.sys = sys
		}
		if isFinalSiteState(s.State) {
			b.final, b.finalState = true, s.State
		}
		backends = append(backends, b)
	}
	run := &launchRun{dir: d, abs: st.Campaign, tl: x.timeline(o.RunID)}
	lo := LaunchOptions{RunID: o.RunID, Out: o.Out, Poll: o.Poll}
	stopAll := func(why string) {
		fmt.Fprintf(o.Out, "stopping every site (%s)\n", why)
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := StopRun(sctx, o.Root, o.RunID, o.Catalog, o.LocalEnv, o.Out, nil); err != nil {
			fmt.Fprintf(o.Out, "stop: %v\n", err)
		}
	}
	fmt.Fprintf(o.Out, "run %s: resumed by pid %d; following %d sites\n", o.RunID, os.Getpid(), len(backends))
	return follow(ctx, lo, backends, d, run.tl, stopAll, func(state string, e error) { run.finish(ctx, state, e) })
}

// resumable says why a run cannot be resumed (nil: it can).
func resumable(st RunState) error {
	if IsFinalRunState(st.State) {
		return fmt.Errorf("%w: run %s is over (%s); see it with `mosaic campaign status %s`", ErrNotResumable, st.RunID, st.State, st.RunID)
	}
	if st.LauncherPID != 0 && st.LauncherPID != os.Getpid() && pidRuns(st.LauncherPID, "mosaic") {
		return fmt.Errorf("%w: run %s is still followed by pid %d (its launcher, or a resume); stop that first (Ctrl-C, or `mosaic campaign stop %s`)", ErrNotResumable, st.RunID, st.LauncherPID, st.RunID)
	}
	if st.ExchangeListen != "" && st.ExchangeBackend != BackendRedis {
		return fmt.Errorf("%w: run %s's exchange kept its state in the launcher's memory (exchange.backend %q): its mailboxes, queued messages, tokens and timeline died with the launcher, so its agents cannot be reconnected; stop the run with `mosaic campaign stop %s` and launch it again with \"exchange\": {\"backend\": \"redis\", \"redis_url\": ...} in the campaign to make it resumable",
			ErrNotResumable, st.RunID, orDash(st.ExchangeBackend), st.RunID)
	}
	return nil
}

// reserve serves the run's exchange again: on the Redis the run used, at the
// address it listened on, with the run's token bound (its agents' tokens and
// the campaign's policy are in Redis already).
func (x *launchExchange) reserve(ctx context.Context, o ResumeOptions, st RunState) error {
	redisURL := o.RedisURL
	if redisURL == "" {
		spec, err := Load(st.Campaign)
		if err != nil {
			return fmt.Errorf("run %s: read the campaign for its redis_url: %w (or pass --redis-url)", st.RunID, err)
		}
		redisURL = spec.Exchange.RedisURL
		if RedactURL(redisURL) != st.RedisURL {
			return fmt.Errorf("%w: run %s used Redis %s, but its campaign file %s now says %q; pass --redis-url with the one the run used", ErrNotResumable, st.RunID, st.RedisURL, st.Campaign, RedactURL(redisURL))
		}
		if o.ExchangeLimits.MaxMessageBytes == 0 {
			o.ExchangeLimits.MaxMessageBytes = spec.Exchange.MaxMessageBytes
		}
	}
	r, err := exchange.NewRedis(ctx, redisURL, "")
	if err != nil {
		return fmt.Errorf("run %s: exchange backend redis (%s): %w; the run's exchange state is there: start that Redis again, then resume", st.RunID, RedactURL(redisURL), err)
	}
	cfg := o.ExchangeLimits
	cfg.Backend, cfg.Logger = r, o.Logger
	srv := exchange.NewServer(cfg)
	x.closers = append(x.closers, func() { srv.Close() })
	_, ok, err := r.Policy(ctx, st.RunID)
	if err != nil {
		return fmt.Errorf("run %s: read its policy from Redis: %w", st.RunID, err)
	}
	if !ok {
		return fmt.Errorf("%w: Redis %s holds nothing of run %s (flushed, or another database); its agents' state is gone: stop the run with `mosaic campaign stop %s`", ErrNotResumable, RedactURL(redisURL), st.RunID, st.RunID)
	}
	if err := srv.AddToken(ctx, x.token, st.RunID); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", st.ExchangeListen)
	if err != nil {
		return fmt.Errorf("run %s: serve its exchange again on %s: %w (its agents know only that address: free it, then resume)", st.RunID, st.ExchangeListen, err)
	}
	sctx, stopSrv := context.WithCancel(context.WithoutCancel(ctx))
	srvDone := make(chan struct{})
	go func() { _ = srv.Serve(sctx, ln); close(srvDone) }()
	x.closers = append(x.closers, func() { stopSrv(); <-srvDone })
	x.srv = srv
	if x.localURL == "" {
		x.localURL = "http://" + st.ExchangeListen
	}
	fmt.Fprintf(o.Out, "exchange: serving run %s again on %s (state from redis %s)\n", st.RunID, x.localURL, RedactURL(redisURL))
	return nil
}

// reopenTunnels reopens the reverse tunnel of every ssh site whose agents used
// one (their exchange URL is not the run's), with the relay on the same port
// of the login node as before: the agents know only that URL.
func reopenTunnels(ctx context.Context, o ResumeOptions, st RunState, x *launchExchange) error {
	if n := endStaleForwards(st.ExchangeListen); n > 0 {
		fmt.Fprintf(o.Out, "ended %d reverse forward(s) of the dead launcher to %s\n", n, st.ExchangeListen)
	}
	var errs []error
	for _, s := range st.Sites {
		if s.Exchange == "" || s.Exchange == st.ExchangeURL || isFinalSiteState(s.State) {
			continue
		}
		sys, ok := o.Catalog.System(s.Name)
		if !ok || sys.Kind != site.KindSSH {
			continue
		}
		u, err := url.Parse(s.Exchange)
		if err != nil || u.Port() == "" {
			errs = append(errs, fmt.Errorf("site %s: its exchange URL %q names no port; its agents cannot be reached again", s.Name, s.Exchange))
			continue
		}
		conn, err := newSiteConn(*sys, o.LocalEnv)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		bin := st.MosaicBin
		if bin == "" {
			bin = "mosaic"
		}
		t, err := openTunnelOn(ctx, conn, bin, st.ExchangeListen, "0.0.0.0:"+u.Port())
		conn.Close()
		if err != nil {
			errs = append(errs, fmt.Errorf("site %s: reopen its tunnel on port %s of %s: %w", s.Name, u.Port(), sys.Name, err))
			continue
		}
		x.closers = append(x.closers, t.Close)
		fmt.Fprintf(o.Out, "%s: tunnel reopened at %s\n", s.Name, t.URL)
	}
	return errors.Join(errs...)
}

// resumedSite follows one site of a run started by another (dead) launcher,
// from what the run directory records: a submitted job's state at the site, or
// an attach session's process on this machine and the wrapper's exit lines in
// the site log.
type resumedSite struct {
	st         SiteState
	sys        *site.System
	runID      string
	localEnv   []string
	final      bool
	finalState string
}

// Site implements Backend.
func (b *resumedSite) Site() string { return b.st.Name }

// Start implements Backend (the site was started by the launcher).
func (b *resumedSite) Start(context.Context) error { return nil }

// Close implements Backend.
func (b *resumedSite) Close() error { return nil }

// Stop implements Backend; Resume stops the whole run through StopRun.
func (b *resumedSite) Stop(context.Context) error { return nil }

// Poll implements Backend.
func (b *resumedSite) Poll(ctx context.Context) (string, bool, error) {
	if b.final {
		return b.finalState, true, nil
	}
	if b.sys == nil {
		return b.st.State, true, fmt.Errorf("site %s is no longer in the sites catalog; it cannot be followed (see `mosaic campaign status %s`)", b.st.Name, b.runID)
	}
	switch {
	case b.st.SubmittedJob != "":
		return b.pollJob(ctx)
	case b.st.Mode == ModeAttach && b.st.SSHPID != 0:
		if pidRuns(b.st.SSHPID, b.runID) && !isZombie(b.st.SSHPID) {
			return "running", false, nil
		}
		return b.attachOutcome(ctx)
	}
	return b.st.State, true, fmt.Errorf("site %s: the run directory records neither its job nor its session (state %s); it cannot be followed: check it with `mosaic campaign status %s`", b.st.Name, b.st.State, b.runID)
}

// pollJob asks the site for the submitted job's state.
func (b *resumedSite) pollJob(ctx context.Context) (string, bool, error) {
	conn, err := newSiteConn(*b.sys, b.localEnv)
	if err != nil {
		return "unknown", false, nil
	}
	defer conn.Close()
	prov, err := hpc.New(*b.sys, hpc.WithTransport(conn.tr))
	if err != nil {
		return "unknown", false, nil
	}
	qctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	js, err := statusOf(qctx, prov, b.st.SubmittedJob)
	if err != nil {
		return "unknown", false, nil // asked again at the next poll
	}
	s, ok := js[b.st.SubmittedJob]
	if !ok {
		return "unknown", false, nil
	}
	state := model.JobState(s)
	if !state.Final() {
		return s, false, nil
	}
	b.final, b.finalState = true, s
	if state == model.JobSucceeded {
		return s, true, nil
	}
	return s, true, fmt.Errorf("site %s: job %s ended %s\n--- tail of %s ---\n%s", b.st.Name, b.st.SubmittedJob, s, b.st.Log, conn.tail(ctx, b.st.Log, 30))
}

// attachOutcome decides how an attach session that is gone ended, from the
// wrapper's "exited with status N" line of each agent in the site log (the
// session was the dead launcher's child: its exit status is lost).
func (b *resumedSite) attachOutcome(ctx context.Context) (string, bool, error) {
	conn, err := newSiteConn(*b.sys, b.localEnv)
	if err != nil {
		return "failed", true, err
	}
	defer conn.Close()
	qctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	res, err := conn.sh(qctx, `grep -a "mosaic-agent .*: exited with status " "$1" 2>/dev/null; true`, nil, b.st.Log)
	if err != nil {
		return "failed", true, err
	}
	codes := parseExitLines(string(res.Stdout))
	var bad []string
	for _, a := range b.st.Agents {
		c, ok := codes[a]
		if !ok {
			bad = append(bad, a+" (no exit recorded)")
		} else if c != 0 {
			bad = append(bad, fmt.Sprintf("%s (status %d)", a, c))
		}
	}
	b.final = true
	if len(bad) == 0 {
		b.finalState = "succeeded"
		return b.finalState, true, nil
	}
	b.finalState = "failed"
	return b.finalState, true, fmt.Errorf("site %s: the attach session ended: %s\n--- tail of %s ---\n%s", b.st.Name, strings.Join(bad, ", "), b.st.Log, conn.tail(ctx, b.st.Log, 30))
}

// parseExitLines reads the wrapper's "mosaic-agent NAME: exited with status N"
// lines of a site log (the last one of each agent wins).
func parseExitLines(log string) map[string]int {
	out := map[string]int{}
	for _, line := range strings.Split(log, "\n") {
		_, rest, ok := strings.Cut(line, "mosaic-agent ")
		if !ok {
			continue
		}
		name, tail, ok := strings.Cut(rest, ": exited with status ")
		if !ok || name == "" || strings.ContainsAny(name, " \t") {
			continue
		}
		var code int
		if _, err := fmt.Sscanf(strings.TrimSpace(tail), "%d", &code); err != nil {
			continue
		}
		out[name] = code
	}
	return out
}

// isZombie reports whether pid has exited but was not reaped (its parent, the
// dead launcher, is gone; init reaps it in time).
func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	_, after, ok := strings.Cut(string(b), ") ")
	return !ok || strings.HasPrefix(after, "Z") || syscall.Kill(pid, 0) != nil
}

// endStaleForwards ends the `ssh -N -R 0:ADDR` forwards a dead launcher left
// behind (in their own process group they outlive it; their relays ended with
// its stdin): ssh processes of this user whose argument is exactly "0:"+addr,
// the run's own exchange address. It returns how many it signalled.
func endStaleForwards(addr string) int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		argv := strings.Split(strings.TrimRight(string(b), "\x00"), "\x00")
		if len(argv) == 0 || filepath.Base(argv[0]) != "ssh" || !slices.Contains(argv, "-R") || !slices.Contains(argv, "0:"+addr) {
			continue
		}
		if syscall.Kill(pid, syscall.SIGTERM) == nil {
			n++
		}
	}
	return n
}
