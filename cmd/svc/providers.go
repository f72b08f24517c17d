package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
)

// providerInfo is one row of "svc providers list --json".
type providerInfo struct {
	Name             providers.Name             `json:"name"`
	DisplayName      string                     `json:"display_name"`
	ProtocolVersion  int                        `json:"protocol_version"`
	OutOfProcess     bool                       `json:"out_of_process"`
	OperationClasses []providers.OperationClass `json:"operation_classes"`
	Capabilities     []providers.Capability     `json:"capabilities"`
	ObjectKinds      []providers.Kind           `json:"object_kinds"`
	MarkerKinds      []providers.MarkerKind     `json:"marker_kinds"`
}

// newProvidersCmd returns "svc providers", whose "list" subcommand prints
// the registered providers as "svc serve" runs them.
func newProvidersCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "providers",
		Short: "Inspect the providers this binary can use",
	}
	var asJSON, inProcess bool
	var pluginDir string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the registered providers, their protocol version and capabilities",
		Long: "List the registered providers: the built-ins, served out of process by this binary\n" +
			"as \"svc serve\" runs them (or in process with --in-process), and the plugins found\n" +
			"in the plugin directory.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := builtin.Options{PluginDir: pluginDir, Vendors: true}
			if !inProcess {
				exe, err := os.Executable()
				if err != nil {
					return fmt.Errorf("providers list: %w", err)
				}
				opts.Executable = exe
			}
			reg, regErr := builtin.Registry(opts)
			defer reg.Close()
			var rows []providerInfo
			for _, name := range reg.Names() {
				d, err := reg.Describe(cmd.Context(), name)
				if err != nil {
					return fmt.Errorf("providers list: %w", err)
				}
				r, _ := reg.Lookup(name)
				rows = append(rows, providerInfo{
					Name: d.Name, DisplayName: d.DisplayName, ProtocolVersion: d.ProtocolVersion, OutOfProcess: r.OutOfProcess,
					OperationClasses: d.OperationClasses, Capabilities: d.Capabilities, ObjectKinds: d.ObjectKinds, MarkerKinds: d.MarkerKinds,
				})
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				if err := enc.Encode(rows); err != nil {
					return err
				}
			} else {
				tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "NAME\tPROTOCOL\tMODE\tOPERATION CLASSES\tCAPABILITIES")
				for _, r := range rows {
					mode := "in-process"
					if r.OutOfProcess {
						mode = "plugin"
					}
					caps := join(r.Capabilities)
					if caps == "" {
						caps = "-"
					}
					fmt.Fprintf(tw, "%s\tv%d\t%s\t%s\t%s\n", r.Name, r.ProtocolVersion, mode, join(r.OperationClasses), caps)
				}
				if err := tw.Flush(); err != nil {
					return err
				}
			}
			if regErr != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), "warning:", regErr)
			}
			return nil
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	list.Flags().BoolVar(&inProcess, "in-process", false, "describe the built-ins in process instead of as plugins")
	list.Flags().StringVar(&pluginDir, "plugin-dir", builtin.DefaultPluginDir(), "directory of third-party provider plugins (svc-provider-NAME)")
	cmd.AddCommand(list)
	return cmd
}

func join[T ~string](vs []T) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = string(v)
	}
	return strings.Join(s, ",")
}
