package main

import (
	"io"

	"github.com/spf13/cobra"
)

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "svc",
		Short:         "Clean up, move and rescue content at providers without losing it",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.AddCommand(newServeCmd(), newPlanCmd(), newApplyCmd(), newReceiptCmd(), newProvidersCmd(), newSourcesCmd(), newDestinationsCmd(), newVaultCmd(), newPluginCmd(), newCorpusCmd(), newAccountCmd(), newJobsCmd(), newOpenAPICmd(), newIntelCmd(), newCreatorCmd(), newKeysCmd(), newExecutionsCmd(), newVersionCmd(), newMigrateCmd())
	return root
}
