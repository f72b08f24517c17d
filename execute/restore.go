package execute

import (
	"context"
	"errors"
	"fmt"
	"strings"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
	"svc.dev/svc/providers"
)

// unsubscribe asks the sender of a message to stop (RFC 8058 one-click): the message is fetched
// against its planned version for its List-Unsubscribe headers; without an https one-click
// target it is skipped (nothing is sent: mailto and web-page unsubscribes need a person).
// SOURCE_ACTION_QUEUED, with the target, is journaled before the request; RECLAIM_CONFIRMED
// once the sender answered 2xx (the spec's step states have none of their own for this; the
// sender confirming is the reclaim). A request redone after a crash is harmless: unsubscribing
// twice is unsubscribing. A simulated plan (test mode) sends nothing: the step says
// "simulated" and names the target.
func (r *runner) unsubscribe(ctx context.Context, o *svcv1.PlanObject, state svcv1.StepState, last Transition,
	step func(svcv1.StepState, string, string, func(*Transition)) bool, fail func(string, error), skip func(string, string)) {
	work := r.work
	if state == discovered {
		if !step(selected, "select", "ok", nil) {
			return
		}
		state = selected
	}
	target := last.ResultID
	if state == selected {
		src, ref, err := r.e.sources.Source(work, r.tenant, o.GetSourceId())
		if err != nil {
			fail("unsubscribe", err)
			return
		}
		var meta providers.Object
		err = r.retry(work, r.e.limiter(providers.Name(enumName(o.GetProvider()))), func() error {
			c, err := src.Fetch(work, providers.FetchRequest{SourceRef: ref, ObjectID: o.GetProviderObjectId(), ExpectedVersion: o.GetExpectedVersion()})
			if err != nil {
				return err
			}
			c.Body.Close()
			meta = c.Object
			return nil
		})
		switch {
		case errors.Is(err, providers.ErrVersionMismatch):
			skip("unsubscribe", "the message's version changed since the plan: "+err.Error())
			return
		case errors.Is(err, providers.ErrNotFound):
			skip("unsubscribe", "the message is no longer at the source")
			return
		case err != nil:
			fail("unsubscribe", err)
			return
		}
		var ok bool
		if meta.Message != nil {
			target, ok = plan.OneClickTarget(meta.Message.ListUnsubscribe, meta.Message.ListUnsubscribePost)
		}
		if !ok {
			skip("unsubscribe", "the message offers no one-click unsubscribe (RFC 8058: an https List-Unsubscribe with List-Unsubscribe-Post); nothing was sent")
			return
		}
		if r.plan.GetSimulated() {
			step(svcv1.StepState_STEP_STATE_RECLAIM_CONFIRMED, "unsubscribe", "simulated", func(t *Transition) { t.ResultID = target })
			r.processed.Add(1)
			return
		}
		if r.e.opts.Unsubscribe == nil {
			skip("unsubscribe", "this server does not send unsubscribe requests")
			return
		}
		if ctx.Err() != nil {
			return
		}
		if !step(actionQueued, "unsubscribe", "ok", func(t *Transition) { t.ResultID = target }) {
			return
		}
	}
	if r.e.opts.Unsubscribe == nil {
		skip("unsubscribe", "this server does not send unsubscribe requests")
		return
	}
	err := r.retry(work, unlimited{}, func() error { return r.e.opts.Unsubscribe(work, target) })
	if err != nil {
		fail("unsubscribe", err)
		return
	}
	step(svcv1.StepState_STEP_STATE_RECLAIM_CONFIRMED, "unsubscribe", "ok", func(t *Transition) { t.ResultID = target })
	r.processed.Add(1)
}

// unlimited paces nothing: requests to senders go to many hosts, not one provider.
type unlimited struct{}

func (unlimited) Wait(context.Context) error { return nil }

// restore writes an asset's verified vault copy back to its source, or to the plan's
// destination when it has one (the plan's object says where: the path is its provider object
// id). RESTORE_QUEUED is journaled before the write; a write repeated after a crash finds the
// object already there and stops.
func (r *runner) restore(ctx context.Context, o *svcv1.PlanObject, state svcv1.StepState,
	step func(svcv1.StepState, string, string, func(*Transition)) bool, fail func(string, error), skip func(string, string)) {
	work := r.work
	if state == discovered {
		if !step(selected, "select", "ok", nil) {
			return
		}
		state = selected
	}
	resumed := state == restoreQueued
	if state != restoreQueued {
		if ctx.Err() != nil {
			return
		}
		if !step(restoreQueued, "queue", "ok", func(t *Transition) { t.Path = o.GetProviderObjectId() }) {
			return
		}
	}
	target, provider := o.GetSourceId(), o.GetProvider()
	if d := r.plan.GetDestination(); d != nil {
		target, provider = d.GetDestinationId(), d.GetProvider()
	}
	src, ref, err := r.e.sources.Source(work, r.tenant, target)
	if err != nil {
		fail("restore", err)
		return
	}
	if result, ok := UntrashResult(o); ok {
		// An object with both (the trash's result id and a vault copy, planned with its
		// SHA-256) is restored from the verified copy where the provider can write, and
		// untrashed where it cannot (a provider with trash and untrash but no write).
		_, writes := providers.AsWriter(src)
		if !writes || o.ExpectedSha256 == nil || r.plan.GetDestination() != nil {
			r.untrash(work, o, src, ref, result, step, fail)
			return
		}
	}
	w, ok := providers.AsWriter(src)
	if !ok {
		fail("restore", fmt.Errorf("the provider cannot write: %w", providers.ErrUnsupported))
		return
	}
	var meta map[string]string
	if result, ok := UntrashResult(o); ok && r.plan.GetDestination() == nil {
		// Where the trash took it from, for a provider whose ids do not say.
		meta = map[string]string{providers.MetaTrashResult: result}
	}
	var written providers.Object
	var vref VaultRef
	err = r.retry(work, r.e.limiter(providers.Name(enumName(provider))), func() error {
		body, v, err := r.e.vault.Read(work, r.tenant, o.GetAssetId())
		if err != nil {
			return err
		}
		defer body.Close()
		vref = v
		written, err = w.Write(work, providers.WriteRequest{SourceRef: ref, Path: o.GetProviderObjectId(), SizeBytes: v.Size,
			SHA256: v.SHA256, Mode: providers.WriteRestore, Metadata: meta}, body)
		return err
	})
	switch {
	case errors.Is(err, providers.ErrAlreadyExists) && resumed:
		// Written before the interruption: the content at the path is ours (checked below).
		written = providers.Object{ID: o.GetProviderObjectId()}
	case errors.Is(err, providers.ErrAlreadyExists):
		skip("restore", "an object already exists at "+o.GetProviderObjectId()+"; restore it to another path")
		return
	case err != nil:
		fail("restore", err)
		return
	}
	step(restored, "restore", "ok", func(t *Transition) {
		t.ResultID, t.Bytes, t.VaultID, t.VaultSHA256, t.Path = written.ID, vref.Size, vref.ID, vref.SHA256, o.GetProviderObjectId()
	})
	r.processed.Add(1)
}

// untrashPrefix marks a restore by untrash: the plan object's expectedVersion is this prefix
// and the provider's trash result id (the receipt's providerResultId), and its
// providerObjectId the original object.
const untrashPrefix = "untrash:"

// UntrashVersion is the expectedVersion of a plan object restored by untrashing it at its
// provider, from the result id its trash returned. A restore object may carry it together
// with its vault copy (expectedSha256): the engine then writes the vault copy back where the
// provider can write, and untrashes where it cannot.
func UntrashVersion(resultID string) string { return untrashPrefix + resultID }

// UntrashResult reports whether a restore object is restored by untrashing it at the provider,
// and the trash result id to untrash.
func UntrashResult(o *svcv1.PlanObject) (string, bool) {
	if !has(o, svcv1.PlanAction_PLAN_ACTION_RESTORE) {
		return "", false
	}
	return strings.CutPrefix(o.GetExpectedVersion(), untrashPrefix)
}

// untrash brings a trashed object back at its provider. Untrash is idempotent (a redo after a
// crash finds it back), so RESTORE_QUEUED before and RESTORED after are all it needs.
func (r *runner) untrash(ctx context.Context, o *svcv1.PlanObject, src providers.Provider, ref, result string,
	step func(svcv1.StepState, string, string, func(*Transition)) bool, fail func(string, error)) {
	u, ok := providers.AsUntrasher(src)
	if !ok {
		fail("untrash", fmt.Errorf("the provider cannot untrash: %w", providers.ErrUnsupported))
		return
	}
	var back providers.Object
	err := r.retry(ctx, r.e.limiter(providers.Name(enumName(o.GetProvider()))), func() error {
		var err error
		back, err = u.Untrash(ctx, providers.UntrashRequest{SourceRef: ref, ObjectID: o.GetProviderObjectId(), ResultID: result})
		return err
	})
	if err != nil {
		fail("untrash", err)
		return
	}
	step(restored, "untrash", "ok", func(t *Transition) {
		t.ResultID, t.Bytes, t.Path = back.ID, back.SizeBytes, o.GetProviderObjectId()
	})
	r.processed.Add(1)
}
