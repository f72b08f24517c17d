package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/store"
	"svc.dev/svc/wire"
)

// The edge benchmark pair: a GET /v1/plans?limit=50 page of 50 stored plans end to end
// in-process (auth, rate limit, validation, tenant and grant, store read, codec), against
// marshalling the same 50 plans with the wire codec alone. scripts/bench prints the ratio.

func benchEnv(b *testing.B) (*env, *svcv1.ListPlansResponse) {
	e := newEnv(b)
	e.putPlans(e.userTestTenant(), 50, nil)
	plans := store.NewCollection(e.srv.DB(), "plans", func() *svcv1.Plan { return &svcv1.Plan{} })
	page, err := plans.List(context.Background(), e.userTestTenant().String(), "", 50, nil)
	if err != nil || len(page.Items) != 50 {
		b.Fatalf("%d plans, %v", len(page.Items), err)
	}
	return e, &svcv1.ListPlansResponse{Data: page.Items}
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
