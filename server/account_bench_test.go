package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"runtime"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/vault"

	"svc.dev/svc/server"
	"svc.dev/svc/storage/bolt"
)

// BenchmarkAccountExport exports an account of 10,000 plans and 64 MiB or 1 GiB of vault
// content (4 MiB objects of incompressible bytes) through POST /v1/account/export, waits for the
// job, downloads the archive, and reports the peak live heap while the job ran (sampled every
// millisecond; the server runs in this process, so it includes the server's own live heap),
// the live heap before it, the archive's size and the export's throughput. Run it with
// -benchtime=1x: its setup writes the vault content.
func BenchmarkAccountExport(b *testing.B) {
	for _, mib := range []int{64, 1024} {
		b.Run(fmt.Sprintf("plans=10000/vault=%dMiB", mib), func(b *testing.B) { benchAccountExport(b, 10_000, mib) })
	}
}

func benchAccountExport(b *testing.B, plans, vaultMiB int) {
	e := newEnv(b)
	ctx := context.Background()
	tenant := e.userTestTenant()
	col := bolt.NewCollection(server.DBOf(e.srv), "plans", func() *svcv1.Plan { return &svcv1.Plan{} })
	var items []bolt.Item[*svcv1.Plan]
	for i := range plans {
		p := samplePlan(tenant, i)
		items = append(items, bolt.Item[*svcv1.Plan]{Tenant: tenant.String(), ID: p.PlanId, Value: p})
		if len(items) == 1000 || i == plans-1 {
			if err := col.PutMany(ctx, items); err != nil {
				b.Fatal(err)
			}
			items = items[:0]
		}
	}
	const objSize = 4 << 20
	rng := rand.NewChaCha8([32]byte{1})
	for i := range vaultMiB * (1 << 20) / objSize {
		_, err := e.srv.Vault().Put(ctx, tenant.String(), vault.PutRequest{Name: fmt.Sprintf("file-%04d.bin", i), Kind: "file",
			MIMEType: "application/octet-stream", SizeBytes: objSize}, io.LimitReader(rng, objSize))
		if err != nil {
			b.Fatal(err)
		}
	}
	var peak, base uint64
	var size int64
	var took time.Duration
	for b.Loop() {
		runtime.GC()
		base = liveHeap()
		stop := peakHeap()
		start := time.Now()
		r := e.do("POST", "/v1/account/export", "", with(e.session(), "Svc-Mode", "test")...)
		if r.status != 202 {
			b.Fatalf("export: %d %s", r.status, r.body)
		}
		var j map[string]any
		json.Unmarshal(r.body, &j)
		id := j["id"].(string)
		for {
			j = nil
			json.Unmarshal(e.do("GET", "/v1/jobs/"+id, "", with(e.session(), "Svc-Mode", "test")...).body, &j)
			if j["status"] != "queued" && j["status"] != "running" {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		took = time.Since(start)
		peak = max(peak, stop())
		if j["status"] != "succeeded" {
			b.Fatalf("export job: %v", j)
		}
		res, err := http.Get(j["result"].(map[string]any)["url"].(string))
		if err != nil {
			b.Fatal(err)
		}
		size, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(base)/(1<<20), "base-heap-MiB")
	b.ReportMetric(float64(size)/(1<<20), "archive-MiB")
	b.ReportMetric(float64(size)/(1<<20)/took.Seconds(), "MiB/s")
}
