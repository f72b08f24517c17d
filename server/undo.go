package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/plan"
	"svc.dev/svc/vault"
)

// restoreReceipt builds a draft restore plan that undoes an execution (POST
// /v1/receipts/{id}/restore): every object the receipt's execution trashed, removed or moved
// comes back, from the vault copy the receipt names (to its original place, or to
// destination_id) or, where the vault holds none, by untrashing it at the provider. Objects
// that can no longer come back are excluded with the reason. The plan is authorized and
// executed like any other.
func (s *Server) restoreReceipt(ctx context.Context, req *svcv1.RestoreReceiptRequest) (*svcv1.Plan, error) {
	c := callerFrom(ctx)
	tenant := c.Tenant.String()
	r, err := s.getReceipt(ctx, &svcv1.GetReceiptRequest{Id: req.GetId()})
	if err != nil {
		return nil, err
	}
	c.RawJSON = nil // the answer is the plan, not the receipt
	orig, err := s.plans.Get(ctx, tenant, r.GetPlanId())
	if err != nil {
		return nil, err
	}
	if !c.grantReaches(orig.GetSourceMarkers()) {
		return nil, newProblem(http.StatusForbidden, codeForbidden, "The connection's grant does not include every source of this receipt's execution.")
	}
	journal, err := s.core.Tenant(c.Tenant).Steps(ctx, r.GetExecutionId())
	if err != nil {
		return nil, err
	}
	// What the journal says was taken from the source: the trash's result, and whether the
	// provider can take it back.
	removed := map[string]execute.Transition{}
	for _, t := range journal {
		if t.To == svcv1.StepState_STEP_STATE_SOURCE_TRASHED_OR_REMOVED {
			removed[t.AssetID] = t
		}
	}
	planned := map[string]*svcv1.PlanObject{}
	for _, o := range orig.GetObjects() {
		planned[o.GetAssetId()] = o
	}
	var dst *svcv1.Destination
	if req.DestinationId != nil {
		// A destination outside the connection's grant is refused, as for every write.
		if dst, err = s.grantedDestination(ctx, c, req.GetDestinationId()); err != nil {
			return nil, err
		}
	}

	now := s.cfg.Now().UTC().Truncate(time.Millisecond)
	p := &svcv1.Plan{
		PlanId: id.NewAt("pln", now), PlanVersion: plan.Version, TenantId: tenant, UserId: c.Tenant.Owner, Actor: c.Actor(),
		Intent: svcv1.PlanIntent_PLAN_INTENT_RESTORE, Simulated: c.Tenant.Simulated(), Destination: dst,
		OperationClasses: []svcv1.OperationClass{svcv1.OperationClass_OPERATION_CLASS_DISCOVER, svcv1.OperationClass_OPERATION_CLASS_RESTORE},
		CreatedAt:        timestamppb.New(now), ExpiresAt: timestamppb.New(now.Add(plan.DefaultTTL)),
		SourceMarkers: []*svcv1.SourceMarker{}, Objects: []*svcv1.PlanObject{}, Excluded: []*svcv1.Exclusion{},
		PreservationRequired: true,
		Projection:           &svcv1.Projection{ProjectedQuota: []*svcv1.ProjectedQuota{}},
		State:                svcv1.PlanState_PLAN_STATE_DRAFT,
	}
	if dst != nil {
		p.OperationClasses = append(p.OperationClasses, svcv1.OperationClass_OPERATION_CLASS_WRITE)
		slices.Sort(p.OperationClasses)
	}
	exclude := func(assetID, detail string) {
		p.Excluded = append(p.Excluded, &svcv1.Exclusion{AssetId: assetID, Reason: svcv1.ExclusionReason_EXCLUSION_REASON_UNSUPPORTED_CAPABILITY, Detail: detail})
	}
	sources := map[string]svcv1.Provider{}
	for _, ro := range r.GetObjects() {
		t, ok := removed[ro.GetAssetId()]
		po := planned[ro.GetAssetId()]
		if !ok || po == nil {
			continue // not taken from the source: nothing to bring back
		}
		o := &svcv1.PlanObject{AssetId: ro.GetAssetId(), SourceId: po.GetSourceId(), Provider: po.GetProvider(),
			ProviderObjectId: po.GetProviderObjectId(), StorageClass: svcv1.StorageClass_STORAGE_CLASS_PRESERVE,
			Actions: []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_RESTORE}}
		copyOK, why := s.vaultCopy(ctx, tenant, ro)
		switch {
		case copyOK:
			o.ExpectedSizeBytes, o.ExpectedSha256 = ro.GetBytes(), proto.String(ro.GetVaultSha256())
			if dst != nil {
				o.ProviderObjectId = execute.DestinationPath(dst.GetPathTemplate(), po)
			}
		case dst != nil:
			exclude(ro.GetAssetId(), why+"; an untrash brings an object back only to its original place")
			continue
		case t.Restorable && t.ResultID != "":
			o.ExpectedSizeBytes = po.GetExpectedSizeBytes()
			o.ExpectedVersion = proto.String(execute.UntrashVersion(t.ResultID))
		default:
			exclude(ro.GetAssetId(), why+", and the provider removed it for good (nothing to untrash)")
			continue
		}
		p.Objects = append(p.Objects, o)
		p.Projection.ObjectCount++
		p.Projection.BytesToTransfer += o.GetExpectedSizeBytes()
		sources[o.GetSourceId()] = o.GetProvider()
	}
	markerAt := timestamppb.New(now)
	for _, m := range orig.GetSourceMarkers() {
		if _, ok := sources[m.GetSourceId()]; ok {
			p.SourceMarkers = append(p.SourceMarkers, &svcv1.SourceMarker{Provider: m.GetProvider(), SourceId: m.GetSourceId(),
				Kind: svcv1.SourceMarkerKind_SOURCE_MARKER_KIND_NONE, Value: "restore", ObservedAt: markerAt})
		}
	}
	if p.Meter, err = s.restoreMeter(ctx, c, p); err != nil {
		return nil, err
	}
	status := map[string]svcv1.SourceStatus{}
	for sid := range sources {
		src, err := s.sources.Get(ctx, tenant, sid)
		if err != nil {
			return nil, err
		}
		status[sid] = src.GetStatus()
	}
	p.Policy = plan.Decide(p, plan.Decision{SourceStatus: status, Grant: c.grant()})
	if p.Hash, err = plan.Hash(p); err != nil {
		return nil, err
	}
	if err := s.core.Tenant(c.Tenant).PutPlan(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// vaultCopy reports whether the vault copy a receipt names for an object can be restored
// from (committed or cold), and if not, why.
func (s *Server) vaultCopy(ctx context.Context, tenant string, ro *svcv1.ReceiptObject) (bool, string) {
	if ro.GetVaultObjectId() == "" {
		return false, "the execution kept no vault copy"
	}
	o, err := s.vault.Get(ctx, tenant, ro.GetVaultObjectId())
	switch {
	case errors.Is(err, vault.ErrNotFound):
		return false, "its vault copy " + ro.GetVaultObjectId() + " is gone"
	case err != nil:
		return false, "its vault copy " + ro.GetVaultObjectId() + " cannot be read"
	case o.State != vault.StateCommitted && o.State != vault.StateCold:
		return false, "its vault copy " + ro.GetVaultObjectId() + " is " + string(o.State)
	}
	return true, ""
}

// restoreMeter estimates a live restore on the rate card.
func (s *Server) restoreMeter(ctx context.Context, c *Caller, p *svcv1.Plan) (*svcv1.PlanMeter, error) {
	b, err := s.planBilling(ctx, c)
	if err != nil || b == nil {
		return nil, err
	}
	return plan.Estimate(p.Projection, b), nil
}
