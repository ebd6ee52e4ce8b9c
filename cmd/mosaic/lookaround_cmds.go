package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/client"
)

func newEnvCmd() *cobra.Command {
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "env SYSTEM",
		Short: "Look at a system's login node: host, workdir, python/torch, modules, containers, accounts",
		Example: `  mosaic env delta
  mosaic env anvil --jq .associations`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeSystemArg(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			e, err := c.SystemEnv(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), e)
			}
			tw := table(cmd.OutOrStdout())
			exists := "missing"
			if e.WorkDirExists {
				exists = "exists"
			}
			rows := [][2]string{{"host", e.Host}, {"user", e.User}, {"workdir", e.WorkDir + " (" + exists + ")"},
				{"python", dash(e.Python)}, {"torch", dash(e.Torch)},
				{"containers", dash(strings.Join(e.ContainerRuntimes, ", "))},
				{"modules", fmt.Sprintf("%d available", e.ModuleCount)}}
			for _, r := range rows {
				fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
			}
			for i, a := range e.Associations {
				k := ""
				if i == 0 {
					k = "accounts"
				}
				fmt.Fprintf(tw, "%s\t%s\n", k, a)
			}
			return tw.Flush()
		},
	}
	addJSONFlag(cmd, &j, client.SiteEnv{})
	return cmd
}

func newExecCmd() *cobra.Command {
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "exec SYSTEM \"COMMAND\"",
		Short: "Run one read-only look-around command on a login node (allowlisted, no shell, bounded)",
		Long: `Run one read-only look-around command on a login node: an allowlisted program
(sinfo, squeue, sacct, scontrol show, qstat, ls, cat, head, tail, grep, find, du, df,
nvidia-smi, ...), its arguments split on whitespace, no shell. It runs in the system's
workdir, for at most 30 seconds.

Mosaic decides by what the command can read: options are parsed like the program does
(-fn1, --foll, --opt=value), and commands that print the environment, read keys, tokens,
~/.ssh, ~/.globus*, Mosaic's config and state or /proc/PID/, follow a file (tail -f) or
read whole trees outside the workdir (grep -r, find, du, ls -R) are refused with the
reason. Symlinks are resolved on the site before the check. See docs/LOOKAROUND.md.`,
		Example: `  mosaic exec delta "sinfo -s"
  mosaic exec anvil "ls /anvil/scratch"
  mosaic exec anvil "tail -n 50 mosaic/mosaic-abc.out"
  mosaic exec delta "sinfo -s" --jq .stdout`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeSystemArg(false),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient()
			if err != nil {
				return err
			}
			r, err := c.Exec(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), r)
			}
			fmt.Fprint(cmd.OutOrStdout(), r.Stdout)
			fmt.Fprint(cmd.ErrOrStderr(), r.Stderr)
			if r.Truncated {
				fmt.Fprintln(cmd.ErrOrStderr(), "mosaic: output truncated")
			}
			if r.ExitCode != 0 {
				// The remote command's status passes through (125–127 read as Mosaic's own: 1).
				code := jobExit(r.ExitCode)
				msg := ""
				if code != r.ExitCode {
					msg = fmt.Sprintf("%s exited %d (reported as %d: 125 and above are Mosaic's own statuses)", args[1], r.ExitCode, code)
				}
				return &exitError{code: code, msg: msg}
			}
			return nil
		},
	}
	addJSONFlag(cmd, &j, client.ExecResult{})
	return cmd
}

// maxPutFile mirrors the core's limit so a too-big file is refused before upload.
const maxPutFile = 2 << 20

func newPutFileCmd() *cobra.Command {
	var to string
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "put-file SYSTEM LOCAL_FILE --to PATH",
		Short: "Stage a small file (at most 2 MiB) into a system's workdir",
		Example: `  mosaic put-file delta ./input.json --to runs/input.json
  mosaic put-file anvil job.sh --to job.sh --json`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeSystemArg(true),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := os.ReadFile(args[1])
			if err != nil {
				return usage(err)
			}
			if to == "" {
				return usagef("--to PATH is required (relative to the system's workdir)")
			}
			if len(data) > maxPutFile {
				return fmt.Errorf("refused: %s is %d bytes, over the 2 MiB limit for put-file; stage large files with the site's transfer tools (scp, Globus)", args[1], len(data))
			}
			c, err := newClient()
			if err != nil {
				return err
			}
			p, err := c.PutFile(cmd.Context(), args[0], to, data)
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), putFileResult{Path: p, Bytes: len(data)})
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s (%d bytes)\n", p, len(data))
			return nil
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "destination path inside the system's workdir")
	addJSONFlag(cmd, &j, putFileResult{})
	return cmd
}

// putFileResult is what put-file prints with --json.
type putFileResult struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
}
