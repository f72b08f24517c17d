package svc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
)

// Wait returns an error for an execution that ended without completing (issue 20, 9), with the
// execution itself; a completed one has none.
func TestWaitReportsAnExecutionThatDidNotComplete(t *testing.T) {
	ctx := context.Background()
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	// A slow simulated mailbox: the execution is still running when it is cancelled.
	src, err := sv.ConnectSource(ctx, svc.SourceSpec{Provider: providers.Simulated, SourceRef: "mail/wait", Kind: "mail",
		Config: providers.Config{"seed": "7", "objects": "200", "latency": "20ms"}})
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
	if err == nil {
		_, err = sv.CancelExecution(ctx, x.Id)
	}
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	got, err := sv.Wait(wctx, x.Id)
	if got.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_CANCELLED {
		t.Fatalf("the execution ended %v (%v)", got.GetStatus(), err)
	}
	if !errors.Is(err, svc.ErrNotCompleted) || got.GetReceiptId() == "" {
		t.Fatalf("Wait on a cancelled execution: %v, receipt %q", err, got.GetReceiptId())
	}

	_, done := rescue(ctx, t, sv, t.TempDir(), true) // rescue fails the test on any Wait error
	if done.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
		t.Fatalf("rescue ended %v", done.GetStatus())
	}
}
