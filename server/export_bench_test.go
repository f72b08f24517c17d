package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"testing"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/manifest"
	"svc.dev/svc/plan"
	"svc.dev/svc/providers"

	"svc.dev/svc/server"
	"svc.dev/svc/storage/bolt"
)

// BenchmarkManifestExport exports a tenant's 10,000 and 40,000 manifests (about 1 KB of JSON
// each) over REST, which streams the bundle, and over Connect, which builds it in memory, and
// reports the peak live heap of each (sampled every millisecond while the export runs; the
// server runs in this process, so the figures include its own live heap) and the baseline
// live heap before the export.
func BenchmarkManifestExport(b *testing.B) {
	for _, n := range []int{10_000, 40_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchExport(b, n) })
	}
}

func benchExport(b *testing.B, n int) {
	e := newEnv(b)
	tenant := e.userTestTenant().String()
	col := bolt.NewCollection(server.DBOf(e.srv), "manifests", func() *svcv1.Manifest { return &svcv1.Manifest{} })
	var items []bolt.Item[*svcv1.Manifest]
	for i := range n {
		asset := plan.AssetID(tenant, "src_01JD0000000000000000000000", fmt.Sprint(i))
		m, err := manifest.New(&manifest.Asset{AssetID: asset, TenantRef: tenant, Provider: svcv1.Provider_PROVIDER_VENDOR_D_LOCAL,
			SourceRef: "src_01JD0000000000000000000000", ObservedAt: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC),
			Object: providers.Object{ID: fmt.Sprintf("docs/%06d.pdf", i), Name: fmt.Sprintf("%06d.pdf", i), Path: fmt.Sprintf("docs/%06d.pdf", i),
				Kind: providers.KindFile, SizeBytes: int64(1000 + i), MIMEType: "application/pdf", Version: "v1"}})
		if err != nil {
			b.Fatal(err)
		}
		items = append(items, bolt.Item[*svcv1.Manifest]{Tenant: tenant, ID: asset, Value: m})
		if len(items) == 1000 {
			if err := col.PutMany(context.Background(), items); err != nil {
				b.Fatal(err)
			}
			items = items[:0]
		}
	}
	items = nil
	cx := "?connection_id=" + e.creds.ConnectionID
	var restPeak, connectPeak, base uint64
	var restBytes int64
	for b.Loop() {
		runtime.GC()
		base = liveHeap()
		stop := peakHeap()
		req, _ := http.NewRequest("GET", e.ts.URL+"/v1/vault/manifests/export"+cx, nil)
		req.Header.Set("Authorization", "Bearer "+e.creds.TestAPIKey)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		restBytes, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		restPeak = max(restPeak, stop())
		if res.StatusCode != 200 {
			b.Fatalf("export: %d", res.StatusCode)
		}

		runtime.GC()
		stop = peakHeap()
		c := svcv1connect.NewVaultServiceClient(e.connectClient("Authorization", "Bearer "+e.creds.TestAPIKey), e.ts.URL)
		bundle, err := c.ExportManifests(context.Background(), connect.NewRequest(&svcv1.ExportManifestsRequest{ConnectionId: proto.String(e.creds.ConnectionID)}))
		if err != nil || len(bundle.Msg.GetManifests()) != n {
			b.Fatalf("connect export: %v", err)
		}
		bundle = nil
		connectPeak = max(connectPeak, stop())
	}
	b.ReportMetric(float64(restBytes)/(1<<20), "bundle-MiB")
	b.ReportMetric(float64(base)/(1<<20), "base-heap-MiB")
	b.ReportMetric(float64(restPeak)/(1<<20), "rest-peak-heap-MiB")
	b.ReportMetric(float64(connectPeak)/(1<<20), "connect-peak-heap-MiB")
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakHeap samples the live heap every millisecond until the returned function is called, which
// returns the largest value seen.
func peakHeap() func() uint64 {
	done := make(chan uint64)
	quit := make(chan struct{})
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		var peak uint64
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(s)
			peak = max(peak, s[0].Value.Uint64())
			select {
			case <-quit:
				done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 { close(quit); return <-done }
}
