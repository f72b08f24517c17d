// Command svc-provider-vendor_c_files is the example catalogue provider as
// a plugin. Put the binary in svc's plugin directory.
package main

import (
	"svc.dev/svc/examples/catalogprovider/catalog"
	"svc.dev/svc/providers/plugin"
)

func main() {
	plugin.Serve(catalog.Description, catalog.New)
}
