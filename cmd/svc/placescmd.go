package main

import (
	"fmt"
	"text/tabwriter"

	"connectrpc.com/connect"
	"github.com/spf13/cobra"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// newSourcesCmd lists the caller's sources: plans name them with --source.
func newSourcesCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{Use: "sources", Short: "List and connect the sources a running server reaches for you"}
	cf.register(cmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List connected sources (id, provider, kind, status, name)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tPROVIDER\tKIND\tSTATUS\tNAME")
			for s, err := range c.ListSources(cmd.Context(), nil) {
				if err != nil {
					return explain(err)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", s.GetId(), enumName(s.GetProvider()), s.GetKind(), enumName(s.GetStatus()), s.GetDisplayName())
			}
			return w.Flush()
		},
	})
	cmd.AddCommand(newSourcesConnectCmd(&cf))
	return cmd
}

// newDestinationsCmd lists and makes destinations: export and migrate plans name one with
// --destination.
func newDestinationsCmd() *cobra.Command {
	var cf clientFlags
	cmd := &cobra.Command{Use: "destinations", Short: "List and make the destinations exports and migrations write to"}
	cf.register(cmd)
	cmd.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List destinations (id, provider, path template, label)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
			fmt.Fprintln(w, "ID\tPROVIDER\tPATH TEMPLATE\tLABEL")
			for d, err := range c.ListDestinations(cmd.Context(), nil) {
				if err != nil {
					return explain(err)
				}
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", d.GetDestinationId(), enumName(d.GetProvider()), d.GetPathTemplate(), d.GetLabel())
			}
			return w.Flush()
		},
	})
	var source, label, template string
	create := &cobra.Command{
		Use:   "create --source SOURCE_ID --label LABEL [--path-template T]",
		Short: "Make a destination that writes into a connected source's account",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := cf.resolveClient()
			if err != nil {
				return err
			}
			req := &svcv1.CreateDestinationRequest{SourceId: source, Label: label}
			if template != "" {
				req.PathTemplate = &template
			}
			res, err := c.Destinations.CreateDestination(cmd.Context(), connect.NewRequest(req))
			if err != nil {
				return explain(err)
			}
			d := res.Msg
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "%s  %s  %s  %s\n", d.GetDestinationId(), enumName(d.GetProvider()), d.GetPathTemplate(), d.GetLabel())
			return err
		},
	}
	create.Flags().StringVar(&source, "source", "", "the connected source to write into (its provider must be able to write)")
	create.Flags().StringVar(&label, "label", "", "a name for people")
	create.Flags().StringVar(&template, "path-template", "", "where objects go: {source_id} {provider} {object_id} {asset_id} {name} {path} (default {source_id}/{path})")
	cmd.AddCommand(create)
	return cmd
}
