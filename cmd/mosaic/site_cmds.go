package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/site"
)

// sitesPath finds the site catalog the way serve does (--sites, MOSAIC_SITES, then
// $XDG_CONFIG_HOME/mosaic/sites.yaml; "" = the embedded simulated federation), and
// says once when a sites.yaml in the working directory is being ignored.
func sitesPath(flag string) (string, *config.Config, error) {
	cfg, _, err := loadConfig()
	if err != nil {
		return "", nil, err
	}
	if _, err := cfg.FindSites(flag); err != nil {
		return "", nil, err
	}
	warnIgnored([]string{cfg.SitesFile}, "sites.yaml")
	return cfg.SitesFile, cfg, nil
}

// initSitesResult is `mosaic init-sites --json`: the scaffolded catalog.
type initSitesResult struct {
	// Out is the file written ("" = printed only).
	Out string `json:"out,omitempty"`
	// Machines are the known machines scaffolded, in order.
	Machines []string `json:"machines"`
	// YAML is the sites.yaml text.
	YAML string `json:"yaml"`
}

func newInitSitesCmd() *cobra.Command {
	var j jsonFlag
	var out string
	var kind string
	var force bool
	cmd := &cobra.Command{
		Use:   "init-sites MACHINE[=[USER@]HOST]...",
		Short: "Scaffold a sites.yaml from known machine shapes (accounts left as TODO-your-allocation)",
		Example: `  mosaic init-sites delta=alice@login.delta.ncsa.illinois.edu anvil=x-alice@anvil.rcac.purdue.edu > sites.yaml
  mosaic init-sites vista frontera --out ~/.config/mosaic/sites.yaml
  mosaic init-sites delta --kind globus --json=machines,yaml`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeMachines,
		RunE: func(cmd *cobra.Command, args []string) error {
			var es []site.ScaffoldEntry
			for _, a := range args {
				e, err := site.ParseScaffoldArg(a)
				if err != nil {
					return usage(err)
				}
				e.Kind = kind
				es = append(es, e)
			}
			data, err := site.Scaffold(es)
			if err != nil {
				return usage(err)
			}
			res := initSitesResult{YAML: string(data)}
			for _, e := range es {
				res.Machines = append(res.Machines, e.Machine)
			}
			if out == "" || out == "-" {
				if j.set {
					return j.print(cmd.OutOrStdout(), res)
				}
				_, err = cmd.OutOrStdout().Write(data)
				return err
			}
			flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
			if force {
				flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
			}
			f, err := os.OpenFile(out, flags, 0o644)
			if err != nil {
				if errors.Is(err, os.ErrExist) {
					return fmt.Errorf("%s exists; pass --force to overwrite it", out)
				}
				return err
			}
			defer f.Close()
			if _, err := f.Write(data); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "wrote %s: fill in the accounts and workdirs, then run `mosaic preflight --sites %s`\n", out, out)
			if j.set {
				res.Out = out
				return j.print(cmd.OutOrStdout(), res)
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&kind, "kind", site.KindSSH, "how the machines are reached: ssh, local or globus")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite --out if it exists")
	_ = cmd.RegisterFlagCompletionFunc("kind", cobra.FixedCompletions([]string{site.KindSSH, site.KindLocal, site.KindGlobus}, noFiles))
	addJSONFlag(cmd, &j, initSitesResult{})
	return cmd
}

func printChecks(w io.Writer, checks []core.Check) (failed bool) {
	tw := table(w)
	col := color(w)
	fmt.Fprintln(tw, "SYSTEM\tSTEP\tSTATUS\tTIME\tDETAIL")
	for _, c := range checks {
		st := c.Status
		switch st {
		case core.CheckOK:
			st = paint(col, "32", st)
		case core.CheckWarn:
			st = paint(col, "33", st)
		default:
			st = paint(col, "31", st)
			failed = true
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", dash(c.System), c.Step, st, dash(c.Duration), clip(c.Detail, 120))
	}
	tw.Flush()
	for _, c := range checks {
		if c.Fix != "" && c.Status != core.CheckOK {
			fmt.Fprintf(w, "  %s %s: %s\n", dash(c.System), c.Step, c.Fix)
		}
	}
	return failed
}

func newPreflightCmd() *cobra.Command {
	var sites string
	var tick time.Duration
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "preflight [--sites FILE]",
		Short: "Check a site catalog end to end: completeness, reachability, a timed probe per system",
		Long: `Check a site catalog without starting the core: catalog warnings (placeholder
accounts, unknown GPU models), then for every system the transport and scheduler (a
version query) and a timed probe round trip, warning when a probe outlasts the tick.`,
		Example: `  mosaic preflight --sites ~/.config/mosaic/sites.yaml
  mosaic preflight --tick 2m --jq '.[] | select(.status == "fail") | .fix'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			path, _, err := sitesPath(sites)
			if err != nil {
				return err
			}
			cat, err := core.LoadCatalog(path)
			if err != nil {
				return err
			}
			if tick == 0 {
				tick = core.DefaultLiveTick
			}
			checks := core.Preflight(cmd.Context(), cat, tick, nil)
			if j.set {
				if err := j.print(cmd.OutOrStdout(), checks); err != nil {
					return err
				}
			} else if path == "" {
				fmt.Fprintln(cmd.OutOrStdout(), "no sites file (--sites, MOSAIC_SITES or $XDG_CONFIG_HOME/mosaic/sites.yaml): checking the embedded simulated federation")
			}
			failed := false
			for _, c := range checks {
				failed = failed || c.Status == core.CheckFail
			}
			if !j.set {
				printChecks(cmd.OutOrStdout(), checks)
			}
			if failed {
				return &exitError{code: exitMosaic, kind: "check_failed", msg: "preflight found problems; fix them and run it again"}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&sites, "sites", "", "site catalog (default: MOSAIC_SITES, else $XDG_CONFIG_HOME/mosaic/sites.yaml)")
	cmd.Flags().DurationVar(&tick, "tick", 0, "the probe interval you will run with (default 60s)")
	addJSONFlag(cmd, &j, []core.Check{})
	addWideFlag(cmd, &j)
	_ = cmd.RegisterFlagCompletionFunc("sites", fileExt("yaml", "yml"))
	return cmd
}

func newSmokeCmd() *cobra.Command {
	var sites, partition string
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "smoke SYSTEM",
		Short: "Submit a 1-CPU 5-minute job, see it queued, cancel it and check it is gone",
		Example: `  mosaic smoke delta
  mosaic smoke anvil --partition shared --json`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeSystemArg(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			path, _, err := sitesPath(sites)
			if err != nil {
				return err
			}
			cat, err := core.LoadCatalog(path)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), 5*time.Minute)
			defer cancel()
			steps, err := core.Smoke(ctx, cat, args[0], partition, nil)
			if j.set {
				if perr := j.print(cmd.OutOrStdout(), steps); perr != nil {
					return perr
				}
			} else {
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "STEP\tOK\tDETAIL")
				for _, s := range steps {
					ok := "yes"
					if !s.OK {
						ok = "NO"
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Step, ok, s.Detail)
				}
				tw.Flush()
			}
			return err
		},
	}
	cmd.Flags().StringVar(&sites, "sites", "", "site catalog (default: MOSAIC_SITES, else $XDG_CONFIG_HOME/mosaic/sites.yaml)")
	cmd.Flags().StringVar(&partition, "partition", "", "partition to use (default: a CPU partition with the shortest queue)")
	addJSONFlag(cmd, &j, []core.SmokeStep{})
	_ = cmd.RegisterFlagCompletionFunc("partition", completePartitionOf)
	_ = cmd.RegisterFlagCompletionFunc("sites", fileExt("yaml", "yml"))
	return cmd
}

// doctorStep is one line of `mosaic doctor`.
type doctorStep struct {
	// Status is ok, warn, fail or info.
	Status string `json:"status"`
	Step   string `json:"step"`
	Fix    string `json:"fix,omitempty"`
}

// doctorReport is `mosaic doctor --json`.
type doctorReport struct {
	// OK is true when every step passed (warnings allowed).
	OK bool `json:"ok"`
	// Catalog is the site catalog the CLI and `mosaic serve` both load ("" = the
	// embedded simulated federation); CoreCatalog the one the running core reports.
	Catalog     string       `json:"catalog"`
	CoreCatalog string       `json:"core_catalog,omitempty"`
	URL         string       `json:"url"`
	Steps       []doctorStep `json:"steps"`
}

func newDoctorCmd() *cobra.Command {
	var sites string
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Find the first missing setup step and the command that fixes it",
		Long: `Check the setup step by step and stop at the first that fails, with the command that
fixes it: the site catalog (found exactly as ` + "`mosaic serve`" + ` finds it: --sites,
MOSAIC_SITES, then $XDG_CONFIG_HOME/mosaic/sites.yaml, else the embedded simulated
federation; never the working directory), the ssh client, every system's preflight,
the API token, and the running core — which must run the same catalog.`,
		Example: `  mosaic doctor
  mosaic doctor --sites ~/.config/mosaic/sites.yaml
  mosaic doctor --jq '.steps[] | select(.status != "ok") | .fix'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			rep, err := runDoctor(cmd.Context(), sites)
			w := cmd.OutOrStdout()
			if j.set {
				if perr := j.print(w, rep); perr != nil {
					return perr
				}
			} else {
				for _, s := range rep.Steps {
					mark := map[string]string{"ok": "✓", "warn": "!", "fail": "✗", "info": " "}[s.Status]
					fmt.Fprintln(w, mark, s.Step)
					if s.Fix != "" {
						fmt.Fprintln(w, "  fix:", s.Fix)
					}
				}
				if rep.OK {
					fmt.Fprintln(w, "all set: try `mosaic status`")
				}
			}
			if err != nil {
				return err
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&sites, "sites", "", "site catalog (default: MOSAIC_SITES, else $XDG_CONFIG_HOME/mosaic/sites.yaml)")
	addJSONFlag(cmd, &j, doctorReport{})
	addWideFlag(cmd, &j)
	return cmd
}

// errDoctor is a failed doctor step: exit 125, the step and its fix already printed.
var errDoctor = &exitError{code: exitMosaic, kind: "check_failed"}

// runDoctor checks the setup in order, stopping at the first failure (its error is
// errDoctor; the report says which step and how to fix it).
func runDoctor(ctx context.Context, sites string) (doctorReport, error) {
	var rep doctorReport
	add := func(status, step, fix string) { rep.Steps = append(rep.Steps, doctorStep{status, step, fix}) }
	fail := func(what, fix string) (doctorReport, error) {
		add("fail", what, fix)
		return rep, errDoctor
	}
	path, cfg, err := sitesPath(sites)
	if err != nil {
		return fail("reading the configuration: "+err.Error(), "correct the file or variable named above")
	}
	rep.Catalog, rep.URL = path, cfg.URL
	if path == "" {
		add("ok", "no sites file: Mosaic runs the embedded simulated federation", "")
		add("info", "to use your machines: mosaic init-sites delta=USER@login.delta.ncsa.illinois.edu --out "+
			filepath.Join(cfg.ConfigDir, config.SitesFileName)+" (serve and the CLI read it from there)", "")
	} else {
		cat, err := site.Load(path)
		if err != nil {
			return fail("site catalog "+path+" is invalid:\n  "+err.Error(), "edit "+path+" (every field is documented in sites.example.yaml)")
		}
		add("ok", fmt.Sprintf("site catalog %s: %d systems", path, len(cat.Systems)), "")
		needSSH := false
		for _, s := range cat.Systems {
			needSSH = needSSH || s.Kind == site.KindSSH
		}
		if needSSH {
			if _, err := exec.LookPath("ssh"); err != nil {
				return fail("no ssh client on this machine", "apt-get install openssh-client (or your OS's OpenSSH package)")
			}
			add("ok", "OpenSSH client found", "")
		}
		for _, c := range core.Preflight(ctx, cat, core.DefaultLiveTick, nil) {
			label := c.Step
			if c.System != "" {
				label = c.System + " " + c.Step
			}
			switch c.Status {
			case core.CheckFail:
				return fail(label+": "+c.Detail, c.Fix)
			case core.CheckWarn:
				add("warn", label+": "+clip(c.Detail, 160), c.Fix)
			default:
				add("ok", label+": "+clip(c.Detail, 120), "")
			}
		}
	}
	if _, err := config.ReadToken(cfg.TokenPath); err != nil {
		return fail("no API token at "+cfg.TokenPath+" (the core has never run as this user)", serveHint(path))
	}
	add("ok", "API token "+cfg.TokenPath, "")
	c, err := newClient()
	var about *client.About
	if err == nil {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		about, err = c.About(actx)
	}
	if err != nil {
		if errors.Is(err, client.ErrNoCore) {
			return fail("no core is running at "+cfg.URL, serveHint(path))
		}
		return fail("the core at "+cfg.URL+" answered: "+err.Error(), "restart it: "+serveHint(path))
	}
	add("ok", "core running at "+cfg.URL, "")
	rep.CoreCatalog = about.Catalog
	if !sameCatalog(path, about.Catalog) {
		want := path
		if want == "" {
			want = "the embedded simulated federation"
		}
		add("warn", fmt.Sprintf("the core at %s runs catalog %s, but serve's lookup here finds %s (preflight, smoke and campaign read that one)",
			cfg.URL, about.Catalog, want), "restart the core with the same settings: "+serveHint(path))
	}
	rep.OK = true
	return rep, nil
}

// sameCatalog compares the catalog found here with the one a core reports
// (About.Catalog: the path it loaded, or "embedded simulated federation").
func sameCatalog(local, core string) bool {
	if local == "" {
		return core == "embedded simulated federation"
	}
	if core == local {
		return true
	}
	a, err1 := filepath.Abs(local)
	b, err2 := filepath.Abs(core)
	return err1 == nil && err2 == nil && a == b
}

func serveHint(path string) string {
	if path == "" {
		return "mosaic serve"
	}
	return "mosaic serve --sites " + path
}
