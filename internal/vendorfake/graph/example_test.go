package graph_test

import (
	"context"
	"fmt"

	"svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/onedrive"
	"svc.dev/svc/providers/outlook"
)

// A seeded fake stands in for Microsoft Graph: its ProviderConfig is the
// source configuration of the vendor_b providers.
func ExampleSeeded() {
	s := graph.Seeded(graph.Seed{Seed: 1, Messages: 10, Files: 3})
	defer s.Close()
	ctx := context.Background()
	mail, _ := outlook.New(ctx, s.ProviderConfig())
	files, _ := onedrive.New(ctx, s.ProviderConfig())
	for _, p := range []providers.Provider{mail, files} {
		page, err := p.List(ctx, providers.ListRequest{SourceRef: "default", PageSize: 100})
		fmt.Println(len(page.Objects), page.Marker.Kind, page.NextPageToken == "", err)
	}
	// Output:
	// 10 delta_token true <nil>
	// 3 delta_token true <nil>
}
