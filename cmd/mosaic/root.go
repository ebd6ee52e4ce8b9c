package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/config"
	"github.com/mosaic-hpc/mosaic/internal/core"
	"github.com/mosaic-hpc/mosaic/internal/term"
)

// envFile is the persistent --env-file flag: a dotenv file the user names. The working
// directory's .env is never read on its own.
var envFile string

// colorMode is --color (auto, always, never); see internal/term.
var colorMode = term.Auto

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "mosaic",
		Short: "Use allocations on several supercomputers as one machine",
		Long: `Mosaic federates your allocations on several Slurm and PBS supercomputers into one
abstract machine: it probes every site, places tasks where they start soonest, and
follows them to the end.

Start the core with 'mosaic serve' (with no sites file it runs a simulated federation
of six real machines), then use the other commands, which talk to it over HTTP.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       core.Version,
	}
	root.SetVersionTemplate("mosaic {{.Version}}\n")
	// A flag that does not parse (unknown, bad value, missing argument) is a
	// usage error (exit 126) ending with a hint to --help. Subcommands inherit it.
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err: err, flag: true} })
	root.PersistentFlags().StringVar(&envFile, "env-file", "",
		"read settings (KEY=VALUE lines) from this file, under the environment; a .env in the working directory is never read on its own")
	root.PersistentFlags().Var(colorFlag{}, "color", "colour output: auto (on a terminal, unless NO_COLOR is set), always or never")
	_ = root.RegisterFlagCompletionFunc("color", cobra.FixedCompletions([]string{term.Auto, term.Always, term.Never}, noFiles))
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
	}
	root.SetHelpCommandGroupID(groupOther)
	root.SetCompletionCommandGroupID(groupOther)
	root.AddCommand(newServeCmd(), newResourcesCmd(), newIdleCmd(), newStatusCmd(), newAboutCmd(),
		newEnvCmd(), newExecCmd(), newPutFileCmd(),
		newSubmitCmd(), newTaskCmd(), newTasksCmd(), newCancelCmd(), newReplanCmd(), newLogsCmd(), newEventsCmd(), newEnvelopeCmd(),
		newInitSitesCmd(), newPreflightCmd(), newSmokeCmd(), newDoctorCmd(),
		newLoginCmd(), newLogoutCmd(), newAuthCmd(), newEndpointSetupCmd(), newEndpointsCmd(),
		newMCPCmd(), newSkillCmd(),
		newCampaignCmd(), newAgentCmd(), newExchangeCmd(),
		newSimCmd())
	root.AddCommand(newUsersCmd(), newTokenCmd(), newAuditCmd()) // users, tokens, audit (users_cmds.go, token_cmds.go)
	finishTree(root)
	return root
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// newClient discovers the running core: MOSAIC_URL (default http://127.0.0.1:8642,
// or http://MOSAIC_ADDR) and MOSAIC_TOKEN or the token file (MOSAIC_TOKEN_FILE,
// default $XDG_CONFIG_HOME/mosaic/token), from the environment, --env-file and
// $XDG_CONFIG_HOME/mosaic/env, never the working directory: a .env there could send
// the token to a stranger's listener.
func newClient() (*client.Client, error) {
	cfg, env, err := loadConfig()
	if err != nil {
		return nil, err
	}
	tok, _ := env("MOSAIC_TOKEN")
	if tok == "" {
		tok, err = config.ReadToken(cfg.TokenPath)
		if err != nil {
			return nil, fmt.Errorf("%w at %s: no token at %s (start one with `mosaic serve`, which creates it)", client.ErrNoCore, cfg.URL, cfg.TokenPath)
		}
	}
	return client.New(cfg.URL, tok)
}

// loadEnv reads the process's settings (the environment, --env-file and the config
// directory's env file) and says once on stderr when a .env in the working directory
// is being ignored.
func loadEnv() (*config.Loaded, error) {
	ld, err := config.Load(config.LoadOptions{EnvFile: envFile})
	if err != nil {
		return nil, err
	}
	warnIgnored(ld.Files, ".env")
	return ld, nil
}

// loadConfig is loadEnv followed by config.Resolve.
func loadConfig() (*config.Config, config.Env, error) {
	ld, err := loadEnv()
	if err != nil {
		return nil, nil, err
	}
	cfg, err := config.Resolve(ld.Env)
	if err != nil {
		return nil, nil, err
	}
	cfg.EnvFiles = ld.Files
	return cfg, ld.Env, nil
}

var warned sync.Map // name -> struct{}: each ignored file is mentioned once per process

// warnIgnored says on stderr, once per file, that a .env or sites.yaml in the working
// directory is not read, and how to use it on purpose. Its contents are never read.
func warnIgnored(inUse []string, names ...string) {
	for _, p := range config.InWorkDir(inUse, names...) {
		if _, dup := warned.LoadOrStore(p, struct{}{}); dup {
			continue
		}
		flag := "--env-file"
		if strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml") {
			flag = "--sites"
		}
		fmt.Fprintf(os.Stderr, "mosaic: ignoring %s in the working directory (Mosaic reads settings only from the environment, "+
			"$XDG_CONFIG_HOME/mosaic and files you name); to use it, pass %s %s\n", p, flag, p)
	}
}

// colorFlag is --color, checked when parsed.
type colorFlag struct{}

func (colorFlag) String() string { return colorMode }
func (colorFlag) Type() string   { return "auto|always|never" }
func (colorFlag) Set(s string) error {
	m, err := term.ParseMode(s)
	if err != nil {
		return err
	}
	colorMode = m
	return nil
}
