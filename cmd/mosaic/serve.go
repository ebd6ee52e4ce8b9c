package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/internal/api"
	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/server"
)

func newServeCmd() *cobra.Command {
	var sites, addr string
	var tick time.Duration
	var speed float64
	var allowHosts, trustedProxies []string
	var headless bool
	var unauthTimeout time.Duration
	var logFormat string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the Mosaic core: probes, API and UI (default: a simulated federation)",
		Long: `Run the Mosaic core on 127.0.0.1:8642.

With no sites file (--sites, MOSAIC_SITES or $XDG_CONFIG_HOME/mosaic/sites.yaml) it
runs the embedded simulated federation of six machines (Delta, DeltaAI, Anvil, Vista,
Frontera, Lonestar6): real batch-queue models with background load, running your jobs
as local processes.

Settings come from the environment, --env-file FILE and $XDG_CONFIG_HOME/mosaic/env;
nothing in the working directory is read (pass --env-file ./.env or --sites
./sites.yaml to use such files on purpose).

The API token is created on first start at $XDG_CONFIG_HOME/mosaic/token (mode 0600);
the CLI reads it from there.`,
		Example: `  mosaic serve
  mosaic serve --sites ~/.config/mosaic/sites.yaml --tick 60s
  mosaic serve --addr 127.0.0.1:9000 --headless`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, env, err := loadConfig()
			if err != nil {
				return err
			}
			if _, err := cfg.FindSites(sites); err != nil {
				return err
			}
			f := cmd.Flags()
			if f.Changed("addr") {
				cfg.Addr = addr
			}
			if f.Changed("tick") {
				if tick < 100*time.Millisecond {
					return fmt.Errorf("--tick %s: want at least 100ms", tick)
				}
				cfg.Tick = tick
			}
			if f.Changed("speed") {
				if speed <= 0 {
					return fmt.Errorf("--speed %g: want a positive number", speed)
				}
				cfg.SimSpeed = speed
			}
			if unauthTimeout <= 0 {
				return fmt.Errorf("--unauth-timeout %s: want a positive duration", unauthTimeout)
			}
			cfg.AllowHosts = append(cfg.AllowHosts, allowHosts...)
			if !f.Changed("log-format") {
				if v, ok := env("MOSAIC_LOG_FORMAT"); ok && v != "" {
					logFormat = v
				}
			}
			log, err := newLogger(os.Stderr, logFormat, cfg.LogLevel)
			if err != nil {
				return err
			}
			if !f.Changed("trusted-proxy") {
				if v, ok := env("MOSAIC_TRUSTED_PROXIES"); ok && strings.TrimSpace(v) != "" {
					trustedProxies = strings.Split(v, ",")
				}
			}
			proxies, err := parseTrustedProxies(trustedProxies)
			if err != nil {
				return err
			}
			return serve(cmd, cfg, env, log, headless, unauthTimeout, proxies)
		},
	}
	f := cmd.Flags()
	f.StringVar(&sites, "sites", "", "site catalog file (default: MOSAIC_SITES, else $XDG_CONFIG_HOME/mosaic/sites.yaml, else the embedded simulated federation)")
	f.StringVar(&addr, "addr", config.DefaultAddr, "listen address (env MOSAIC_ADDR)")
	f.DurationVar(&tick, "tick", 0, "probe interval (default 5s simulated, 60s live; env MOSAIC_TICK)")
	f.Float64Var(&speed, "speed", 0, "simulated seconds per real second (default 60; env MOSAIC_SIM_SPEED)")
	f.StringSliceVar(&allowHosts, "allow-host", nil, "accept requests for this Host name besides loopback names (repeatable)")
	f.BoolVar(&headless, "headless", false, "serve the API only, without the web UI")
	f.StringSliceVar(&trustedProxies, "trusted-proxy", nil, "a reverse proxy (CIDR or address) whose X-Forwarded-For the audit log believes (repeatable; env MOSAIC_TRUSTED_PROXIES, comma-separated; default none)")
	f.StringVar(&logFormat, "log-format", "text", "log format on stderr: text (logfmt) or json (one object a line); env MOSAIC_LOG_FORMAT")
	// How long a request without a valid credential may take to send its headers and
	// body (and to read its answer); hidden: tests shorten it.
	f.DurationVar(&unauthTimeout, "unauth-timeout", api.DefaultUnauthTimeout, "time limit of requests without a valid credential")
	_ = f.MarkHidden("unauth-timeout")
	f.Bool("replica", false, "join the store's replica set (team mode, docs/TEAM.md): several `mosaic serve` on one store elect a leader that alone probes and dispatches, "+
		"the others serve reads and forward the rest to it (give it to every replica; MOSAIC_DB: one PostgreSQL database, or an SQLite file on one host)")
	f.String("advertise", "", "the URL other replicas forward to while this one leads (default http://<--addr>); use the address they can reach")
	f.Bool("fresh", false, "if the database (MOSAIC_DB) is empty or damaged, move it aside as <path>.bad-<time> and start an empty store; a healthy one is kept")
	return cmd
}

// newLogger builds the core's logger: format text (slog's key=value lines) or json
// (one JSON object a line, for log shippers), at level info, or debug when level
// (MOSAIC_LOG_LEVEL) says so.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	lv := slog.LevelInfo
	if strings.EqualFold(level, "debug") {
		lv = slog.LevelDebug
	}
	o := &slog.HandlerOptions{Level: lv}
	switch strings.ToLower(strings.TrimSpace(format)) {
	case "", "text":
		return slog.New(slog.NewTextHandler(w, o)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, o)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// parseTrustedProxies reads --trusted-proxy values: CIDRs or single addresses.
func parseTrustedProxies(vs []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range vs {
		v = strings.TrimSpace(v)
		if v == "" {
			continue
		}
		if p, err := netip.ParsePrefix(v); err == nil {
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(v)
		if err != nil {
			return nil, fmt.Errorf("--trusted-proxy %q: want a CIDR (10.0.0.0/8) or an address (127.0.0.1)", v)
		}
		out = append(out, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
	}
	return out, nil
}

func serve(cmd *cobra.Command, cfg *config.Config, env config.Env, log *slog.Logger, headless bool, unauthTimeout time.Duration, proxies []netip.Prefix) error {
	// Claim the port first: a busy port must fail before anything else starts.
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return busyPortError(cfg.Addr, err)
	}
	ctx, stop := signalContext()
	defer stop()

	token, err := config.EnsureToken(cfg.TokenPath)
	if err != nil {
		ln.Close()
		return err
	}
	getenv := func(k string) string { v, _ := env(k); return v }
	fresh, _ := cmd.Flags().GetBool("fresh")
	replica, _ := cmd.Flags().GetBool("replica")
	advertise, _ := cmd.Flags().GetString("advertise")
	if advertise != "" {
		if err := checkAdvertise(advertise); err != nil {
			ln.Close()
			return err
		}
	}
	// Open takes the store's lease: a second core on the same MOSAIC_DB stops here
	// with an error naming the owner's PID and address and what to do.
	// The Globus settings are read here once; the core's providers and the web
	// sign-in share the one resolver.
	g := core.NewGlobus(getenv)
	c, err := core.Open(ctx, core.OpenOptions{Config: cfg, Logger: log, Getenv: getenv, FreshStore: fresh, ListenAddr: ln.Addr().String(), Globus: g,
		Replica: replica, Advertise: advertise})
	if err != nil {
		ln.Close()
		return err
	}
	defer c.Close()
	c.SetCampaignsRoot(campaign.CampaignsRoot(cfg.StateDir))
	// The HTTP server: the API with the web UI and /mcp (over this core, in process).
	opts := server.Options{Options: api.Options{Token: token, AllowHosts: cfg.AllowHosts, Logger: log, UnauthTimeout: unauthTimeout,
		TrustedProxies: proxies},
		Headless: headless}
	if w := auth.NewWebSignIn(g.Resolver); w != nil {
		opts.SignIn = w // Globus web sign-in (GLOBUS_CLIENT_ID/SECRET configured)
	}
	srv, err := server.New(c, opts)
	if err != nil {
		ln.Close()
		return err
	}
	hs := srv.HTTPServer()
	go c.Run(ctx)

	url := "http://" + ln.Addr().String()
	out := cmd.OutOrStdout()
	about := c.About()
	fmt.Fprintf(out, "Mosaic %s serving %d systems (%s) at %s\n", about.Version, about.Systems, about.Catalog, url)
	fmt.Fprintf(out, "  API token: %s (send as Authorization: Bearer; the CLI reads it)\n", cfg.TokenPath)
	fmt.Fprintf(out, "  API docs:  %s/docs   status: mosaic status   stop: Ctrl-C\n", url)
	if !headless {
		fmt.Fprintf(out, "  web UI:    %s   (one-time login link)\n", srv.LoginURL(url))
	}
	if opts.SignIn != nil {
		fmt.Fprintf(out, "  Globus:    sign in at %s/auth/login\n", url)
	}
	fmt.Fprintf(out, "  store:     %s   tick: %s\n", about.Store, about.Tick)
	if l := c.Leadership(); l.Role != "single" {
		fmt.Fprintf(out, "  replica:   %s (team mode: leader or follower, see /healthz)\n", l.Replica)
	}

	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
		log.Info("shutting down")
	case <-c.Deposed():
		// Lost the leader lease while alive: exit at once, like a crash, without
		// stopping the jobs this process ran (the new leader adopts them by tag); a
		// supervisor (systemd) starts a fresh process, which joins as a follower.
		if c.Replicated() {
			log.Error("exiting: this replica lost the leader lease; restart it to rejoin as a follower")
		} else {
			log.Error("exiting: this core lost its store's owner lease (another core may own the store now); start it again")
		}
		_ = hs.Close()
		os.Exit(exitDeposed)
	}
	shCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return hs.Shutdown(shCtx)
}

func busyPortError(addr string, err error) error {
	if errors.Is(err, syscall.EADDRINUSE) {
		_, port, _ := net.SplitHostPort(addr)
		return fmt.Errorf("port %s is already in use (%s): another `mosaic serve` may be running — check with `ss -ltnp 'sport = :%s'` or `lsof -i :%s`, stop it, or pick another port with --addr",
			port, addr, port, port)
	}
	return fmt.Errorf("listen on %s: %w", addr, err)
}

// exitDeposed is serve's exit status after losing the leader lease or the store's
// owner lease (EX_TEMPFAIL).
const exitDeposed = 75

// checkAdvertise validates --advertise: an absolute http(s) URL with a host.
func checkAdvertise(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" {
		return fmt.Errorf("--advertise %q: want the URL other replicas reach this one at, like http://10.0.0.5:8642", s)
	}
	return nil
}
