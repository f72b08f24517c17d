// Package builtin builds the registry of svc's built-in providers
// (vendor_a_mail, vendor_a_files, vendor_b_mail, vendor_b_files,
// vendor_c_files, simulated, vendor_d_local, object_store_compatible,
// svc_vault) and of
// the third-party plugins found in a plugin directory, in one place, for
// cmd/svc and for Go programs embedding the SDK.
//
// The svc binary serves its own built-ins out of process: Registry with
// Options.Executable set runs each built-in as "EXECUTABLE plugin serve
// NAME", whose main calls Serve. Without it the built-ins run in process.
package builtin

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/dropbox"
	"svc.dev/svc/providers/gdrive"
	"svc.dev/svc/providers/gmail"
	"svc.dev/svc/providers/local"
	"svc.dev/svc/providers/onedrive"
	"svc.dev/svc/providers/outlook"
	"svc.dev/svc/providers/plugin"
	"svc.dev/svc/providers/s3"
	"svc.dev/svc/providers/simulated"
	"svc.dev/svc/providers/vaultfs"
)

// Builtin is one built-in provider.
type Builtin struct {
	Description providers.Description
	// Vendor is true for the connectors to third-party APIs, which a
	// Registry holds only with Options.Vendors.
	Vendor bool
	// New opens the provider in process.
	New providers.Factory
	// serve is the factory the plugin process uses (it differs for
	// simulated, whose injected crash really exits there).
	serve providers.Factory
}

// All returns the built-ins in the spec's enumeration order.
func All() []Builtin {
	return []Builtin{
		{Description: gmail.Description, New: gmail.New, Vendor: true},
		{Description: gdrive.Description, New: gdrive.New, Vendor: true},
		{Description: outlook.Description, New: outlook.New, Vendor: true},
		{Description: onedrive.Description, New: onedrive.New, Vendor: true},
		{Description: dropbox.Description, New: dropbox.New, Vendor: true},
		{Description: local.Description, New: local.New},
		{Description: s3.Description, New: s3.New},
		{Description: vaultfs.Description, New: vaultfs.New},
		{
			Description: simulated.Description, New: simulated.New,
			serve: simulated.NewFactory(simulated.Options{Crash: func() { os.Exit(3) }}),
		},
	}
}

func lookup(name providers.Name) (Builtin, bool) {
	for _, b := range All() {
		if b.Description.Name == name {
			return b, true
		}
	}
	return Builtin{}, false
}

// Options configures Registry. The zero value runs the built-ins in process
// and discovers no plugins.
type Options struct {
	// Executable, when set, runs every built-in out of process by starting
	// this binary with Args(name); its main must call Serve(name).
	Executable string
	// Args returns the arguments for serving name; nil means
	// "plugin serve NAME".
	Args func(name providers.Name) []string
	// Plugin configures the plugin hosts (timeouts, logs).
	Plugin *plugin.Options
	// PluginDir is a directory of third-party plugins (svc-provider-NAME).
	// A plugin named like a built-in replaces it.
	PluginDir string
	// Vendors registers the vendor connectors too (vendor_a_mail,
	// vendor_a_files, vendor_b_mail, vendor_b_files, vendor_c_files): they
	// reach third-party APIs with a source's OAuth token, so a registry holds them only when asked (svc serve and svc
	// providers list ask), and a program that registers its own provider
	// under such a name keeps doing so.
	Vendors bool
	// Defaults, when set, gives configuration every instance of a
	// provider gets beneath its own (the instance's keys win). svc serve
	// gives the vendor connectors the OAuth client of --oauth-config this
	// way (client_id, client_secret, token_url), so they can refresh the
	// token a source's configuration holds. It is called at each Open.
	Defaults func(name providers.Name) providers.Config
}

// withDefaults wraps a registration's Open to add opts.Defaults.
func withDefaults(r providers.Registration, defaults func(providers.Name) providers.Config) providers.Registration {
	if defaults == nil {
		return r
	}
	open := r.Open
	r.Open = func(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
		extra := defaults(r.Name)
		if len(extra) == 0 {
			return open(ctx, cfg)
		}
		merged := make(providers.Config, len(cfg)+len(extra))
		maps.Copy(merged, extra)
		maps.Copy(merged, cfg)
		return open(ctx, merged)
	}
	return r
}

// Registry returns a registry of the built-ins and the discovered plugins.
// Close the registry to stop the plugin processes.
func Registry(opts Options) (*providers.Registry, error) {
	args := opts.Args
	if args == nil {
		args = func(name providers.Name) []string { return []string{"plugin", "serve", string(name)} }
	}
	found, derr := plugin.Discover(opts.PluginDir)
	if opts.PluginDir == "" {
		found, derr = nil, nil
	}
	external := make(map[providers.Name]string)
	for _, d := range found {
		external[d.Name] = d.Path
	}
	reg := providers.NewRegistry()
	for _, b := range All() {
		name := b.Description.Name
		switch {
		case b.Vendor && !opts.Vendors:
			continue
		case external[name] != "":
			continue // registered below
		case opts.Executable != "":
			reg.Register(withDefaults(plugin.Registration(plugin.NewPlugin(name, plugin.Command(opts.Executable, args(name)...), opts.Plugin)), opts.Defaults))
		default:
			reg.Register(withDefaults(providers.InProcess(b.Description, b.New), opts.Defaults))
		}
	}
	for _, d := range found {
		reg.Register(withDefaults(plugin.Registration(plugin.NewPlugin(d.Name, plugin.Command(d.Path), opts.Plugin)), opts.Defaults))
	}
	if derr != nil {
		return reg, fmt.Errorf("builtin registry: %w", derr)
	}
	return reg, nil
}

// Serve serves the named built-in as a plugin process (the hidden "svc
// plugin serve NAME" command). It returns when the host disconnects.
func Serve(name string) error {
	b, ok := lookup(providers.Name(name))
	if !ok {
		return fmt.Errorf("serve %q: %w", name, providers.ErrUnknownProvider)
	}
	f := b.serve
	if f == nil {
		f = b.New
	}
	plugin.Serve(b.Description, f)
	return nil
}

// DefaultPluginDir is where svc looks for third-party plugins when not told:
// $XDG_DATA_HOME/svc/plugins (~/.local/share/svc/plugins).
func DefaultPluginDir() string {
	base := os.Getenv("XDG_DATA_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return ""
		}
		base = filepath.Join(home, ".local", "share")
	}
	return filepath.Join(base, "svc", "plugins")
}
