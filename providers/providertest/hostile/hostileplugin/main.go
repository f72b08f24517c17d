// Command hostileplugin serves the hostile provider (package hostile) as a
// plugin executable, so that a host can be tested against it through its
// real plugin discovery. It registers as the simulated provider: install it
// in a plugin directory under that name,
//
//	go build -o DIR/svc-provider-simulated svc.dev/svc/providers/providertest/hostile/hostileplugin
//	svc serve --dev --plugin-dir DIR
//
// and connect simulated sources with the hostile provider's configuration
// (mode, objects, dir, ...; see package hostile). svc's own tests build it
// this way (cmd/svc).
package main

import (
	"svc.dev/svc/providers/plugin"
	"svc.dev/svc/providers/providertest/hostile"
)

func main() {
	plugin.Serve(hostile.Description, hostile.New)
}
