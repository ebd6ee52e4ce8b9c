package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
)

// Command groups of `mosaic --help`.
const (
	groupFederation = "federation"
	groupTasks      = "tasks"
	groupSites      = "sites"
	groupCampaigns  = "campaigns"
	groupAuth       = "auth"
	groupServer     = "server"
	groupOther      = "other"
)

var commandGroups = []struct{ id, title string }{
	{groupFederation, "Federation (what the machines have now):"},
	{groupTasks, "Tasks (place, run and follow work):"},
	{groupSites, "Sites (set up and look at one machine):"},
	{groupCampaigns, "Campaigns (multi-agent runs across sites):"},
	{groupAuth, "Authentication:"},
	{groupServer, "Server (the core and its agents' interfaces):"},
	{groupOther, "Other:"},
}

// groupOf is each top-level command's group. A command not named here (and without
// a GroupID of its own) lands in "other"; TestEveryCommandGrouped keeps it honest.
var groupOf = map[string]string{
	"resources": groupFederation, "idle": groupFederation, "status": groupFederation, "sim": groupFederation,
	"submit": groupTasks, "task": groupTasks, "tasks": groupTasks, "cancel": groupTasks, "replan": groupTasks,
	"logs": groupTasks, "events": groupTasks, "envelope": groupTasks,
	"env": groupSites, "exec": groupSites, "put-file": groupSites, "init-sites": groupSites, "preflight": groupSites,
	"smoke": groupSites, "endpoint-setup": groupSites, "endpoints": groupSites,
	"campaign": groupCampaigns, "agent": groupCampaigns, "exchange": groupCampaigns,
	"login": groupAuth, "logout": groupAuth, "auth": groupAuth, "users": groupAuth, "token": groupAuth, "audit": groupAuth,
	"serve": groupServer, "about": groupServer, "doctor": groupServer, "mcp": groupServer, "skill": groupServer,
}

// finishTree applies what every command shares, once the tree is built: groups,
// argument errors as usage errors (exit 126, with a --help hint), no file-name
// completion where a command takes no files, and an error (not a silent help page)
// for an unknown subcommand of a command group such as `mosaic campaign`.
func finishTree(root *cobra.Command) {
	for _, c := range root.Commands() {
		if c.GroupID == "" {
			if g, ok := groupOf[c.Name()]; ok {
				c.GroupID = g
			} else {
				c.GroupID = groupOther
			}
		}
	}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Args != nil {
			args := c.Args
			c.Args = func(cmd *cobra.Command, a []string) error {
				if err := args(cmd, a); err != nil {
					var ue *usageError
					if errors.As(err, &ue) {
						return err
					}
					return &usageError{err: err, flag: true}
				}
				return nil
			}
		}
		if c.HasSubCommands() && c.Run == nil && c.RunE == nil && c.HasParent() {
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(cmd *cobra.Command, a []string) error {
				if len(a) == 0 {
					return cmd.Help()
				}
				msg := fmt.Sprintf("unknown command %q for %q", a[0], cmd.CommandPath())
				if s := cmd.SuggestionsFor(a[0]); len(s) > 0 {
					msg += fmt.Sprintf("; did you mean %q?", s[0])
				}
				return &usageError{err: fmt.Errorf("%s", msg), flag: true}
			}
		}
		if c.ValidArgsFunction == nil && len(c.ValidArgs) == 0 {
			c.ValidArgsFunction = completeNothing
			if c.HasSubCommands() {
				c.ValidArgsFunction = nil // cobra completes the subcommands
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
