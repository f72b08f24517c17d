package builtin_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	fakegmail "svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
)

// BenchmarkVendorAMailList lists a fake Gmail mailbox of 10,000 and of
// 100,000 messages through the plugin boundary (this test binary
// re-executed as "plugin serve vendor_a_mail", speaking HTTP to the fake on
// loopback, pacing off) and reports objects/s and the peak RSS of the host
// (which also runs the fake) and of the plugin; memory must not grow with
// the mailbox:
//
//	go test -run '^$' -bench VendorAMailList -benchtime 1x ./providers/builtin/
func BenchmarkVendorAMailList(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			s := fakegmail.Start(fakegmail.Options{Messages: n, Seed: 1})
			defer s.Close()
			reg, err := builtin.Registry(builtin.Options{Executable: os.Args[0], Vendors: true})
			if err != nil {
				b.Fatal(err)
			}
			defer reg.Close()
			p, err := reg.Open(context.Background(), providers.VendorAMail, s.Config())
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			if _, err := p.List(ctx, providers.ListRequest{SourceRef: "me", PageSize: 1}); err != nil { // start the plugin
				b.Fatal(err)
			}
			r, _ := reg.Lookup(providers.VendorAMail)
			pid := strconv.Itoa(r.Closer.(interface{ Pid() int }).Pid())
			resetPeakRSS()
			_ = os.WriteFile("/proc/"+pid+"/clear_refs", []byte("5"), 0)
			b.ResetTimer()
			start := time.Now()
			listed := 0
			for range b.N {
				listed = 0
				tok := ""
				for {
					pg, err := p.List(ctx, providers.ListRequest{SourceRef: "me", PageToken: tok, PageSize: 500})
					if err != nil {
						b.Fatal(err)
					}
					listed += len(pg.Objects)
					if tok = pg.NextPageToken; tok == "" {
						break
					}
				}
			}
			d := time.Since(start)
			if listed != n {
				b.Fatalf("listed %d of %d", listed, n)
			}
			b.ReportMetric(float64(listed*b.N)/d.Seconds(), "obj/s")
			b.ReportMetric(float64(peakRSS("self"))/(1<<20), "host-peak-RSS-MiB")
			b.ReportMetric(float64(peakRSS(pid))/(1<<20), "plugin-peak-RSS-MiB")
		})
	}
}
