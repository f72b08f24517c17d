package svc_test

import (
	"context"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	graphfake "svc.dev/svc/internal/vendorfake/graph"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
)

// A vendor that rotates refresh tokens (each refresh answers a new one and revokes the one it
// used, as Microsoft's identity platform may): the refresh token a connector is given is kept
// in the source's sealed configuration, so the source still works after a restart, when the
// token it was connected with no longer does.
func TestRotatedRefreshTokenIsKept(t *testing.T) {
	g := graphfake.Seeded(graphfake.Seed{Seed: 5, Messages: 12})
	defer g.Close()
	g.RotateRefreshTokens()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg, err := builtin.Registry(builtin.Options{Vendors: true})
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	dir := t.TempDir()
	open := func() *svc.Instance {
		t.Helper()
		sv, err := svc.Open(ctx, dir, &svc.Options{Providers: reg})
		if err != nil {
			t.Fatal(err)
		}
		return sv
	}
	plan := func(sv *svc.Instance, id string) {
		t.Helper()
		if _, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{id}, Intent: svcv1.PlanIntent_PLAN_INTENT_SVC}); err != nil {
			t.Fatal(err)
		}
		src, err := sv.Source(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if src.GetStatus() != svcv1.SourceStatus_SOURCE_STATUS_CONNECTED {
			t.Fatalf("source is %v", src.GetStatus())
		}
	}

	sv := open()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorBMail, SourceRef: "default", Config: g.ProviderConfig(), Kind: "mail"})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // two refreshes, two rotations: each new token is kept in turn
		g.ExpireAccess()
		plan(sv, src.Id)
	}
	if err := sv.Close(); err != nil {
		t.Fatal(err)
	}

	// After a restart the source opens with the newest refresh token: the first two were
	// revoked as they were used.
	sv = open()
	defer sv.Close()
	g.ExpireAccess()
	plan(sv, src.Id)
}
