package execute

import (
	"context"
	"errors"
	"fmt"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/providers"
)

// asset walks one asset from its journaled state to the end of its actions.
func (r *runner) asset(ctx context.Context, o *svcv1.PlanObject, index int64, last Transition) {
	state := discovered
	if last.AssetID != "" {
		state = last.To
	}
	resumedQueued := state == actionQueued
	// Work on an asset runs to the end of the step it is in, even when the execution is
	// cancelled: ctx is only consulted between steps.
	work := r.work
	step := func(to svcv1.StepState, name, status string, fill func(*Transition)) bool {
		t := Transition{From: state, To: to, Step: name, Status: status}
		if fill != nil {
			fill(&t)
		}
		if err := r.record(o, t); err != nil {
			r.e.opts.Logger.Error("journal write failed", "execution_id", r.exeID, "asset_id", o.GetAssetId(), "err", err)
			return false
		}
		state = to
		return true
	}
	// A step cut short by a shutdown is neither failed nor skipped: it is redone on resume.
	fail := func(name string, err error) {
		if !r.stopping() {
			step(failed, name, "failed", func(t *Transition) { t.Error = err.Error() })
		}
	}
	skip := func(name, reason string) {
		if !r.stopping() {
			step(skipped, name, "skipped", func(t *Transition) { t.Error = reason })
		}
	}

	if has(o, svcv1.PlanAction_PLAN_ACTION_RESTORE) {
		r.restore(ctx, o, state, step, fail, skip)
		return
	}
	if has(o, svcv1.PlanAction_PLAN_ACTION_UNSUBSCRIBE) {
		r.unsubscribe(ctx, o, state, last, step, fail, skip)
		return
	}
	if state == discovered {
		if !has(o, svcv1.PlanAction_PLAN_ACTION_PRESERVE) && !sourceAction(o) && !writesOut(o) {
			step(excluded, "exclude", "skipped", func(t *Transition) { t.Error = "nothing to do" })
			return
		}
		if !step(selected, "select", "ok", nil) {
			return
		}
	}
	src, ref, err := r.e.sources.Source(work, r.tenant, o.GetSourceId())
	if err != nil {
		fail("open", err)
		return
	}
	pace := r.e.limiter(providers.Name(enumName(o.GetProvider())))

	if has(o, svcv1.PlanAction_PLAN_ACTION_PRESERVE) && (state == selected || state == fetching || state == vaulting || state == verifying) {
		if ctx.Err() != nil {
			return
		}
		if !step(fetching, "fetch", "ok", nil) {
			return
		}
		var ref2 VaultRef
		limit := FetchLimit(o.GetExpectedSizeBytes())
		store := func(content *providers.Content) error {
			content, err := bounded(content, limit)
			if err != nil {
				return err
			}
			defer content.Body.Close()
			if !step(vaulting, "vault", "ok", nil) {
				return errJournal
			}
			ref2, err = r.e.vault.Store(work, r.tenant, Asset{ExecutionID: r.exeID, Object: o, Index: index, Content: content.Object}, content.Body, func() error {
				if !step(verifying, "verify", "ok", nil) {
					return errJournal
				}
				return nil
			})
			return err
		}
		req := providers.FetchRequest{SourceRef: ref, ObjectID: o.GetProviderObjectId(), ExpectedVersion: o.GetExpectedVersion(), MaxBytes: limit}
		// A small object of a provider that fetches in batches comes in a batch call first; a
		// deferred one, a transient failure of it or of the whole call, and a transient failure
		// of its vault write are done again alone, with the usual backoff.
		done := false
		var err error
		if b := r.fetchBatcher(o.GetSourceId(), src, pace); b != nil && o.GetExpectedSizeBytes() <= maxBatchFetchObject {
			out, whole := b.fetch(work, req, o.GetExpectedSizeBytes())
			switch {
			case whole || out.Deferred:
			case out.Err != nil:
				err, done = out.Err, !providers.IsRetryable(out.Err)
			default:
				err = store(batchContent(out))
				done = err == nil || !providers.IsRetryable(err)
			}
		}
		if !done {
			err = r.retry(work, pace, func() error {
				content, err := src.Fetch(work, req)
				if err != nil {
					return err
				}
				return store(content)
			})
		}
		switch {
		case errors.Is(err, errJournal):
			return
		case errors.Is(err, providers.ErrVersionMismatch):
			skip("fetch", "the object's version changed since the plan: "+err.Error())
			return
		case errors.Is(err, providers.ErrNotFound):
			skip("fetch", "the object is no longer at the source")
			return
		case errors.Is(err, providers.ErrTooLarge):
			fail("fetch", fmt.Errorf("larger than the plan allows (%d bytes planned): %w", o.GetExpectedSizeBytes(), err))
			return
		case err != nil:
			fail("vault", err)
			return
		}
		if o.ExpectedSha256 != nil && ref2.SHA256 != o.GetExpectedSha256() {
			skip("verify", "the content differs from the planned content (sha256 "+ref2.SHA256+", planned "+o.GetExpectedSha256()+"); the copy is kept, the source is left alone")
			return
		}
		if !step(vaultCommitted, "commit", "ok", func(t *Transition) {
			t.VaultID, t.VaultSHA256, t.Bytes = ref2.ID, ref2.SHA256, ref2.Size
		}) {
			return
		}
		r.bytes.Add(ref2.Size)
	}
	if writesOut(o) && (state == selected || state == vaultCommitted || state == restoreQueued) {
		if !r.writeOut(ctx, o, state, last, src, ref, step, fail, skip) {
			return
		}
		state = restored
	}
	if !sourceAction(o) {
		r.processed.Add(1)
		return
	}
	if state == trashed { // trashed before the interruption: only the bookkeeping is left
		step(reclaimPending, "reclaim", "ok", nil)
		r.processed.Add(1)
		return
	}
	// The guarantee: nothing is done at the source before the vault copy is committed, when
	// preservation is elected, and a move removes the original only once its copy at the
	// destination is written and verified.
	var ready bool
	switch {
	case state == actionQueued:
		ready = true
	case has(o, svcv1.PlanAction_PLAN_ACTION_MOVE):
		ready = state == restored
	case o.GetPreservationElected():
		ready = state == vaultCommitted
	default:
		ready = state == selected || state == vaultCommitted
	}
	if !ready {
		fail("trash", fmt.Errorf("refusing to remove %s from its source in state %s: its copy is not committed", o.GetAssetId(), enumName(state)))
		return
	}
	if state != actionQueued {
		if ctx.Err() != nil {
			return
		}
		if !step(actionQueued, "queue", "ok", nil) {
			return
		}
	}
	tr, ok := providers.AsTrasher(src)
	if !ok {
		fail("trash", fmt.Errorf("the provider cannot trash: %w", providers.ErrUnsupported))
		return
	}
	req := providers.ActionRequest{SourceRef: ref, ObjectID: o.GetProviderObjectId(), ExpectedVersion: o.GetExpectedVersion()}
	// mayBeTrashed: an earlier attempt may have trashed the object (before an interruption, or
	// in a batch call that failed as a whole), so its absence now means it was trashed.
	mayBeTrashed := resumedQueued
	var res providers.ActionResult
	done := false
	if b := r.trashBatcher(o.GetSourceId(), src, pace); b != nil {
		out, whole := b.trash(work, req)
		res, err = out.Result, out.Err
		// A transient failure of this object, or of the whole call, is retried alone below.
		done = !whole && (err == nil || !providers.IsRetryable(err))
		mayBeTrashed = mayBeTrashed || whole || (err != nil && providers.IsRetryable(err))
	}
	if !done {
		err = r.retry(work, pace, func() error {
			var err error
			res, err = tr.Trash(work, req)
			// A plugin that crashed or timed out with the call in flight, or a provider that
			// answered a transient error, may have trashed the object all the same.
			mayBeTrashed = mayBeTrashed || (err != nil && providers.IsRetryable(err))
			return err
		})
	}
	if err != nil && providers.IsRetryable(err) && mayBeTrashed {
		// Its outcome is still unknown: ask the source whether the object is there.
		err = r.stillThere(work, pace, src, req, err)
	}
	switch {
	case errors.Is(err, providers.ErrNotFound) && mayBeTrashed:
		// svc's own trash, whose answer was lost (a crash, a timeout, an interruption, a
		// transient error after the fact), or a removal meanwhile: either way it is gone from
		// the source after svc asked to trash it, and its copy is in the vault. It is recorded
		// as trashed, so that the receipt says so and an undo brings it back (from the vault:
		// its trash result id is unknown).
		res = providers.ActionResult{Restorable: false}
	case errors.Is(err, providers.ErrVersionMismatch):
		skip("trash", "the object's version changed since the plan; it was left at the source: "+err.Error())
		return
	case errors.Is(err, providers.ErrNotFound):
		skip("trash", "the object is no longer at the source")
		return
	case err != nil:
		fail("trash", err)
		return
	}
	if !step(trashed, "trash", "ok", func(t *Transition) {
		t.ResultID, t.Restorable, t.Bytes = res.ResultID, res.Restorable, o.GetExpectedSizeBytes()
	}) {
		return
	}
	step(reclaimPending, "reclaim", "ok", nil)
	r.processed.Add(1)
}

// stillThere resolves a trash whose outcome is unknown after its retries (the provider kept
// failing transiently): it asks the source for the object, at the planned version. It returns
// an error wrapping providers.ErrNotFound when the object is gone (the trash happened), and
// trashErr, with what the source said, otherwise (the object is still there, or the source
// cannot tell).
func (r *runner) stillThere(ctx context.Context, pace interface{ Wait(context.Context) error }, src providers.Provider, req providers.ActionRequest, trashErr error) error {
	err := r.retry(ctx, pace, func() error {
		c, err := src.Fetch(ctx, providers.FetchRequest{SourceRef: req.SourceRef, ObjectID: req.ObjectID, ExpectedVersion: req.ExpectedVersion, MaxBytes: 1})
		if err == nil {
			c.Body.Close()
		}
		if errors.Is(err, providers.ErrTooLarge) {
			return nil // it is there: its content was not wanted
		}
		return err
	})
	switch {
	case errors.Is(err, providers.ErrNotFound):
		return fmt.Errorf("the trash's outcome was unknown (%v) and the object is no longer at the source: %w", trashErr, err)
	case err == nil:
		return fmt.Errorf("%w; the object is still at the source", trashErr)
	}
	return fmt.Errorf("%w; whether the object is still at the source is unknown too: %v", trashErr, err)
}

var errJournal = errors.New("journal write failed")

// retry runs call, pacing provider calls and retrying transient failures with exponential
// backoff.
func (r *runner) retry(ctx context.Context, pace interface{ Wait(context.Context) error }, call func() error) error {
	delay := r.e.opts.Backoff
	var err error
	for attempt := 1; ; attempt++ {
		if err := pace.Wait(ctx); err != nil {
			return err
		}
		err = call()
		if err == nil || !providers.IsRetryable(err) || attempt >= r.e.opts.Retries {
			return err
		}
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return err
		}
		delay *= 2
	}
}
