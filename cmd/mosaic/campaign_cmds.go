package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/agent"
	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/campaign"
	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/model"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/store"
)

func newCampaignCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "campaign",
		Short: "Federated multi-agent campaigns: validate, launch across sites, bootstrap, stop",
		Example: `  mosaic campaign validate examples/campaigns/federated-chat.jsonc
  mosaic campaign status`,
	}
	cmd.AddCommand(newCampaignIDsCmd(), newCampaignValidateCmd(), newCampaignSpawnSiteCmd(),
		newCampaignBootstrapCmd(), newCampaignLaunchCmd(), newCampaignStatusCmd(), newCampaignStopCmd(), newCampaignTimelineCmd(), newCampaignResumeCmd())
	return cmd
}

// loadCampaignArg loads the campaign file given as the first argument or with
// --campaign (both: they must name the same file) and returns it with its path.
// Every error is a usage error (exit 126): no file, two files, a file that
// cannot be read or parsed.
func loadCampaignArg(cmd *cobra.Command, flag string, args []string) (*campaign.Spec, string, error) {
	path := flag
	if len(args) > 0 {
		if path != "" && !samePath(path, args[0]) {
			return nil, "", usagef("two campaign files: %s (argument) and --campaign %s; give one", args[0], path)
		}
		path = args[0]
	}
	if path == "" {
		return nil, "", usagef("no campaign file: pass it as the first argument (%s FILE ...) or with --campaign FILE", cmd.CommandPath())
	}
	spec, err := campaign.Load(path)
	if err != nil {
		return nil, "", usage(err)
	}
	return spec, path, nil
}

// samePath reports whether a and b name the same file (by absolute path).
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	bb, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == bb
}

// requireFlags is cobra's MarkFlagRequired as a usage error (exit 126), naming
// every missing flag at once.
func requireFlags(cmd *cobra.Command, names ...string) error {
	var missing []string
	for _, n := range names {
		if !cmd.Flags().Changed(n) {
			missing = append(missing, "--"+n)
		}
	}
	if len(missing) > 0 {
		return usagef("missing %s (see %s --help)", strings.Join(missing, ", "), cmd.CommandPath())
	}
	return nil
}

// runArg allows one positional argument, a run id (required or not).
func runArg(required bool) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) > 1 || (required && len(args) == 0) {
			return usagef("mosaic campaign %s takes one run id; got %d arguments (list runs with `mosaic campaign status`)", cmd.Name(), len(args))
		}
		return nil
	}
}

// campaignFileArg allows one positional argument, the campaign file.
func campaignFileArg(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return usagef("mosaic campaign %s takes one argument, the campaign file; got %d: %s", cmd.Name(), len(args), strings.Join(args, " "))
	}
	return nil
}

// runIDArg checks a --run-id value (usage error).
func runIDArg(run string) error { return usage(campaign.ValidateRunID(run)) }

// checkRecipient refuses an undeclared bootstrap recipient at once, naming the
// declared agents ("" is the campaign's initial agent).
func checkRecipient(spec *campaign.Spec, recipient string) error {
	if recipient == "" {
		return nil
	}
	return checkAgentFlag(spec, "recipient", recipient)
}

// checkAgentFlag refuses (usage error) an agent name given with --flag that the
// campaign does not declare, naming the declared agents.
func checkAgentFlag(spec *campaign.Spec, flag, name string) error {
	if slices.Contains(spec.Names(), name) {
		return nil
	}
	return usagef("--%s %s is not an agent of campaign %q (declared: %s)", flag, name, spec.Name, strings.Join(spec.Names(), ", "))
}

// findRunFirst finds a launched run before anything else is read (the sites
// catalog, the run's exchange): a bad run id or an unknown run is named as such
// (exit 126) whatever else is wrong; a damaged run directory is an error (exit 125).
func findRunFirst(runID string) (*config.Config, *campaign.RunDir, error) {
	cfg, _, err := loadConfig()
	if err != nil {
		return nil, nil, usage(err)
	}
	d, err := campaign.FindRun(campaign.CampaignsRoot(cfg.StateDir), runID)
	if err != nil {
		return nil, nil, err
	}
	return cfg, d, nil
}

func newCampaignIDsCmd() *cobra.Command {
	var file, run string
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "ids [--campaign] F --run-id R",
		Short: "Print every agent's deterministic mailbox uid for a run",
		Example: `  mosaic campaign ids examples/campaigns/federated-chat.jsonc --run-id chat-1
  mosaic campaign ids examples/campaigns/federated-chat.jsonc --run-id chat-1 --jq '.[].uid'`,
		Args:              campaignFileArg,
		ValidArgsFunction: completeCampaignFile,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "run-id"); err != nil {
				return err
			}
			spec, _, err := loadCampaignArg(cmd, file, args)
			if err != nil {
				return err
			}
			if err := runIDArg(run); err != nil {
				return err
			}
			var rows []agentIDRow
			for _, a := range spec.Agents {
				rows = append(rows, agentIDRow{a.Name, campaign.AgentUID(run, a.Name).String(), a.Site})
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), rows)
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "AGENT\tUID\tSITE")
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", r.Name, r.UID, r.Site)
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&file, "campaign", "", "campaign file (JSONC)")
	cmd.Flags().StringVar(&run, "run-id", "", "run id (required)")
	addJSONFlag(cmd, &j, []agentIDRow{})
	return cmd
}

// validateResult is `mosaic campaign validate --json` (a campaign that does not
// validate is an error, exit 126).
type validateResult struct {
	File     string   `json:"file"`
	Campaign string   `json:"campaign"`
	Mode     string   `json:"mode"`
	Agents   []string `json:"agents"`
}

func newCampaignValidateCmd() *cobra.Command {
	var j jsonFlag
	var file, agents string
	cmd := &cobra.Command{
		Use:   "validate [--campaign] F [--agents a,b]",
		Short: "Check a campaign file (strict), or one site's slice (federated, with --agents)",
		Example: `  mosaic campaign validate examples/campaigns/federated-chat.jsonc
  mosaic campaign validate examples/campaigns/federated-chat.jsonc --agents worker-a --json`,
		Args:              campaignFileArg,
		ValidArgsFunction: completeCampaignFile,
		RunE: func(cmd *cobra.Command, args []string) error {
			spec, path, err := loadCampaignArg(cmd, file, args)
			if err != nil {
				return err
			}
			mode := campaign.Strict
			if cmd.Flags().Changed("agents") {
				if spec, err = spec.Slice(campaign.ParseAgentsSelection(agents)); err != nil {
					return usage(err)
				}
				mode = campaign.Federated
			}
			if err := spec.Validate(mode); err != nil {
				return usage(err)
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), validateResult{File: path, Campaign: spec.Name, Mode: mode.String(), Agents: spec.Names()})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: campaign %q is valid (%s, %d agents: %s)\n", path, spec.Name, mode, len(spec.Agents), strings.Join(spec.Names(), ", "))
			return nil
		},
	}
	addJSONFlag(cmd, &j, validateResult{})
	cmd.Flags().StringVar(&file, "campaign", "", "campaign file (JSONC)")
	cmd.Flags().StringVar(&agents, "agents", "", "validate only this slice (comma list), in federated mode")
	return cmd
}

func newCampaignSpawnSiteCmd() *cobra.Command {
	var file, run, agents, siteName, tokensFile string
	var startup time.Duration
	var x exchangeFlags
	cmd := &cobra.Command{
		Use:   "spawn-site [--campaign] F --run-id R --agents a,b [--tokens-file F]",
		Short: "Run one site's slice of a campaign (one wrapper per agent); never bootstraps",
		Long: `Runs one wrapper per agent of the slice, each with the agent's own exchange token: from
--tokens-file (lines "AGENT TOKEN", mode 0600; the launcher writes one per site holding
only that site's agents) or derived from the run token in $MOSAIC_EXCHANGE_TOKEN.
SIGINT, SIGTERM or SIGHUP stops every agent's process group and exits.`,
		Example:           `  mosaic campaign spawn-site campaign.jsonc --run-id chat-1 --agents worker-a,worker-b --tokens-file tokens --site delta`,
		Args:              campaignFileArg,
		ValidArgsFunction: completeCampaignFile,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "run-id", "agents"); err != nil {
				return err
			}
			spec, _, err := loadCampaignArg(cmd, file, args)
			if err != nil {
				return err
			}
			if err := runIDArg(run); err != nil {
				return err
			}
			if siteName == "" {
				siteName = os.Getenv("MOSAIC_SITE")
			}
			if err := x.apply(spec); err != nil {
				return err
			}
			names := campaign.ParseAgentsSelection(agents)
			if _, err := spec.Slice(names); err != nil {
				return usage(err)
			}
			u, err := x.exchangeURL(spec)
			if err != nil {
				return usage(err)
			}
			var toks map[string]string
			if campaign.IsAcademy(spec) {
				if toks, err = academySiteTokens(cmd.Context(), spec, u, tokensFile, run, names); err != nil {
					return err
				}
			} else {
				var fileToks map[string]string
				if tokensFile != "" {
					if fileToks, err = campaign.ReadTokensFile(tokensFile); err != nil {
						return usage(err)
					}
				}
				if toks, err = campaign.AgentTokens(fileToks, os.Getenv(agent.EnvExchangeToken), run, names); err != nil {
					return usage(err)
				}
			}
			if !cmd.Flags().Changed("startup-timeout") && spec.Exchange.DiscoverTimeout > 0 {
				startup = spec.Exchange.DiscoverTimeout.D()
			}
			ctx, stop := hangupContext()
			defer stop()
			code, err := campaign.RunSite(ctx, campaign.SpawnSite{
				Spec: spec, Agents: names, RunID: run, Site: siteName, ExchangeURL: u, Tokens: toks,
				NewClient:      func(tok string) (*agent.Client, error) { return newExchangeClient(u, tok, siteName) },
				StartupTimeout: startup, Out: os.Stderr,
			})
			if err != nil {
				// An agent's exit status passes through (RunSite returns the first
				// non-zero one); the site's own failure, with none, is 125.
				ec := exitMosaic
				if code > 0 {
					ec = jobExit(code)
				}
				return &exitError{code: ec, kind: kindError, msg: err.Error()}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "campaign", "", "campaign file (JSONC)")
	f.StringVar(&run, "run-id", "", "run id (the same on every site)")
	f.StringVar(&agents, "agents", "", "this site's agents, comma-separated (order kept)")
	f.StringVar(&siteName, "site", "", "this site's name, tagged on its mailboxes (default $MOSAIC_SITE)")
	f.StringVar(&tokensFile, "tokens-file", "", "file of \"AGENT TOKEN\" lines (mode 0600) with the slice's agent tokens (default: derived from $"+agent.EnvExchangeToken+")")
	f.DurationVar(&startup, "startup-timeout", campaign.DefaultStartupTimeout, "how long each agent waits for its peers")
	x.add(cmd)
	return cmd
}

func newCampaignBootstrapCmd() *cobra.Command {
	var file, run, recipient string
	var startup time.Duration
	var x exchangeFlags
	cmd := &cobra.Command{
		Use:   "bootstrap [--campaign] F --run-id R [--recipient X]",
		Short: "Wait for the initial agent's mailbox and send it the campaign's user task",
		Long: `Waits for the recipient (default: initial_agent) to register and sends it user_task.
Exits 127, naming the recipient on stderr, when it never appears, and 126 at once
when the campaign does not declare it.`,
		Example: `  mosaic campaign bootstrap examples/campaigns/federated-chat.jsonc --run-id chat-1
  mosaic campaign bootstrap examples/campaigns/federated-chat.jsonc --run-id chat-1 --recipient coordinator --startup-timeout 5m`,
		Args:              campaignFileArg,
		ValidArgsFunction: completeCampaignFile,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "run-id"); err != nil {
				return err
			}
			spec, _, err := loadCampaignArg(cmd, file, args)
			if err != nil {
				return err
			}
			if err := runIDArg(run); err != nil {
				return err
			}
			if err := checkRecipient(spec, recipient); err != nil {
				return err
			}
			if err := x.apply(spec); err != nil {
				return err
			}
			// Its local checks are usage errors (exit 126); the exchange failing
			// (an academy bearer check's network call, a token refresh) is exit 125.
			c, err := x.operatorClient(cmd.Context(), spec)
			if err != nil {
				return err
			}
			ctx, stop := signalContext()
			defer stop()
			err = campaign.Bootstrap(ctx, c, spec, run, campaign.BootstrapOptions{Recipient: recipient, Timeout: startup, Log: cmd.ErrOrStderr()})
			if mp, ok := campaign.IsMissingPeers(err); ok {
				name := recipient
				if name == "" {
					name = spec.InitialAgent
				}
				return &exitError{code: exitNotFound, kind: kindNotFound, msg: fmt.Sprintf("bootstrap: recipient %s never appeared: %v", name, mp)}
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&file, "campaign", "", "campaign file (JSONC)")
	f.StringVar(&run, "run-id", "", "run id")
	f.StringVar(&recipient, "recipient", "", "agent to send the task to (default: initial_agent)")
	f.DurationVar(&startup, "startup-timeout", campaign.DefaultStartupTimeout, "how long to wait for the recipient")
	x.add(cmd)
	return cmd
}

// campaignEnv resolves the configuration (state directory, sites file).
func campaignEnv(sitesFlag string) (*config.Config, *site.Catalog, error) {
	path, cfg, err := sitesPath(sitesFlag) // serve's lookup; never the working directory
	if err != nil {
		return nil, nil, err
	}
	if path == "" {
		return cfg, nil, nil
	}
	cat, err := site.Load(path)
	if err != nil {
		return cfg, nil, fmt.Errorf("sites catalog: %w", err)
	}
	return cfg, cat, nil
}

// campaignMonitorEvery is how often a launcher's core follows its jobs: the
// launcher reports each job's transitions, so it asks more often than serve. The
// probes of the catalog's sites keep their own (much longer) tick.
const campaignMonitorEvery = 5 * time.Second

// openCampaignCore opens the core that runs a campaign's submit-mode jobs as
// tasks, on the store at dbPath with the sites file of cfg, and returns it with
// its Jobs. A store owned by a running `mosaic serve` (the one answering on the
// configured URL with the configured token, on that store) is left to it: the
// jobs are that serve's tasks, over its API, and the core returned is nil. With
// run set (a launch) and no serve answering for the store, the run's tasks go
// to a store of their own under the campaigns directory (`MOSAIC_DB=that
// mosaic tasks` shows them once the launch is over).
func openCampaignCore(ctx context.Context, cfg *config.Config, dbPath, run string, out io.Writer) (*core.Core, campaign.Jobs, string, error) {
	c2 := *cfg
	c2.DBPath = dbPath
	// It places nothing (campaign jobs are pinned), so no LLM settings are read.
	noLLM := func(string) string { return "" }
	c, err := core.Open(ctx, core.OpenOptions{Config: &c2, Getenv: noLLM, MonitorEvery: campaignMonitorEvery})
	var held *store.LeaseHeldError
	if errors.As(err, &held) {
		jobs, url, serr := serveOwning(ctx, dbPath)
		if serr == nil {
			fmt.Fprintf(out, "campaign jobs: the store %s is owned by the core at %s; the run's tasks are its tasks (`mosaic tasks`)\n", store.RedactDSN(dbPath), url)
			return nil, jobs, dbPath, nil
		}
		if run == "" {
			return nil, nil, "", fmt.Errorf("open the core that runs the campaign's submit-mode jobs: %w (and no core answers for it: %w)", err, serr)
		}
		own := filepath.Join(campaign.CampaignsRoot(cfg.StateDir), run+".tasks.db")
		fmt.Fprintf(out, "campaign jobs: the store %s is in use (%s) and no core answers for it (%v); run %s's tasks are kept in %s\n", store.RedactDSN(dbPath), held.Error(), serr, run, own)
		c2.DBPath = own
		c, err = core.Open(ctx, core.OpenOptions{Config: &c2, Getenv: noLLM, MonitorEvery: campaignMonitorEvery})
	}
	if err != nil {
		return nil, nil, "", fmt.Errorf("open the core that runs the campaign's submit-mode jobs: %w", err)
	}
	return c, c, c2.DBPath, nil
}

func newCampaignLaunchCmd() *cobra.Command {
	var (
		file, run, sitesFile, mosaicBin, recipient          string
		exURL, exListen, agentURL, account, workdir, tunnel string
		exType                                              string
		siteSpecs, spawnArgs, forward                       []string
		autoBoot, skipPreflight                             bool
		startup                                             time.Duration
		autoWall                                            = campaign.DefaultAutoWalltime.D()
		quotas                                              exchangeQuotaFlags
	)
	cmd := &cobra.Command{
		Use:   "launch [--campaign] F --run-id R --site SPEC [--site SPEC]... [--auto-bootstrap]",
		Short: "Bring a campaign up on several sites at once (attach to allocations or submit jobs)",
		Long: `Starts every site's slice in parallel, waits until every agent is registered, optionally
sends the user task, then follows the sites until they end. Ctrl-C stops every site: jobs
are cancelled and attach sessions hung up, with nothing left behind.

SPEC is NAME:key=value;key=value (';' between pairs, ',' between agents):
  attach:  NAME:attach=HOST;agents=a,b[;jobid=ID][;workdir=PATH][;campaign=PATH]
           runs in an allocation you hold: with jobid= on Slurm, srun --jobid=ID --overlap;
           on PBS, ssh to HOST with PBS_JOBID and PBS_NODEFILE set; without jobid=,
           ssh -tt from the login node to HOST.
  submit:  NAME:queue=Q;walltime=HH:MM:SS[;nodes=N][;account=A][;agents=a,b][;workdir=PATH]
           submits a job with the site's dialect (Slurm or PBS).
NAME is a system of the sites catalog (--sites or MOSAIC_SITES). Without agents=, a site
runs the agents whose "site" hint is NAME. Mosaic must be installed on each login node
(--mosaic-bin, default: this executable's path). The exchange runs inside the launcher
unless --exchange-url is given.

Every argument and validation error (the campaign file, a --site, the slices, a
site missing from the catalog, conflicting flags) exits 126 before anything
remote happens; a failure of the launch itself exits 125, Ctrl-C 130.`,
		Example: `  mosaic campaign launch examples/campaigns/federated-chat.jsonc --run-id chat-1 \
    --site 'delta:queue=cpu;walltime=01:00:00;agents=coordinator' \
    --site 'anvil:attach=login03;agents=worker-a,worker-b' --auto-bootstrap
  mosaic campaign launch examples/campaigns/federated-chat.jsonc --run-id chat-2 --site 'auto;agents=worker-a,worker-b'`,
		Args:              campaignFileArg,
		ValidArgsFunction: completeCampaignFile,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := requireFlags(cmd, "run-id", "site"); err != nil {
				return err
			}
			spec, _, err := loadCampaignArg(cmd, file, args)
			if err != nil {
				return err
			}
			if err := launchFlagConflicts(cmd, exURL); err != nil {
				return err
			}
			if err := campaign.ApplyExchangeType(spec, exType); err != nil {
				return usage(err)
			}
			if tunnel != campaign.TunnelAuto && tunnel != campaign.TunnelAlways && tunnel != campaign.TunnelNever {
				return usagef("--tunnel %s: want auto, always or never", tunnel)
			}
			if err := runIDArg(run); err != nil {
				return err
			}
			if err := checkRecipient(spec, recipient); err != nil {
				return err
			}
			var sites []campaign.SiteSpec
			var errs []error
			for _, raw := range siteSpecs {
				sp, err := campaign.ParseSiteSpec(raw)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				sites = append(sites, sp)
			}
			if err := errors.Join(errs...); err != nil {
				return usage(err)
			}
			cfg, cat, err := campaignEnv(sitesFile)
			if err != nil {
				return usage(err)
			}
			sites, err = placeAutoSites(cmd, spec, sites, cat, model.Duration(autoWall))
			if err != nil {
				return usage(err)
			}
			fwd := map[string]string{}
			for _, n := range forward {
				if v, ok := os.LookupEnv(n); ok && v != "" {
					fwd[n] = v
				}
			}
			opts := campaign.LaunchOptions{
				Spec: spec, RunID: run, Sites: sites, Catalog: cat, Root: campaign.CampaignsRoot(cfg.StateDir),
				ExchangeURL: exURL, ExchangeToken: os.Getenv("MOSAIC_EXCHANGE_TOKEN"), ExchangeListen: exListen,
				AgentExchangeURL: agentURL, MosaicBin: mosaicBin, AutoBootstrap: autoBoot, Recipient: recipient,
				StartupTimeout: startup, Tunnel: tunnel, SpawnArgs: spawnArgs, Forward: fwd, Account: account, WorkDir: workdir,
				Out: cmd.ErrOrStderr(), Color: color(cmd.ErrOrStderr()),
			}
			// Everything local first (slices, catalog, accounts): its errors are
			// ArgErrors (exit 126), before preflight, the core or any site.
			if err := campaign.CheckLaunch(&opts); err != nil {
				return err
			}
			if campaign.IsAcademy(spec) { // the user's Globus token, not a run token
				var exp time.Time
				opts.ExchangeToken, exp, err = campaign.AcademyBearer(cmd.Context(), spec, os.Getenv(agent.EnvExchangeToken), core.NewGlobus(nil).ExchangeBearer)
				if err != nil {
					return err
				}
				if !exp.IsZero() { // the sites cannot refresh it (docs/SECURITY.md)
					fmt.Fprintf(cmd.ErrOrStderr(), "exchange: the Globus token the sites get is valid until %s (%s from now); the agents lose the exchange then\n",
						exp.UTC().Format(time.RFC3339), time.Until(exp).Round(time.Minute))
				}
			}
			quotas.apply(&opts.ExchangeLimits)
			if !cmd.Flags().Changed("exchange-max-message-bytes") {
				opts.ExchangeLimits.MaxMessageBytes = 0 // the campaign's exchange.max_message_bytes, else the default
			}
			if !skipPreflight {
				if err := campaign.Preflight(cmd.Context(), &opts, forward, cmd.ErrOrStderr()); err != nil {
					return usage(err)
				}
				opts.CheckSites = true
			}
			ctx, stop := hangupContext()
			defer stop()
			if slices.ContainsFunc(sites, func(sp campaign.SiteSpec) bool { return sp.Mode == campaign.ModeSubmit }) {
				if cat == nil {
					return usagef("no sites catalog: pass --sites FILE or set MOSAIC_SITES")
				}
				c, jobs, db, err := openCampaignCore(ctx, cfg, cfg.DBPath, run, cmd.ErrOrStderr())
				if err != nil {
					return err
				}
				if c != nil { // a core of the launcher's own (else a serve's, which monitors its tasks)
					cctx, stopCore := context.WithCancel(context.WithoutCancel(ctx))
					go c.Run(cctx)
					defer func() {
						// Confirm the cancels the stop asked for before the core goes.
						mctx, cancel := context.WithTimeout(cctx, 30*time.Second)
						_ = c.MonitorOnce(mctx)
						cancel()
						stopCore()
						_ = c.Close()
					}()
				}
				opts.Jobs, opts.TasksStore = jobs, db
			}
			if err := campaign.Launch(ctx, opts); err != nil {
				if ctx.Err() != nil {
					return &exitError{code: exitInterrupted, kind: kindInterrupted, msg: err.Error()}
				}
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&autoWall, "auto-walltime", autoWall, "walltime an auto;agents=… site asks for when its agents' envelopes name none")
	f.StringVar(&file, "campaign", "", "campaign file (JSONC)")
	f.StringVar(&run, "run-id", "", "run id: names the run directory and derives every agent's uid")
	f.StringArrayVar(&siteSpecs, "site", nil, "a site and how to run its slice (repeatable; see above)")
	f.BoolVar(&autoBoot, "auto-bootstrap", false, "send the user task once every site is ready")
	f.StringVar(&recipient, "recipient", "", "bootstrap recipient (default: initial_agent)")
	f.StringArrayVar(&spawnArgs, "spawn-arg", nil, "extra argument appended to every remote spawn-site (repeatable; use --spawn-arg=--flag)")
	f.BoolVar(&skipPreflight, "skip-preflight", false, "skip the settings and reachability checks")
	f.StringVar(&sitesFile, "sites", "", "sites catalog (default $MOSAIC_SITES)")
	f.StringVar(&mosaicBin, "mosaic-bin", "", "mosaic binary on the sites' login and compute nodes (default: this executable's path)")
	f.StringVar(&exURL, "exchange-url", "", "use this external exchange (token from $MOSAIC_EXCHANGE_TOKEN) instead of the launcher's own")
	f.StringVar(&exType, "exchange-type", "", exchangeTypeUsage)
	f.StringVar(&exListen, "exchange-listen", "127.0.0.1:0", "where the launcher's exchange listens (port 0 = a free port)")
	f.StringVar(&agentURL, "agent-exchange-url", "", "exchange URL as the agents must use it (default: the listener's)")
	quotas.addPrefixed(cmd, "exchange-")
	f.StringVar(&tunnel, "tunnel", campaign.TunnelAuto, "reverse ssh tunnel + relay on the login node so compute nodes reach the launcher's exchange: auto (when the login node cannot reach it), always, never")
	f.StringArrayVar(&forward, "forward-env", nil, "environment variable to export on every site before its env script (repeatable)")
	f.StringVar(&account, "account", "", "default account for submit-mode sites (a site's account= wins)")
	f.StringVar(&workdir, "workdir", "", "default site directory (a site's workdir= wins)")
	f.DurationVar(&startup, "startup-timeout", campaign.DefaultStartupTimeout, "how long sites may take to register every agent (queue wait included)")
	return cmd
}

// launchFlagConflicts refuses flags that only configure the launcher's own
// exchange when --exchange-url names an external one (they would be ignored).
func launchFlagConflicts(cmd *cobra.Command, exURL string) error {
	if exURL == "" {
		return nil
	}
	var own []string
	for _, n := range []string{"exchange-listen", "exchange-max-message-bytes", "exchange-max-queued-messages",
		"exchange-max-queued-bytes", "exchange-max-mailboxes-per-run", "exchange-max-total-bytes", "exchange-lease-ttl"} {
		if f := cmd.Flags().Lookup(n); f != nil && f.Changed {
			own = append(own, "--"+n)
		}
	}
	verb := "set"
	if len(own) == 1 {
		verb = "sets"
	}
	if len(own) > 0 {
		return usagef("--exchange-url %s names an external exchange, but %s %s up the launcher's own; drop one or the other",
			exURL, strings.Join(own, ", "), verb)
	}
	return nil
}

func newCampaignStatusCmd() *cobra.Command {
	var sitesFile string
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "status [RUN]",
		Short: "Show launched runs, or one run's sites, job ids and states",
		Example: `  mosaic campaign status
  mosaic campaign status chat-1 --jq '.sites[] | "\(.name) \(.state)"'`,
		Args:              runArg(false),
		ValidArgsFunction: completeRunArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 { // the run first: an unknown run is named as such, whatever the catalog
				if _, _, err := findRunFirst(args[0]); err != nil {
					return err
				}
			}
			cfg, cat, err := campaignEnv(sitesFile)
			if err != nil {
				return usage(err)
			}
			root := campaign.CampaignsRoot(cfg.StateDir)
			w := cmd.OutOrStdout()
			if len(args) == 0 {
				runs, err := campaign.ListRuns(root)
				if err != nil {
					return err
				}
				if j.set {
					return j.print(w, runs)
				}
				tw := table(w)
				fmt.Fprintln(tw, "RUN\tCAMPAIGN\tSTATE\tSITES\tCREATED")
				for _, r := range runs {
					var names []string
					for _, s := range r.Sites {
						names = append(names, s.Name)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.RunID, r.CampaignName, r.State, strings.Join(names, ","), r.Created.Local().Format(time.DateTime))
				}
				return tw.Flush()
			}
			ctx, stop := signalContext()
			defer stop()
			st, err := campaign.RunStatus(ctx, root, args[0], cat, nil)
			if err != nil {
				return err
			}
			if j.set {
				return j.print(w, st)
			}
			fmt.Fprintf(w, "run %s (campaign %s): %s\nexchange %s\n", st.RunID, st.CampaignName, st.State, st.ExchangeURL)
			tw := table(w)
			fmt.Fprintln(tw, "SITE\tMODE\tAGENTS\tJOB\tTASK\tSTATE\tLOG")
			for _, s := range st.Sites {
				job := s.SubmittedJob
				if job == "" {
					job = s.JobID
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.Name, s.Mode, strings.Join(s.Agents, ","), dash(job), dash(s.TaskID), s.State, dash(s.Log))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			for _, s := range st.Sites {
				if s.Error != "" {
					fmt.Fprintf(w, "%s: %s\n", s.Name, s.Error)
				}
			}
			printSiteCounts(w, st.Counts)
			return nil
		},
	}
	cmd.Flags().StringVar(&sitesFile, "sites", "", "sites catalog (default $MOSAIC_SITES)")
	addJSONFlag(cmd, &j, campaign.RunState{})
	return cmd
}

func newCampaignStopCmd() *cobra.Command {
	var sitesFile string
	cmd := &cobra.Command{
		Use:               "stop RUN",
		Short:             "Stop a launched run: cancel its jobs and end its attach sessions",
		Example:           `  mosaic campaign stop chat-1`,
		Args:              runArg(true),
		ValidArgsFunction: completeRunArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			// The run first: an unknown run is named as such, whatever the catalog.
			if _, _, err := findRunFirst(args[0]); err != nil {
				return err
			}
			cfg, cat, err := campaignEnv(sitesFile)
			if err != nil {
				return usage(err)
			}
			if cat == nil {
				return usagef("no sites catalog: pass --sites FILE or set MOSAIC_SITES (run %s's sites are looked up there)", args[0])
			}
			ctx, stop := signalContext()
			defer stop()
			openJobs := func(ctx context.Context, db string) (campaign.Jobs, func(), error) {
				if db == "" {
					return nil, nil, errors.New("the run directory names no store")
				}
				c, jobs, _, err := openCampaignCore(ctx, cfg, db, "", cmd.ErrOrStderr())
				if err != nil {
					return nil, nil, err
				}
				if c == nil {
					return jobs, func() {}, nil // the serve owning the store cancels, and its monitor confirms
				}
				return c, func() {
					// One probe and monitor round confirm the cancels at the sites.
					mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 60*time.Second)
					c.Refresh(mctx)
					_ = c.MonitorOnce(mctx)
					cancel()
					_ = c.Close()
				}, nil
			}
			return campaign.StopRun(ctx, campaign.CampaignsRoot(cfg.StateDir), args[0], cat, nil, cmd.ErrOrStderr(), openJobs)
		},
	}
	cmd.Flags().StringVar(&sitesFile, "sites", "", "sites catalog (default $MOSAIC_SITES)")
	return cmd
}

// placeAutoSites asks the running core's meta-scheduler where each auto;agents=… slice
// should run (a dry-run placement: the same rule chain, sizing and ranking as tasks)
// and turns those sites into submit-mode sites.
func placeAutoSites(cmd *cobra.Command, spec *campaign.Spec, sites []campaign.SiteSpec, cat *site.Catalog, fallback model.Duration) ([]campaign.SiteSpec, error) {
	auto := false
	for _, sp := range sites {
		auto = auto || sp.Mode == campaign.ModeAuto
	}
	if !auto {
		return sites, nil
	}
	var place campaign.Placer
	if c, err := newClient(); err == nil {
		place = func(ctx context.Context, name string, env model.Envelope) (campaign.AutoPlacement, error) {
			we := core.V1Envelope(env)
			res, err := c.Submit(ctx, client.SubmitRequest{Name: name, Command: "mosaic campaign spawn-site", Envelope: &we, DryRun: true})
			if err != nil {
				return campaign.AutoPlacement{}, err
			}
			ch := res.Decision.ChosenCandidate()
			if ch == nil || res.Decision.Spec == nil {
				return campaign.AutoPlacement{}, fmt.Errorf("the core returned no chosen candidate")
			}
			return campaign.AutoPlacement{System: ch.System, Partition: ch.Partition, Account: ch.Account,
				Walltime: model.Duration(res.Decision.Spec.Walltime), Rationale: res.Decision.Rationale}, nil
		}
	}
	out, placed, err := campaign.ResolveAuto(cmd.Context(), spec, sites, cat, place, fallback)
	for _, p := range placed {
		fmt.Fprintf(cmd.ErrOrStderr(), "auto placement: %s:%s (account %s, %s) — %s\n", p.System, p.Partition, dash(p.Account), p.Walltime, p.Rationale)
	}
	return out, err
}

// agentIDRow is one line of `campaign ids`.
type agentIDRow struct {
	Name string `json:"name"`
	UID  string `json:"uid"`
	Site string `json:"site,omitempty"`
}

// academySiteTokens are a slice's tokens on an academy exchange: the user's
// Globus token for every agent, from --tokens-file (the launcher writes it,
// 0600), else $MOSAIC_EXCHANGE_TOKEN or this machine's credential chain;
// checked against the exchange before any agent starts.
func academySiteTokens(ctx context.Context, spec *campaign.Spec, u, tokensFile, run string, names []string) (map[string]string, error) {
	var toks map[string]string
	if tokensFile != "" {
		fileToks, err := campaign.ReadBearerTokensFile(tokensFile)
		if err != nil {
			return nil, err
		}
		toks, err = campaign.AgentTokens(fileToks, "", run, names)
		if err != nil {
			return nil, err
		}
	} else {
		tok, err := academyBearer(ctx, spec)
		if err != nil {
			return nil, err
		}
		toks = campaign.HostedTokens(tok, names)
	}
	if len(names) > 0 { // one check: every agent of the slice has the same token
		c, err := agent.New(u, toks[names[0]], agent.WithRequestWindow(5*time.Second))
		if err != nil {
			return nil, err
		}
		if err := campaign.CheckAcademyBearer(ctx, c, spec, run); err != nil {
			return nil, err
		}
	}
	return toks, nil
}
