package dropbox_test

import (
	"context"
	"fmt"

	"svc.dev/svc/internal/vendorfake/dropbox"
	"svc.dev/svc/providers"
	provider "svc.dev/svc/providers/dropbox"
)

// A seeded fake stands in for the Dropbox API: its ProviderConfig is the
// source configuration of the vendor_c_files provider.
func ExampleSeeded() {
	s := dropbox.Seeded(dropbox.Seed{Seed: 1, Files: 5})
	defer s.Close()
	p, _ := provider.New(context.Background(), s.ProviderConfig())
	page, err := p.List(context.Background(), providers.ListRequest{SourceRef: "default", PageSize: 100})
	fmt.Println(len(page.Objects), page.Marker.Kind, err)
	// Output: 5 cursor <nil>
}
