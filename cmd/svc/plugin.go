package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"path/filepath"

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
			tuneGC(pluginMemoryLimit)
			if dir := os.Getenv("SVC_PLUGIN_DEBUG_DIR"); dir != "" {
				if err := servePluginDebug(dir, args[0]); err != nil {
					return err
				}
			}
			return builtin.Serve(args[0])
		},
	})
	return cmd
}

// servePluginDebug serves net/http/pprof for a plugin process on a loopback port it picks, and
// writes the address to DIR/plugin-NAME-PID.addr, so that a benchmark can profile the plugin
// side of an execution (SVC_PLUGIN_DEBUG_DIR, see docs/benchmarks.md). Off unless set.
func servePluginDebug(dir, name string) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("plugin debug endpoints: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	go http.Serve(ln, mux)
	f := filepath.Join(dir, fmt.Sprintf("plugin-%s-%d.addr", name, os.Getpid()))
	return os.WriteFile(f, []byte(ln.Addr().String()), 0o600)
}
