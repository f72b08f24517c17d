package svc_test

import (
	"context"
	"testing"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
	"svc.dev/svc/receipt"
)

// rescue connects root as a folder source and runs a preserve-only (rescue) plan over it,
// authorized by its hash; with wait it returns the execution as it ended, else as it started.
// Any error fails the test.
func rescue(ctx context.Context, t *testing.T, sv *svc.Instance, root string, wait bool) (*svcv1.Source, *svcv1.Execution) {
	t.Helper()
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.VendorDLocal, Config: providers.Config{"root": root}, Kind: "folder"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{src.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	if err == nil {
		p, err = sv.AuthorizePlan(ctx, p.PlanId, p.Hash, nil)
	}
	var x *svcv1.Execution
	if err == nil {
		x, err = sv.Execute(ctx, p.PlanId, nil)
	}
	if err == nil && wait {
		x, err = sv.Wait(ctx, x.Id)
	}
	if err != nil {
		t.Fatal(err)
	}
	return src, x
}

// svcReceiptVerify verifies receipt bytes against the instance's published key set.
func svcReceiptVerify(sv *svc.Instance, raw []byte) (*receipt.Verified, error) {
	return receipt.Verify(raw, sv.ReceiptKeys().KeySet())
}
