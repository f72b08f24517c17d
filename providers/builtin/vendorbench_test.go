package builtin_test

import (
	"context"
	"os"
	"testing"
	"time"

	dropboxfake "svc.dev/svc/internal/vendorfake/dropbox"
	graphfake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
)

// BenchmarkVendorList lists each vendor connector's fake account to the
// end, in process and through the plugin boundary, and reports objects/s:
//
//	go test -run '^$' -bench VendorList -benchtime 3x ./providers/builtin/
//
// The fakes render every page's JSON and the connectors decode it, so this
// measures svc's side plus the fake's, over loopback, with pacing lifted.
func BenchmarkVendorList(b *testing.B) {
	const messages, files = 5000, 3000
	g := graphfake.Seeded(graphfake.Seed{Seed: 1, Messages: messages, Files: files})
	defer g.Close()
	d := dropboxfake.Seeded(dropboxfake.Seed{Seed: 1, Files: files})
	defer d.Close()
	cases := []struct {
		name providers.Name
		cfg  providers.Config
		n    int
	}{
		{providers.VendorBMail, g.ProviderConfig(), messages},
		{providers.VendorBFiles, g.ProviderConfig(), files},
		{providers.VendorCFiles, d.ProviderConfig(), files},
	}
	in, err := builtin.Registry(builtin.Options{})
	if err != nil {
		b.Fatal(err)
	}
	out, err := builtin.Registry(builtin.Options{Executable: os.Args[0]})
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	defer out.Close()
	list := func(b *testing.B, p providers.Provider) int {
		n, tok := 0, ""
		for {
			pg, err := p.List(context.Background(), providers.ListRequest{SourceRef: "default", PageToken: tok, PageSize: providers.MaxPageSize})
			if err != nil {
				b.Fatal(err)
			}
			n += len(pg.Objects)
			if tok = pg.NextPageToken; tok == "" {
				return n
			}
		}
	}
	// One listing first, so the fakes have hashed every file once (they
	// keep the hashes) and neither mode pays for it.
	for _, tc := range cases {
		p, err := in.Open(context.Background(), tc.name, tc.cfg)
		if err != nil {
			b.Fatal(err)
		}
		list(b, p)
	}
	for _, tc := range cases {
		for mode, reg := range map[string]*providers.Registry{"in-process": in, "plugin": out} {
			b.Run(string(tc.name)+"/"+mode, func(b *testing.B) {
				p, err := reg.Open(context.Background(), tc.name, tc.cfg)
				if err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				for b.Loop() {
					if n := list(b, p); n != tc.n {
						b.Fatalf("listed %d, want %d", n, tc.n)
					}
				}
				b.ReportMetric(float64(tc.n*b.N)/time.Since(start).Seconds(), "objects/s")
			})
		}
	}
}
