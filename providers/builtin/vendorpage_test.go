package builtin_test

import (
	"context"
	"slices"
	"testing"

	dropboxfake "svc.dev/svc/internal/vendorfake/dropbox"
	graphfake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/providertest"
)

// TestVendorPagesLargerThanAsked: the vendors treat page sizes as hints;
// when they answer pages larger than svc asked for, the connectors hand
// them out in pieces (pages of 1 to 3 here, against vendor pages of at
// least 7), nothing skipped or repeated, the same marker at the end.
func TestVendorPagesLargerThanAsked(t *testing.T) {
	reg := registries(t)["in-process"]
	g := graphfake.Seeded(graphfake.Seed{Seed: 12, Messages: 25, Files: 11})
	d := dropboxfake.Seeded(dropboxfake.Seed{Seed: 12, Files: 11})
	defer g.Close()
	defer d.Close()
	for _, tc := range []struct {
		name  providers.Name
		cfg   providers.Config
		floor func(int)
	}{
		{providers.VendorBMail, g.ProviderConfig(), g.SetPageFloor},
		{providers.VendorBFiles, g.ProviderConfig(), g.SetPageFloor},
		{providers.VendorCFiles, d.ProviderConfig(), d.SetPageFloor},
	} {
		t.Run(string(tc.name), func(t *testing.T) {
			ctx := context.Background()
			p := openFrom(t, reg, tc.name, tc.cfg)
			tc.floor(0)
			want, wantMarker := providertest.ListAll(ctx, t, p, "default", 1000)
			tc.floor(7)
			defer tc.floor(0)
			var got []string
			tok := ""
			for i := 0; ; i++ {
				size := 1 + i%3
				pg, err := p.List(ctx, providers.ListRequest{SourceRef: "default", PageToken: tok, PageSize: size})
				if err != nil {
					t.Fatal(err)
				}
				if len(pg.Objects) > size {
					t.Fatalf("page of %d for page size %d", len(pg.Objects), size)
				}
				for _, o := range pg.Objects {
					got = append(got, o.ID)
				}
				if tok = pg.NextPageToken; tok == "" {
					if pg.Marker != wantMarker {
						t.Errorf("marker %v, want %v", pg.Marker, wantMarker)
					}
					break
				}
			}
			if !slices.Equal(got, ids(want)) {
				t.Errorf("listing in small pieces of large vendor pages differs:\n%v\n%v", got, ids(want))
			}
		})
	}
}
