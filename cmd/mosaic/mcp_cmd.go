package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/client"
	"github.com/mosaic-hpc/mosaic/internal/mcp"
	"github.com/mosaic-hpc/mosaic/internal/skill"
)

func newMCPCmd() *cobra.Command {
	var debug bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the MCP tools over stdio, for AI agents (talks to the running core)",
		Long: `Serve Mosaic's Model Context Protocol tools over stdin/stdout.

An MCP client starts this command; the tools (list_resources, find_idle, draft_envelope,
submit_task, get_task, list_tasks, wait_task, cancel_task, replan_task, recent_events,
task_logs, system_env) call the running core, found like the other commands find it (MOSAIC_URL,
MOSAIC_TOKEN or the token file). If no core runs yet, the tools answer with how to
start one ('mosaic serve') and work as soon as it is up.

Register it with Claude Code:  claude mcp add mosaic -- mosaic mcp
The core also serves the same tools over streamable HTTP at /mcp (bearer token).`,
		Example: `  claude mcp add mosaic -- mosaic mcp
  mosaic mcp --debug`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx, stop := signalContext()
			defer stop()
			logOut := io.Discard
			if debug {
				logOut = cmd.ErrOrStderr()
			}
			log := slog.New(slog.NewTextHandler(logOut, &slog.HandlerOptions{Level: slog.LevelDebug}))
			connect := discoverCore()
			announce(ctx, cmd.ErrOrStderr(), connect)
			return mcp.ServeStdio(ctx, connect, mcp.Options{Logger: log})
		},
	}
	cmd.Flags().BoolVar(&debug, "debug", false, "log MCP protocol diagnostics to stderr")
	return cmd
}

// discoverCore finds the core on each tool call until it succeeds once, so an agent
// started before `mosaic serve` recovers without a restart.
func discoverCore() mcp.Connect {
	var mu sync.Mutex
	var found *client.Client
	return func(context.Context) (mcp.Backend, error) {
		mu.Lock()
		defer mu.Unlock()
		if found != nil {
			return found, nil
		}
		c, err := newClient()
		if err != nil {
			return nil, err
		}
		found = c
		return c, nil
	}
}

// announce says on stderr (which MCP clients log) which core the tools will use.
func announce(ctx context.Context, w io.Writer, connect mcp.Connect) {
	b, err := connect(ctx)
	if err != nil {
		fmt.Fprintf(w, "mosaic mcp: %v\nmosaic mcp: serving anyway; the tools will work once `mosaic serve` runs\n", err)
		return
	}
	c := b.(*client.Client)
	actx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if a, err := c.About(actx); err != nil {
		fmt.Fprintf(w, "mosaic mcp: %v\nmosaic mcp: serving anyway; the tools will work once the core at %s answers\n", err, c.URL())
	} else {
		fmt.Fprintf(w, "mosaic mcp: serving MCP on stdio for the core at %s (Mosaic %s, %d systems)\n", c.URL(), a.Version, a.Systems)
	}
}

// skillResult is `mosaic skill --json`.
type skillResult struct {
	// Document is SKILL.md, Markdown with YAML front matter.
	Document string `json:"document"`
}

func newSkillCmd() *cobra.Command {
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "skill",
		Short: "Print SKILL.md: how an AI agent drives Mosaic",
		Long: `Print the skill document that teaches an AI agent Mosaic's workflow: look at the pool,
draft an envelope, submit (auto or pinned), track, intervene, and read task states and
decision traces. A running core serves it at /skill, and the HTTP API reference
generated from its OpenAPI document at /skill/api.`,
		Example: `  mosaic skill > ~/.claude/skills/mosaic/SKILL.md
  mosaic skill --jq .document`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if j.set {
				return j.print(cmd.OutOrStdout(), skillResult{Document: skill.Document()})
			}
			_, err := io.WriteString(cmd.OutOrStdout(), skill.Document())
			return err
		},
	}
	addJSONFlag(cmd, &j, skillResult{})
	return cmd
}
