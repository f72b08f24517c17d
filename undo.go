package svc

import (
	"context"
	"errors"
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

// UndoReceipt builds and stores a draft restore plan that undoes an execution: every object
// the receipt's execution trashed, removed or moved comes back, from the vault copy the
// receipt names (to its original place, or to opts.Destination) or, where the vault holds
// none, by untrashing it at the provider. Objects that can no longer come back are excluded
// with the reason. The plan is authorized and executed like any other. opts.Path is ignored.
func (s *Scope) UndoReceipt(ctx context.Context, receiptID string, opts *RestoreOptions) (*svcv1.Plan, error) {
	var ro RestoreOptions
	if opts != nil {
		ro = *opts
	}
	tenant := s.key()
	r, _, err := s.Receipt(ctx, receiptID)
	if err != nil {
		return nil, err
	}
	if _, err := s.Execution(ctx, r.GetExecutionId()); err != nil {
		return nil, err
	}
	if err := s.restoreDestination(ctx, &ro); err != nil {
		return nil, err
	}
	// Memory follows what was taken from the source, not the size of the execution: the
	// journal and the plan's objects are streamed, and only the entries of removed assets are
	// kept. What the journal says was taken: the trash's result, and whether the provider
	// can take it back.
	removed := map[string]execute.Transition{}
	err = execStore{s.c}.ScanJournal(ctx, tenant, r.GetExecutionId(), func(t execute.Transition) error {
		if t.To == svcv1.StepState_STEP_STATE_SOURCE_TRASHED_OR_REMOVED {
			removed[t.AssetID] = t
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	orig, err := s.c.store.Plans().Header(ctx, tenant, r.GetPlanId())
	if err != nil {
		return nil, err
	}
	planned := map[string]*svcv1.PlanObject{}
	for objs, err := range s.c.store.Plans().Objects(ctx, tenant, r.GetPlanId()) {
		if err != nil {
			return nil, err
		}
		for _, o := range objs {
			if _, ok := removed[o.GetAssetId()]; ok {
				planned[o.GetAssetId()] = o
			}
		}
	}
	dst := ro.Destination

	now := s.c.now().UTC().Truncate(time.Millisecond)
	p := &svcv1.Plan{
		PlanId: id.NewAt("pln", now), PlanVersion: plan.Version, TenantId: tenant, UserId: s.t.Owner, Actor: s.actorOr(ro.Actor),
		Intent: svcv1.PlanIntent_PLAN_INTENT_RESTORE, Simulated: s.t.Simulated(), Destination: dst,
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
	for _, obj := range r.GetObjects() {
		t, ok := removed[obj.GetAssetId()]
		po := planned[obj.GetAssetId()]
		if !ok || po == nil {
			continue // not taken from the source: nothing to bring back
		}
		o := &svcv1.PlanObject{AssetId: obj.GetAssetId(), SourceId: po.GetSourceId(), Provider: po.GetProvider(),
			ProviderObjectId: po.GetProviderObjectId(), StorageClass: svcv1.StorageClass_STORAGE_CLASS_PRESERVE,
			Actions: []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_RESTORE}}
		copyOK, why := s.vaultCopy(ctx, obj)
		switch {
		case copyOK:
			o.ExpectedSizeBytes, o.ExpectedSha256 = obj.GetBytes(), proto.String(obj.GetVaultSha256())
			if dst != nil {
				o.ProviderObjectId = execute.DestinationPath(dst.GetPathTemplate(), po)
			} else if t.Restorable && t.ResultID != "" {
				// Both ways back: the engine writes the vault copy where the provider can
				// write, and untrashes where it cannot (trash and untrash, no write).
				o.ExpectedVersion = proto.String(execute.UntrashVersion(t.ResultID))
			}
		case dst != nil:
			exclude(obj.GetAssetId(), why+"; an untrash brings an object back only to its original place")
			continue
		case t.Restorable && t.ResultID != "":
			o.ExpectedSizeBytes = po.GetExpectedSizeBytes()
			o.ExpectedVersion = proto.String(execute.UntrashVersion(t.ResultID))
		default:
			exclude(obj.GetAssetId(), why+", and the provider removed it for good (nothing to untrash)")
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
	if ro.Billing != nil {
		p.Meter = plan.Estimate(p.Projection, ro.Billing)
	}
	status := map[string]svcv1.SourceStatus{}
	for sid := range sources {
		src, err := s.Source(ctx, sid)
		if err != nil {
			return nil, err
		}
		status[sid] = src.GetStatus()
	}
	p.Policy = plan.Decide(p, plan.Decision{SourceStatus: status, Grant: s.grantOr(ro.Grant)})
	if p.Hash, err = plan.Hash(p); err != nil {
		return nil, err
	}
	if err := s.PutPlan(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

// vaultCopy reports whether the vault copy a receipt names for an object can be restored
// from (committed or cold), and if not, why.
func (s *Scope) vaultCopy(ctx context.Context, ro *svcv1.ReceiptObject) (bool, string) {
	if ro.GetVaultObjectId() == "" {
		return false, "the execution kept no vault copy"
	}
	o, err := s.VaultObject(ctx, ro.GetVaultObjectId())
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
