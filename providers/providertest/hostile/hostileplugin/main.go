// Command hostileplugin serves the hostile provider (package hostile) as a
// plugin executable, so that a host can be tested against it through its
// real plugin discovery. It registers as the simulated provider: install it
// in a plugin directory under that name,
//
//	go build -o DIR/svc-provider-simulated svc.dev/svc/providers/providertest/hostile/hostileplugin
//	svc serve --dev --plugin-dir DIR
//
// and connect simulated sources with the hostile provider's configuration
// (mode, objects, dir, ...; see package hostile). Sources a host connects by
// itself (svc serve --dev seeds simulated sources) take their misbehaviour
// from a file beside the executable, named like it with ".json" added
// (DIR/svc-provider-simulated.json): a JSON object of configuration keys,
// defaults under each source's own configuration. svc's own tests use it
// this way (cmd/svc).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"svc.dev/svc/providers"
	"svc.dev/svc/providers/plugin"
	"svc.dev/svc/providers/providertest/hostile"
)

func main() {
	defaults, err := readDefaults()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hostileplugin:", err)
		os.Exit(1)
	}
	plugin.Serve(hostile.Description, func(ctx context.Context, cfg providers.Config) (providers.Provider, error) {
		merged := providers.Config{}
		for k, v := range defaults {
			merged[k] = v
		}
		for k, v := range cfg {
			merged[k] = v
		}
		return hostile.New(ctx, merged)
	})
}

// readDefaults reads the configuration beside the executable, if any.
func readDefaults() (providers.Config, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	raw, err := os.ReadFile(exe + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var cfg providers.Config
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%s.json: %w", exe, err)
	}
	return cfg, nil
}
