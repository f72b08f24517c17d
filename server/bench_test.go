package server_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/wire"
)

// The edge benchmark pair: a GET /v1/plans?limit=50 page of 50 stored plans end to end
// in-process (auth, rate limit, validation, tenant and grant, store read, codec), against
// marshalling the same 50 plans with the wire codec alone. scripts/bench prints the ratio.

func benchEnv(b *testing.B) (*env, *svcv1.ListPlansResponse) {
	e := newEnv(b)
	var plans []*svcv1.Plan
	for i := range 50 {
		p := samplePlan(e.userTestTenant(), i)
		if err := e.srv.PutPlan(context.Background(), e.userTestTenant(), p); err != nil {
			b.Fatal(err)
		}
		// As the store gives it back: decoded from its bytes.
		data, err := proto.Marshal(p)
		if err != nil {
			b.Fatal(err)
		}
		q := &svcv1.Plan{}
		if err := proto.Unmarshal(data, q); err != nil {
			b.Fatal(err)
		}
		plans = append([]*svcv1.Plan{q}, plans...) // newest first, as listed
	}
	return e, &svcv1.ListPlansResponse{Data: plans}
}

// BenchmarkListPlansHTTP is BenchmarkListPlansEdge over a loopback connection (a keep-alive
// client, the body read to the end): what the network stack adds to the edge.
func BenchmarkListPlansHTTP(b *testing.B) {
	e, _ := benchEnv(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	req, _ := http.NewRequest("GET", e.ts.URL+e.plansPath()+"&limit=50", nil)
	req.Header.Set("Authorization", "Bearer "+e.creds.TestAPIKey)
	b.ReportAllocs()
	for b.Loop() {
		res, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			b.Fatalf("%d", res.StatusCode)
		}
	}
}

// BenchmarkPlanPageHeap serves GET /v1/plans?limit=10 over loopback for ten plans of 10, 1,000
// and 100,000 objects each and reports the peak live heap while the page is served (sampled
// every millisecond): REST streams each plan's objects from the store a chunk at a time, so
// the peak does not grow with the plans' size.
func BenchmarkPlanPageHeap(b *testing.B) {
	for _, n := range []int{10, 1000, 100_000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			e := newEnv(b)
			for range 10 {
				if err := e.srv.PutPlan(context.Background(), e.userTestTenant(), bigPlan(e, n)); err != nil {
					b.Fatal(err)
				}
			}
			req, _ := http.NewRequest("GET", e.ts.URL+e.plansPath()+"&limit=10", nil)
			req.Header.Set("Authorization", "Bearer "+e.creds.TestAPIKey)
			var peak, size uint64
			for b.Loop() {
				runtime.GC()
				base := liveHeap()
				stop := peakHeap()
				res, err := http.DefaultClient.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				nb, _ := io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode != 200 {
					b.Fatalf("%d", res.StatusCode)
				}
				top := stop()
				peak, size = max(peak, top-min(base, top)), uint64(nb)
			}
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(size)/(1<<20), "page-MiB")
		})
	}
}

func BenchmarkListPlansEdge(b *testing.B) {
	e, _ := benchEnv(b)
	h := e.srv.Handler()
	req := httptest.NewRequest("GET", e.plansPath()+"&limit=50", nil)
	req.Header.Set("Authorization", "Bearer "+e.creds.TestAPIKey)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

func BenchmarkListPlansCodec(b *testing.B) {
	_, res := benchEnv(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := wire.Marshal(res); err != nil {
			b.Fatal(err)
		}
	}
}

// The metering pair: the same GET /v1/plans page with a live key (metered as an API operation)
// and with a test key (test mode is never metered); everything else, audit included, is the
// same. scripts/bench prints the ratio.
func meteringBench(b *testing.B, live bool) {
	e := newEnv(b)
	ctx := context.Background()
	mode := platform.ModeTest
	key := e.creds.TestAPIKey
	if live {
		mode, key = platform.ModeLive, e.creds.LiveAPIKey
	}
	conn, err := e.srv.Developers().Connect(ctx, e.creds.ApplicationID, e.creds.UserID, mode, platform.Grant{OperationClasses: platform.OperationClasses})
	if err != nil {
		b.Fatal(err)
	}
	e.putPlans(platform.Tenant{Owner: e.creds.UserID, Mode: mode}, 10, nil)
	h := e.srv.Handler()
	req := httptest.NewRequest("GET", "/v1/plans?limit=10&connection_id="+conn.ID, nil)
	req.Header.Set("Authorization", "Bearer "+key)
	b.ReportAllocs()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

func BenchmarkRequestMetered(b *testing.B)   { meteringBench(b, true) }
func BenchmarkRequestUnmetered(b *testing.B) { meteringBench(b, false) }
