package builtin_test

import (
	"context"
	"sync"
	"testing"
	"time"

	dropboxfake "svc.dev/svc/internal/vendorfake/dropbox"
	graphfake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/dropbox"
	"svc.dev/svc/providers/onedrive"
	"svc.dev/svc/providers/outlook"
)

// TestVendorPacing drives each vendor connector as hard as eight callers
// can for two seconds, with its default pacing, and counts the requests its
// fake received in every one-second window: at most the documented quota's
// rate plus its burst (Outlook: 10,000 requests per 10 minutes per
// mailbox; OneDrive: SharePoint's 1,250 resource units per minute, a read
// costing 1; Dropbox: svc's 10 a second, Dropbox publishing none), and at
// least half the rate (the pace is not far below the quota either).
func TestVendorPacing(t *testing.T) {
	type fake interface {
		RequestTimes() []time.Time
		Close()
	}
	graphCase := func() (fake, providers.Config) {
		g := graphfake.Seeded(graphfake.Seed{Seed: 9, Messages: 12, Files: 4})
		return g, providers.Config{"endpoint": g.Endpoint(), "access_token": graphfake.AccessToken}
	}
	cases := []struct {
		name  providers.Name
		open  func() (fake, providers.Config)
		rate  float64
		burst int
	}{
		{providers.VendorBMail, graphCase, float64(outlook.DefaultPacing.Rate), outlook.DefaultPacing.Burst},
		{providers.VendorBFiles, graphCase, float64(onedrive.DefaultPacing.Rate), onedrive.DefaultPacing.Burst},
		{providers.VendorCFiles, func() (fake, providers.Config) {
			d := dropboxfake.Seeded(dropboxfake.Seed{Seed: 9, Files: 4})
			return d, providers.Config{"api_url": d.URL(), "content_url": d.URL(), "access_token": dropboxfake.AccessToken}
		}, dropbox.DefaultRate, dropbox.DefaultRate},
	}
	reg := registries(t)["in-process"]
	for _, tc := range cases {
		t.Run(string(tc.name), func(t *testing.T) {
			t.Parallel()
			f, cfg := tc.open()
			defer f.Close()
			p := openFrom(t, reg, tc.name, cfg)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			start := time.Now()
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for ctx.Err() == nil {
						_, _ = p.List(ctx, providers.ListRequest{SourceRef: "default", PageSize: 1})
					}
				})
			}
			wg.Wait()
			hits := f.RequestTimes()
			// A token bucket lets through at most burst + rate in any one
			// second; one more for requests the limiter let go in order
			// that reach the fake a moment apart.
			limit := int(tc.rate) + tc.burst + 1
			most := 0
			for i, at := range hits {
				n := 0
				for _, b := range hits[i:] {
					if b.Sub(at) < time.Second {
						n++
					}
				}
				most = max(most, n)
			}
			t.Logf("%s: %d requests in %v, at most %d in any second (quota %.1f/s, burst %d)", tc.name, len(hits), time.Since(start).Round(time.Millisecond), most, tc.rate, tc.burst)
			if most > limit {
				t.Errorf("%d requests in one second, over the quota's %d", most, limit)
			}
			if float64(len(hits)) < tc.rate {
				t.Errorf("%d requests in two seconds: paced far below the quota", len(hits))
			}
		})
	}
}
