package main

import (
	"github.com/spf13/cobra"

	"svc.dev/svc/providers/builtin"
)

// newPluginCmd returns the hidden "svc plugin serve NAME": the binary
// serving one of its built-in providers as a plugin process. The host
// (svc serve, svc providers list) starts it; run by hand it refuses, as it
// lacks the host's handshake.
func newPluginCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:    "plugin",
		Short:  "Serve a built-in provider as a plugin process (used by svc itself)",
		Hidden: true,
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "serve NAME",
		Short: "Serve the built-in provider NAME over the provider plugin protocol",
		Args:  cobra.ExactArgs(1),
		RunE: func(_ *cobra.Command, args []string) error {
			return builtin.Serve(args[0])
		},
	})
	return cmd
}
