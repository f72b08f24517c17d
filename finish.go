package svc

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"time"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/manifest"
	"svc.dev/svc/providers"
	"svc.dev/svc/receipt"
	"svc.dev/svc/storage"
)

// finisher makes receipts for the engine: it meters the execution's usage (Options.Charger),
// builds the receipt from the journal, signs it and stores the exact signed bytes. Its receipt
// id is derived from the execution id, so a finish repeated after a crash finds the receipt
// already made. The events that announce the end go with the execution's end
// (execStore.EndExecution).
type finisher struct{ c *core }

var _ execute.Finisher = finisher{}

// receiptID is the id of the receipt an execution ends with.
func receiptID(executionID string) string { return "rcp_" + strings.TrimPrefix(executionID, "exe_") }

func (f finisher) Finish(ctx context.Context, tenantRef string, x *svcv1.Execution, p *svcv1.Plan, objects iter.Seq2[[]*svcv1.PlanObject, error],
	journal func(func(execute.Transition) error) error) (execute.Receipt, error) {
	c := f.c
	rid := receiptID(x.GetId())
	s, err := c.scope(tenantRef)
	if err != nil {
		return execute.Receipt{}, err
	}
	if raw, err := c.store.Receipts().Get(ctx, tenantRef, rid); err == nil {
		// Made before an interruption that came before the execution recorded its end.
		at, err := finishedAt(raw)
		if err != nil {
			return execute.Receipt{}, fmt.Errorf("stored receipt %s: %w", rid, err)
		}
		return execute.Receipt{ID: rid, FinishedAt: at}, nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return execute.Receipt{}, err
	}
	in := receipt.FromPlan(p)
	in.ReceiptID, in.ExecutionID = rid, x.GetId()
	in.StartedAt = x.GetStartedAt().AsTime()
	in.FinishedAt = c.now().UTC()
	if x.StartedAt == nil {
		in.StartedAt = in.FinishedAt
	}
	in.Errors = x.GetErrors()
	outcomes, err := assetOutcomes(journal)
	if err != nil {
		return execute.Receipt{}, err
	}
	// Manifests record the destination writes before the receipt exists: a finish repeated
	// after a crash stops at the stored receipt.
	for objs, err := range objects {
		if err != nil {
			return execute.Receipt{}, err
		}
		for _, o := range objs {
			a := outcomes[o.GetAssetId()]
			if err := c.recordDestination(ctx, tenantRef, x.GetId(), p, o, a); err != nil {
				return execute.Receipt{}, err
			}
			in.Objects = append(in.Objects, receiptObject(o, a))
			delete(outcomes, o.GetAssetId())
		}
	}
	for _, o := range in.Objects {
		if o.Restorable {
			in.Restoration.Method = "vault_to_original"
			break
		}
	}
	in.Before, in.After = s.quotaSnapshots(ctx, p)
	in.Charges = []receipt.Charge{}
	if c.opts.Charger != nil {
		if in.Charges, err = c.opts.Charger.Charge(ctx, p, x, in.Objects); err != nil {
			return execute.Receipt{}, err
		}
	}
	_, raw, err := receipt.Issue(&in, c.keyring)
	if err != nil {
		return execute.Receipt{}, err
	}
	if err := c.store.Receipts().Put(ctx, tenantRef, rid, raw); err != nil {
		return execute.Receipt{}, err
	}
	at, err := finishedAt(raw) // as stored, so that a redo returns the same time
	if err != nil {
		return execute.Receipt{}, err
	}
	return execute.Receipt{ID: rid, FinishedAt: at}, nil
}

// finishedAt reads a stored receipt's finishedAt (the zero time when it has none). It reads
// the receipt's top-level members only up to that one: the receipt's canonical JSON sorts
// them, and finishedAt comes before the objects, which are most of a large receipt.
func finishedAt(raw []byte) (time.Time, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return time.Time{}, fmt.Errorf("receipt: not a JSON object: %v", err)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return time.Time{}, err
		}
		var t time.Time
		if tok == "finishedAt" {
			err := dec.Decode(&t)
			return t, err
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return time.Time{}, err
		}
	}
	return time.Time{}, nil
}

// endEvents prepares the events that announce an execution's end (x as it ends: terminal,
// with its receipt and finished_at): svc.execution.<status>, svc.receipt.created, and
// svc.plan.executed or partially_executed. Their ids derive from the receipt and finishedAt.
// They are written in the transaction that ends the execution (execStore.EndExecution).
func (s *Scope) endEvents(ctx context.Context, x *svcv1.Execution, p *svcv1.Plan) ([]pending, error) {
	rid, at := x.GetReceiptId(), x.GetFinishedAt().AsTime()
	finished := at.UTC().Format(time.RFC3339Nano)
	typ := "svc.execution." + enumWire(x.GetStatus())
	var out []pending
	add := func(evID, typ, source, subject string, data map[string]any) error {
		pe, err := s.prepareAt(ctx, evID, at, typ, source, subject, data)
		out = append(out, pe)
		return err
	}
	err := add(derivedEventID(rid+"/"+typ, at), typ, "/v1/executions", x.GetId(),
		map[string]any{"execution_id": x.GetId(), "plan_id": x.GetPlanId(), "status": enumWire(x.GetStatus()),
			"receipt_id": rid, "finished_at": finished})
	if err == nil {
		err = add(derivedEventID(rid+"/"+EventReceiptCreated, at), EventReceiptCreated, "/v1/receipts", rid,
			map[string]any{"receipt_id": rid, "execution_id": x.GetId(), "status": enumWire(x.GetStatus()), "finished_at": finished})
	}
	if st := p.GetState(); err == nil && (st == svcv1.PlanState_PLAN_STATE_EXECUTED || st == svcv1.PlanState_PLAN_STATE_PARTIALLY_EXECUTED) {
		typ := "svc.plan." + enumWire(st)
		err = add(derivedEventID(rid+"/"+typ, at), typ, "/v1/plans", p.GetPlanId(), PlanEventData(p))
	}
	return out, err
}

// assetOutcome is what an execution's journal says of one asset, as the receipt and the manifests
// need it: its latest state, and the transitions that preserved, removed or wrote it, without
// the rest of its journal.
type assetOutcome struct {
	last                     svcv1.StepState
	err                      string
	vault, removed, restored *execute.Transition
}

// assetOutcomes reads an execution's journal once and keeps each asset's outcome.
func assetOutcomes(journal func(func(execute.Transition) error) error) (map[string]*assetOutcome, error) {
	by := map[string]*assetOutcome{}
	err := journal(func(t execute.Transition) error {
		a := by[t.AssetID]
		if a == nil {
			a = &assetOutcome{}
			by[t.AssetID] = a
		}
		a.last, a.err = t.To, t.Error
		switch t.To {
		case svcv1.StepState_STEP_STATE_VAULT_COMMITTED:
			a.vault = &t
		case svcv1.StepState_STEP_STATE_SOURCE_TRASHED_OR_REMOVED:
			a.removed = &t
		case svcv1.StepState_STEP_STATE_RESTORED:
			a.restored = &t
		}
		return nil
	})
	return by, err
}

// receiptObject is what the receipt says of a plan object, from its outcome (nil: the journal
// never mentions it).
func receiptObject(o *svcv1.PlanObject, a *assetOutcome) receipt.Object {
	ro := receipt.Object{AssetID: o.GetAssetId(), ProviderObjectID: o.GetProviderObjectId(), Actions: o.GetActions(), Bytes: o.GetExpectedSizeBytes()}
	if a == nil {
		ro.Status, ro.Error = receipt.Skipped, "not processed"
		return ro
	}
	if a.vault != nil {
		ro.Preserved, ro.VaultObjectID, ro.VaultSHA256, ro.Bytes = true, a.vault.VaultID, a.vault.VaultSHA256, a.vault.Bytes
		ro.Restorable = true
	}
	if a.restored != nil { // written to a destination (copy, move) or restored
		ro.Transferred, ro.ProviderResultID, ro.Bytes = true, a.restored.ResultID, a.restored.Bytes
		if a.restored.VaultID != "" {
			ro.Preserved, ro.VaultObjectID, ro.VaultSHA256, ro.Restorable = true, a.restored.VaultID, a.restored.VaultSHA256, true
		}
	}
	if a.removed != nil { // its result id is what an untrash needs
		ro.Removed, ro.ProviderResultID = true, a.removed.ResultID
		ro.Restorable = ro.Restorable || a.removed.Restorable
	}
	switch last := a.last; {
	case last == svcv1.StepState_STEP_STATE_EXCLUDED || (last == svcv1.StepState_STEP_STATE_SKIPPED && !ro.Preserved):
		ro.Status, ro.Error = receipt.Skipped, cmp.Or(a.err, "skipped")
	case last == svcv1.StepState_STEP_STATE_SKIPPED || (last == svcv1.StepState_STEP_STATE_FAILED && ro.Preserved):
		ro.Status, ro.Error = receipt.Partial, cmp.Or(a.err, "not completed")
	case last == svcv1.StepState_STEP_STATE_FAILED:
		ro.Status, ro.Error = receipt.Failed, cmp.Or(a.err, "failed")
	default:
		ro.Status = receipt.Completed
	}
	return ro
}

// recordDestination adds an asset's verified write to a destination (copy, move, restore), if
// it had one, to its manifest: a destinations entry and its copied_to, moved_to or
// restored_to edge. An asset copied without a vault copy gets its manifest here.
func (c *core) recordDestination(ctx context.Context, tenant, exeID string, p *svcv1.Plan, o *svcv1.PlanObject, a *assetOutcome) error {
	if a == nil || a.restored == nil {
		return nil
	}
	t := a.restored
	d := manifest.Destination{DestinationID: o.GetSourceId(), Provider: o.GetProvider(), ObjectID: t.ResultID, Path: t.Path,
		Mode: svcv1.DestinationMode_DESTINATION_MODE_RESTORE, WrittenAt: t.At, Verified: true}
	if dst := p.GetDestination(); dst != nil {
		d.DestinationID, d.Provider, d.Lossiness = dst.GetDestinationId(), dst.GetProvider(), dst.GetKnownLossiness()
	}
	if t.Rendered != "" {
		// The destination keeps a form of its own: read back, it is not the bytes written.
		d.Verified = false
		if !slices.Contains(d.Lossiness, t.Rendered) {
			d.Lossiness = append(slices.Clone(d.Lossiness), t.Rendered)
		}
	}
	switch {
	case slices.Contains(o.GetActions(), svcv1.PlanAction_PLAN_ACTION_MOVE):
		d.Mode = svcv1.DestinationMode_DESTINATION_MODE_MOVE
	case slices.Contains(o.GetActions(), svcv1.PlanAction_PLAN_ACTION_COPY):
		d.Mode = svcv1.DestinationMode_DESTINATION_MODE_COPY
	}
	if _, err := c.assetManifest(ctx, tenant, o, providers.Object{ID: o.GetProviderObjectId(), SizeBytes: o.GetExpectedSizeBytes()}); err != nil {
		return err
	}
	err := c.store.Manifests().Update(ctx, tenant, t.AssetID, func(m *svcv1.Manifest) error {
		return manifest.Apply(m, &manifest.Update{ExecutionID: exeID, At: t.At, Destinations: []manifest.Destination{d}})
	})
	if err != nil {
		return fmt.Errorf("manifest of %s: %w", t.AssetID, err)
	}
	return nil
}

// quotaSnapshots are the sources' storage use as observed when the plan was built (before)
// and now (after).
func (s *Scope) quotaSnapshots(ctx context.Context, p *svcv1.Plan) (before, after []receipt.Quota) {
	for _, m := range p.GetSourceMarkers() {
		b := receipt.Quota{SourceID: m.GetSourceId(), Provider: m.GetProvider(), ObservedAt: m.GetObservedAt().AsTime()}
		if src, err := s.c.store.Sources().Get(ctx, s.key(), m.GetSourceId()); err == nil && src.GetQuota() != nil {
			used := src.GetQuota().GetUsedBytes()
			b.UsedBytes, b.LimitBytes = &used, src.GetQuota().LimitBytes
		}
		before = append(before, b)
		a := receipt.Quota{SourceID: m.GetSourceId(), Provider: m.GetProvider(), ObservedAt: s.c.now().UTC()}
		if quota, ok := s.quotaNow(ctx, m.GetSourceId()); ok {
			a.UsedBytes = &quota.UsedBytes
			if quota.LimitBytes > 0 {
				a.LimitBytes = &quota.LimitBytes
			}
		}
		after = append(after, a)
	}
	return before, after
}

// quotaTimeout bounds the provider call for a receipt's quota after the execution: the figure
// is best effort (null when the provider does not answer), never a reason to hold up a receipt.
const quotaTimeout = 10 * time.Second

// quotaNow asks a source's provider for its storage use now, for at most quotaTimeout and not
// past the start of Close (a provider that stopped answering must not hold up a shutdown).
func (s *Scope) quotaNow(ctx context.Context, sourceID string) (providers.Quota, bool) {
	ctx, cancel := context.WithTimeout(ctx, quotaTimeout)
	defer cancel()
	if s.c.closing != nil {
		defer context.AfterFunc(s.c.closing, cancel)()
	}
	prov, ref, err := s.OpenSource(ctx, sourceID)
	if err != nil {
		return providers.Quota{}, false
	}
	q, ok := providers.AsQuotaer(prov)
	if !ok {
		return providers.Quota{}, false
	}
	quota, err := q.Quota(ctx, ref)
	return quota, err == nil
}
