package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// newVersionCmd returns "svc version": the module version and VCS revision the binary was
// built from, and the Go version that built it.
func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version, source revision and Go version of this binary",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			info, _ := debug.ReadBuildInfo()
			writeVersion(cmd.OutOrStdout(), info)
			return nil
		},
	}
}

// writeVersion prints what a build info says: the main module's version ("(devel)" for a
// build from a checkout), the VCS revision and whether the tree had uncommitted changes.
func writeVersion(w io.Writer, info *debug.BuildInfo) {
	version, revision, when, modified := "unknown", "", "", false
	goVersion := runtime.Version()
	if info != nil {
		version = info.Main.Version
		goVersion = info.GoVersion
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	fmt.Fprintf(w, "svc %s\n", version)
	if revision != "" {
		suffix := ""
		if modified {
			suffix = " (with uncommitted changes)"
		}
		fmt.Fprintf(w, "  revision %s%s\n", revision, suffix)
		if when != "" {
			fmt.Fprintf(w, "  committed %s\n", when)
		}
	} else {
		fmt.Fprintln(w, "  revision unknown (built without version control information, e.g. by go run or go test)")
	}
	fmt.Fprintf(w, "  go %s\n", goVersion)
}
