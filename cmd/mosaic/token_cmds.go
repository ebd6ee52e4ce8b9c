package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/client"
)

func newTokenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage API tokens of a shared core's users (admin): create, list, revoke",
		Example: `  mosaic token create --user alice --label laptop
  mosaic token list`,
		Long: `Each user of a shared core has their own API tokens (mos_…). Only a SHA-256 hash of a
token is stored: create prints the token once, and it cannot be shown again. A user
sets it as MOSAIC_TOKEN (or writes it to their token file).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newTokenCreateCmd(), newTokenListCmd(), newTokenRevokeCmd())
	return cmd
}

func newTokenCreateCmd() *cobra.Command {
	var j jsonFlag
	var local bool
	var user, label string
	cmd := &cobra.Command{
		Use:   "create [--user NAME] [--label TEXT]",
		Short: "Make an API token and print it once (only its hash is stored)",
		Example: `  mosaic token create --user alice --label laptop
  MOSAIC_TOKEN=$(mosaic token create --user ci) mosaic tasks`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUsersBackend(cmd, local, func(b usersBackend) error {
				t, err := b.CreateToken(cmd.Context(), user, label)
				if err != nil {
					return err
				}
				if t.Token == "" {
					return errNoToken
				}
				if j.set {
					return j.print(cmd.OutOrStdout(), t)
				}
				// The token alone on stdout (for $(…)); what it is on stderr.
				fmt.Fprintln(cmd.OutOrStdout(), t.Token)
				fmt.Fprintf(cmd.ErrOrStderr(), "token %s for %s: shown this once, only its hash is stored; the user sets it as MOSAIC_TOKEN. "+
					"Revoke it with `mosaic token revoke %s`.\n", t.ID, t.User, t.ID)
				return nil
			})
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "the user the token acts for (default: you)")
	cmd.Flags().StringVar(&label, "label", "", "what the token is for (shown by `mosaic token list`)")
	cmd.Flags().BoolVar(&local, "local", false, localFlagHelp)
	addJSONFlag(cmd, &j, client.CreatedToken{})
	return cmd
}

func newTokenListCmd() *cobra.Command {
	var j jsonFlag
	var local bool
	var user string
	cmd := &cobra.Command{
		Use:   "list [--user NAME]",
		Short: "List tokens (their ids, users and labels; never the tokens)",
		Example: `  mosaic token list
  mosaic token list --user alice --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUsersBackend(cmd, local, func(b usersBackend) error {
				ts, err := b.Tokens(cmd.Context(), user)
				if err != nil {
					return err
				}
				if j.set {
					return j.print(cmd.OutOrStdout(), ts)
				}
				tw := table(cmd.OutOrStdout())
				fmt.Fprintln(tw, "ID\tUSER\tLABEL\tCREATED\tREVOKED")
				for _, t := range ts {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.ID, t.User, dash(oneLine(t.Label, 40)), shortTime(t.CreatedAt), dash(shortTime(t.RevokedAt)))
				}
				return tw.Flush()
			})
		},
	}
	cmd.Flags().StringVar(&user, "user", "", "only this user's tokens")
	cmd.Flags().BoolVar(&local, "local", false, localFlagHelp)
	addJSONFlag(cmd, &j, []client.Token{})
	addWideFlag(cmd, &j)
	return cmd
}

func newTokenRevokeCmd() *cobra.Command {
	var local bool
	cmd := &cobra.Command{
		Use:     "revoke ID",
		Short:   "Revoke a token by its id (mos_xxxxxxxx): the next request with it is refused",
		Example: `  mosaic token revoke mos_ab12cd34`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withUsersBackend(cmd, local, func(b usersBackend) error {
				if err := b.RevokeToken(cmd.Context(), args[0]); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "revoked token %s\n", args[0])
				return nil
			})
		},
	}
	cmd.Flags().BoolVar(&local, "local", false, localFlagHelp)
	return cmd
}
