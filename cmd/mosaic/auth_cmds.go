package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/internal/auth"
	"github.com/mosaic-hpc/mosaic/internal/site"
	"github.com/mosaic-hpc/mosaic/internal/transport/globus"
)

// These commands manage Globus credentials and endpoints on this machine; they read
// and write the same files the core resolves credentials from
// ($XDG_CONFIG_HOME/mosaic/globus), so they do not need a running core.

func newLoginCmd() *cobra.Command {
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "login",
		Short: "Sign in with Globus for Globus Compute sites (prints a URL, you paste the code)",
		Long: `Sign in with Globus using the native-app flow with PKCE: open the printed URL, sign in,
and paste the one-time code. Refresh tokens are stored (mode 0600) in
$XDG_CONFIG_HOME/mosaic/globus/cli-login.json and used by the core without prompting.`,
		Example: `  mosaic login
  mosaic login --jq .identity`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := auth.NewResolver(nil).Login(cmd.Context(), cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), st)
			}
			return printAuthStatus(cmd.OutOrStdout(), st)
		},
	}
	addJSONFlag(cmd, &j, auth.Status{})
	return cmd
}

func newLogoutCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "logout",
		Short:   "Revoke and delete the Globus tokens stored by `mosaic login`",
		Example: `  mosaic logout`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := auth.NewResolver(nil).Logout(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), "Signed out: CLI login tokens revoked and deleted.")
			return nil
		},
	}
}

func newAuthCmd() *cobra.Command {
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "auth",
		Short: "Show which Globus credential is in use: source, identity, scopes, expiry (never the token)",
		Long: `Show the Globus credential Mosaic would use, resolved in this order: web session,
MOSAIC_GLOBUS_TOKENS, service identity (GLOBUS_COMPUTE_CLIENT_ID/_SECRET), CLI login.`,
		Example: `  mosaic auth
  mosaic auth --json=source,expires_at`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := auth.NewResolver(nil).Status(cmd.Context())
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), st)
			}
			return printAuthStatus(cmd.OutOrStdout(), st)
		},
	}
	addJSONFlag(cmd, &j, auth.Status{})
	return cmd
}

func printAuthStatus(w io.Writer, st auth.Status) error {
	tw := table(w)
	exp := "unknown"
	if !st.ExpiresAt.IsZero() {
		exp = fmt.Sprintf("%s (in %s)", st.ExpiresAt.Local().Format(time.RFC3339), time.Until(st.ExpiresAt).Round(time.Minute))
	}
	ident := st.Identity.String()
	if st.Identity.Name != "" && st.Identity.Name != ident {
		ident += " (" + st.Identity.Name + ")"
	}
	rows := [][2]string{{"source", string(st.Source)}, {"identity", dash(ident)}, {"client", dash(st.ClientID)},
		{"scopes", dash(strings.Join(st.Scopes, " "))}, {"expires", exp}, {"refreshable", fmt.Sprint(st.Refreshable)}}
	if st.File != "" {
		rows = append(rows, [2]string{"file", st.File})
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}

func newEndpointSetupCmd() *cobra.Command {
	var run bool
	var name string
	cmd := &cobra.Command{
		Use:   "endpoint-setup [USER@]HOST",
		Short: "Print (or with --run, run over ssh) the script that sets up a Globus Compute endpoint on a login node",
		Long: `Print the bash script that installs globus-compute-endpoint in ~/.gce-venv on a login
node, configures an endpoint named "mosaic" with one worker and BLAS/OpenMP/uv thread
pools pinned (login nodes cap threads), starts it detached and prints its UUID.
Re-running applies template changes and restarts it; config.yaml is never overwritten.
With --run the script is copied to HOST and run there with ssh -t (its first start opens
a Globus login: use the same account as 'mosaic login').`,
		Example: `  mosaic endpoint-setup you@login.delta.ncsa.illinois.edu > setup.sh
  mosaic endpoint-setup --run you@login.delta.ncsa.illinois.edu`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			script, err := globus.SetupScript(name)
			if err != nil {
				return err
			}
			if !run {
				_, err := io.WriteString(cmd.OutOrStdout(), script)
				return err
			}
			return runSetup(cmd.Context(), args[0], script, cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	cmd.Flags().BoolVar(&run, "run", false, "copy the script to HOST and run it over ssh")
	cmd.Flags().StringVar(&name, "name", globus.DefaultEndpointName, "endpoint name")
	return cmd
}

// runSetup copies the script to the host and runs it with a terminal, so the
// endpoint's first Globus login can prompt.
func runSetup(ctx context.Context, host, script string, in io.Reader, out, errOut io.Writer) error {
	if host == "" || strings.HasPrefix(host, "-") || strings.ContainsAny(host, " \t\n'\"\\;") {
		return fmt.Errorf("host %q: want [user@]hostname or an ~/.ssh/config alias", host)
	}
	const remote = ".mosaic/endpoint-setup.sh"
	cp := exec.CommandContext(ctx, "ssh", "--", host, "umask 077 && mkdir -p .mosaic && cat > "+remote)
	cp.Stdin, cp.Stdout, cp.Stderr = strings.NewReader(script), out, errOut
	if err := cp.Run(); err != nil {
		return fmt.Errorf("copying the setup script to %s: %w (check `ssh %s` works)", host, err, host)
	}
	var captured strings.Builder
	r := exec.CommandContext(ctx, "ssh", "-t", "--", host, "bash "+remote)
	r.Stdin, r.Stdout, r.Stderr = in, io.MultiWriter(out, &captured), errOut
	if err := r.Run(); err != nil {
		return fmt.Errorf("endpoint setup on %s failed: %w", host, err)
	}
	if id, ok := globus.ParseSetupOutput(captured.String()); ok {
		fmt.Fprintf(out, "\nAdd to your sites file:\n  kind: globus\n  endpoint: %s\n", id)
	}
	return nil
}

// endpointRow is one line of `mosaic endpoints`.
type endpointRow struct {
	UUID     string `json:"uuid"`
	Name     string `json:"name"`
	Status   string `json:"status"`
	Hostname string `json:"hostname"`
	Machine  string `json:"machine,omitempty"`
	System   string `json:"system,omitempty"`
	Error    string `json:"error,omitempty"`
}

// endpointsReport is `mosaic endpoints --json`.
type endpointsReport struct {
	Endpoints []endpointRow `json:"endpoints"`
	// Missing are known machines with none of your endpoints.
	Missing []string `json:"missing"`
}

func newEndpointsCmd() *cobra.Command {
	var j jsonFlag
	cmd := &cobra.Command{
		Use:   "endpoints",
		Short: "List your Globus Compute endpoints and the machine each runs on",
		Long: `List the Globus Compute endpoints you own with their status, host and the known
machine recognised from the hostname, then the known machines that have no endpoint yet
(set one up with 'mosaic endpoint-setup --run USER@HOST').`,
		Example: `  mosaic endpoints
  mosaic endpoints --jq '.missing[]'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rep, err := listEndpoints(cmd.Context(), globus.NewClient(nil, auth.NewResolver(nil)))
			if err != nil {
				return err
			}
			if j.set {
				return j.print(cmd.OutOrStdout(), rep)
			}
			tw := table(cmd.OutOrStdout())
			fmt.Fprintln(tw, "UUID\tNAME\tSTATUS\tHOST\tMACHINE")
			for _, e := range rep.Endpoints {
				st := e.Status
				if e.Error != "" {
					st = "? (" + e.Error + ")"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.UUID, e.Name, dash(st), dash(e.Hostname), dash(e.System))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(rep.Missing) > 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "\nKnown machines without an endpoint: %s\n  set one up: mosaic endpoint-setup --run USER@LOGIN-HOST\n", strings.Join(rep.Missing, ", "))
			}
			return nil
		},
	}
	addJSONFlag(cmd, &j, endpointsReport{})
	return cmd
}

// listEndpoints asks for the user's endpoints, then each one's metadata (4 at a time).
func listEndpoints(ctx context.Context, c *globus.Client) (endpointsReport, error) {
	eps, err := c.Endpoints(ctx)
	if err != nil {
		return endpointsReport{}, fmt.Errorf("listing Globus Compute endpoints: %w", err)
	}
	const maxEndpoints = 200
	if len(eps) > maxEndpoints {
		eps = eps[:maxEndpoints]
	}
	rows := make([]endpointRow, len(eps))
	sem := make(chan struct{}, 4)
	var wg sync.WaitGroup
	for i, e := range eps {
		rows[i] = endpointRow{UUID: e.UUID, Name: firstOf(e.DisplayName, e.Name)}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			md, err := c.EndpointMetadata(ctx, e.UUID)
			if err != nil {
				var api *globus.APIError
				if errors.As(err, &api) {
					rows[i].Error = fmt.Sprintf("HTTP %d", api.Status)
				} else {
					rows[i].Error = "unreachable"
				}
				return
			}
			rows[i].Hostname, rows[i].Status = md.Hostname, md.Status
		})
	}
	wg.Wait()
	known := site.KnownMachines()
	have := map[string]bool{}
	for i := range rows {
		if m, ok := globus.MatchMachine(rows[i].Hostname, known); ok {
			rows[i].Machine, rows[i].System = m.Machine, m.Name
			have[m.Machine] = true
		}
	}
	sort.SliceStable(rows, func(a, b int) bool { return rows[a].System+rows[a].Name < rows[b].System+rows[b].Name })
	rep := endpointsReport{Endpoints: rows, Missing: []string{}}
	for _, m := range known {
		if !have[m.Machine] {
			rep.Missing = append(rep.Missing, m.Name)
		}
	}
	return rep, nil
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
