package svc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
)

// A Go program acting for a connection gets the grant enforced by the scope itself, as the
// hosted API does: a representative part of the authorization matrix (every resource kind a
// call can name, read, listed and acted on) through the embedding API, with a connection's
// grant limited to one source and to some operation classes.
func TestScopeEnforcesAConnectionsGrant(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sv, err := svc.OpenMemory(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	rootA, _ := folder(t, 2)
	rootB, _ := folder(t, 3)
	srcA, xA := rescue(ctx, t, sv, rootA, true)
	srcB, xB := rescue(ctx, t, sv, rootB, true)

	g := sv.As(svc.Access{
		Actor:   &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_DEVELOPER_APPLICATION, PrincipalId: "key_1"},
		Grant:   plan.Grant{OperationClasses: []string{"discover", "preserve"}},
		Sources: []string{srcA.Id},
	})
	forbidden := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, svc.ErrForbidden) {
			t.Errorf("%s: %v, want forbidden", what, err)
		}
	}
	allowed := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Errorf("%s: %v, want allowed", what, err)
		}
	}

	// Sources.
	_, err = g.Source(ctx, srcA.Id)
	allowed("source in the grant", err)
	_, err = g.Source(ctx, srcB.Id)
	forbidden("source outside the grant", err)
	if srcs, err := g.Sources(ctx); err != nil || len(srcs) != 1 || srcs[0].Id != srcA.Id {
		t.Errorf("sources: %d, %v; want only %s", len(srcs), err, srcA.Id)
	}
	_, err = g.UpdateSourcePolicy(ctx, srcB.Id, &svcv1.SourcePolicy{})
	forbidden("policy of a source outside the grant", err)

	// Plans: building over a source outside the grant, reading and acting on its plan.
	_, err = g.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{srcB.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	forbidden("plan over a source outside the grant", err)
	p, err := g.BuildPlan(ctx, svc.PlanRequest{Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	allowed("plan over every reachable source", err)
	if p != nil && (len(p.GetSourceMarkers()) != 1 || p.GetSourceMarkers()[0].GetSourceId() != srcA.Id) {
		t.Errorf("plan over every reachable source covers %v, want only %s", p.GetSourceMarkers(), srcA.Id)
	}
	_, err = g.PlanHeader(ctx, xB.GetPlanId())
	forbidden("plan of a source outside the grant", err)
	_, err = g.CancelPlan(ctx, xB.GetPlanId())
	forbidden("cancel a plan outside the grant", err)
	_, err = g.PlanHeader(ctx, xA.GetPlanId())
	allowed("plan in the grant", err)
	plans, err := g.ListPlans(ctx, svc.PlanFilter{}, "", 50)
	allowed("list plans", err)
	for _, lp := range plans.Items {
		if lp.PlanId == xB.GetPlanId() {
			t.Errorf("list plans shows %s, outside the grant", lp.PlanId)
		}
	}

	// Executions and receipts.
	_, err = g.Execution(ctx, xB.Id)
	forbidden("execution outside the grant", err)
	_, err = g.Execution(ctx, xA.Id)
	allowed("execution in the grant", err)
	_, err = g.CancelExecution(ctx, xB.Id)
	forbidden("cancel an execution outside the grant", err)
	xs, err := g.ListExecutions(ctx, svc.ExecutionFilter{}, "", 50)
	if err != nil || len(xs.Items) != 1 || xs.Items[0].Id != xA.Id {
		t.Errorf("list executions: %d, %v; want only %s", len(xs.Items), err, xA.Id)
	}
	_, _, err = g.Receipt(ctx, xB.GetReceiptId())
	forbidden("receipt outside the grant", err)
	_, err = g.VerifyReceipt(ctx, xB.GetReceiptId())
	forbidden("verify a receipt outside the grant", err)
	_, _, err = g.Receipt(ctx, xA.GetReceiptId())
	allowed("receipt in the grant", err)
	_, err = g.UndoReceipt(ctx, xB.GetReceiptId(), nil)
	forbidden("undo a receipt outside the grant", err)

	// The vault.
	var inA, inB string
	for o, err := range sv.VaultObjects(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		switch o.SourceID {
		case srcA.Id:
			inA = o.ID
		case srcB.Id:
			inB = o.ID
		}
	}
	_, err = g.VaultObject(ctx, inB)
	forbidden("vault object outside the grant", err)
	_, _, err = g.OpenVaultObject(ctx, inB)
	forbidden("vault content outside the grant", err)
	_, err = g.RestoreVaultObject(ctx, inB, nil)
	forbidden("restore a vault object outside the grant", err)
	_, err = g.VaultObject(ctx, inA)
	allowed("vault object in the grant", err)
	objs, _, err := g.ListVaultObjects(ctx, svc.VaultFilter{}, "", 50)
	allowed("list vault objects", err)
	for _, o := range objs {
		if o.SourceID != srcA.Id {
			t.Errorf("list vault objects shows %s of %s, outside the grant", o.ID, o.SourceID)
		}
	}
	ms, err := g.Manifests(ctx, nil)
	allowed("manifests", err)
	for _, m := range ms {
		if m.GetSource().GetSourceRef() != srcA.Id {
			t.Errorf("manifests show %s of %s, outside the grant", m.GetAssetId(), m.GetSource().GetSourceRef())
		}
	}

	// Operation classes: a cleanup trashes, which this grant does not include.
	if p != nil {
		ap, err := g.AuthorizePlan(ctx, p.PlanId, p.Hash, nil)
		allowed("authorize a rescue inside the grant", err)
		if ap != nil {
			_, err = g.Execute(ctx, ap.PlanId, nil)
			allowed("execute a rescue inside the grant", err)
		}
	}

	// A plan authorized by the owner is still refused to a grant without its operations.
	op, err := sv.BuildPlan(ctx, svc.PlanRequest{SourceIDs: []string{srcA.Id}, Intent: svcv1.PlanIntent_PLAN_INTENT_RESCUE})
	if err == nil {
		op, err = sv.AuthorizePlan(ctx, op.PlanId, op.Hash, nil)
	}
	if err != nil {
		t.Fatal(err)
	}
	discoverOnly := sv.As(svc.Access{Grant: plan.Grant{OperationClasses: []string{"discover"}}, Sources: []string{srcA.Id}})
	_, err = discoverOnly.Execute(ctx, op.PlanId, nil)
	forbidden("execute a plan whose operations the grant lacks", err)

	// Another tenant's ids are not found, whatever the grant.
	other := sv.Tenant(svc.Tenant{Owner: "someone-else", Mode: svc.ModeLive}).As(svc.Access{Sources: []string{srcA.Id}})
	if _, err := other.Execution(ctx, xA.Id); !errors.Is(err, svc.ErrNotFound) {
		t.Errorf("another tenant's execution: %v, want not found", err)
	}
	if _, err := other.Source(ctx, srcA.Id); !errors.Is(err, svc.ErrNotFound) {
		t.Errorf("another tenant's source: %v, want not found", err)
	}
}
