package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/mosaic-hpc/mosaic/client"
)

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
	}
	root.AddCommand(newServeCmd(), newResourcesCmd(), newIdleCmd(), newStatusCmd(), newAboutCmd(),
		newEnvCmd(), newExecCmd(), newPutFileCmd(),
		newSubmitCmd(), newTaskCmd(), newTasksCmd(), newCancelCmd(), newReplanCmd(), newLogsCmd(), newEventsCmd(), newEnvelopeCmd(),
		newInitSitesCmd(), newPreflightCmd(), newSmokeCmd(), newDoctorCmd(),
		newLoginCmd(), newLogoutCmd(), newAuthCmd(), newEndpointSetupCmd(), newEndpointsCmd(),
		newMCPCmd(), newSkillCmd(),
		newCampaignCmd(), newAgentCmd(), newExchangeCmd(),
		newSimCmd())
	return root
}

// signalContext is cancelled on SIGINT or SIGTERM.
func signalContext() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// newClient discovers the running core.
func newClient() (*client.Client, error) { return client.FromEnvironment() }
