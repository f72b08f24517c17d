package execute

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
	"svc.dev/svc/providers"
	"svc.dev/svc/wire"
)

// Step states, short.
const (
	discovered     = svcv1.StepState_STEP_STATE_DISCOVERED
	selected       = svcv1.StepState_STEP_STATE_SELECTED
	fetching       = svcv1.StepState_STEP_STATE_FETCHING
	vaulting       = svcv1.StepState_STEP_STATE_VAULTING
	verifying      = svcv1.StepState_STEP_STATE_VERIFYING
	vaultCommitted = svcv1.StepState_STEP_STATE_VAULT_COMMITTED
	actionQueued   = svcv1.StepState_STEP_STATE_SOURCE_ACTION_QUEUED
	trashed        = svcv1.StepState_STEP_STATE_SOURCE_TRASHED_OR_REMOVED
	reclaimPending = svcv1.StepState_STEP_STATE_RECLAIM_PENDING
	skipped        = svcv1.StepState_STEP_STATE_SKIPPED
	failed         = svcv1.StepState_STEP_STATE_FAILED
	excluded       = svcv1.StepState_STEP_STATE_EXCLUDED
	restoreQueued  = svcv1.StepState_STEP_STATE_RESTORE_QUEUED
	restored       = svcv1.StepState_STEP_STATE_RESTORED
)

func enumName(e protoreflect.Enum) string { return wire.EnumString(e.Descriptor(), e.Number()) }

func has(o *svcv1.PlanObject, a svcv1.PlanAction) bool { return slices.Contains(o.GetActions(), a) }

// sourceAction reports whether an object's actions change its source: a trash, or the
// removal of the original that ends a move.
func sourceAction(o *svcv1.PlanObject) bool {
	return has(o, svcv1.PlanAction_PLAN_ACTION_TRASH) || has(o, svcv1.PlanAction_PLAN_ACTION_MOVE)
}

// writesOut reports whether an object's actions write it to the plan's destination.
func writesOut(o *svcv1.PlanObject) bool {
	return has(o, svcv1.PlanAction_PLAN_ACTION_COPY) || has(o, svcv1.PlanAction_PLAN_ACTION_MOVE)
}

// done reports whether an asset in state s has nothing left to do. A copy, move or restore
// written to its destination is RESTORED; a move then removes the original.
func done(o *svcv1.PlanObject, s svcv1.StepState) bool {
	switch s {
	case skipped, failed, excluded, reclaimPending, svcv1.StepState_STEP_STATE_RECLAIM_CONFIRMED:
		return true
	case restored:
		return !has(o, svcv1.PlanAction_PLAN_ACTION_MOVE)
	case vaultCommitted:
		return !sourceAction(o) && !writesOut(o)
	}
	return false
}

// run executes (or resumes) one execution to its end. An execution that cannot get there (its
// receipt cannot be made, its plan cannot be read, ...) ends failed (abandon), unless the
// engine is shutting down: it then resumes on the next start.
func (e *Engine) run(ctx context.Context, tenant, exeID string) error {
	err := e.runToEnd(ctx, tenant, exeID)
	if err == nil || e.shuttingDown() {
		return err
	}
	if aerr := e.abandon(context.WithoutCancel(ctx), tenant, exeID, err); aerr != nil {
		return fmt.Errorf("%w; and it could not be ended: %w", err, aerr)
	}
	return err
}

// runToEnd is run's normal course: work through the plan, then finishRun.
func (e *Engine) runToEnd(ctx context.Context, tenant, exeID string) error {
	var x *svcv1.Execution
	err := e.store.UpdateExecution(ctx, tenant, exeID, func(stored *svcv1.Execution) error {
		if stored.GetStatus() == svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED {
			stored.Status = svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING
			stored.StartedAt = timestamppb.New(e.now())
		}
		stored.UpdatedAt = timestamppb.New(e.now())
		x = stored
		return nil
	})
	if err != nil {
		return err
	}
	if reason, ok := failedBefore(x); ok {
		// Abandoned before a restart: end it as it was going to end.
		return errors.New(reason)
	}
	p, err := e.store.PlanHeader(ctx, tenant, x.GetPlanId())
	if err != nil {
		return err
	}
	p.Objects = nil // read chunk by chunk (PlanObjects), never held whole
	cancelled := len(x.GetErrors()) > 0 && x.GetErrors()[len(x.GetErrors())-1] == "cancelled"

	work, stopWork := e.stepContext(ctx)
	defer stopWork()
	r := &runner{e: e, tenant: tenant, exeID: exeID, plan: p, tally: newTally(), work: work,
		journal: newJournal(e.store, tenant, exeID)}
	defer r.journal.close()
	// A resumed execution: each asset's latest transition, to continue from, and the counters.
	resume := map[string]Transition{}
	err = e.store.ScanJournal(ctx, tenant, exeID, func(t Transition) error {
		resume[t.AssetID] = t
		r.tally.add(t, nil)
		r.journal.recent.add(t)
		return nil
	})
	if err != nil {
		return err
	}
	if !cancelled {
		work := make(chan planned)
		mem := newBudget(e.opts.InFlightBytes)
		var wg sync.WaitGroup
		for range e.opts.Concurrency {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for w := range work {
					r.asset(ctx, w.o, w.index, resume[w.o.GetAssetId()]) // read only while workers run
					mem.release(inFlightBytes(w.o))
				}
			}()
		}
		stopProgress := r.progress(ctx)
		err := r.feed(ctx, work, mem)
		close(work)
		wg.Wait()
		stopProgress()
		if err != nil {
			return err
		}
		if e.shuttingDown() {
			return r.journal.close() // resumes on the next start
		}
		cancelled = ctx.Err() != nil
	}
	resume = nil
	return e.finishRun(context.WithoutCancel(ctx), r, cancelled)
}

// planned is a plan object handed to a worker, with its position in the plan.
type planned struct {
	o     *svcv1.PlanObject
	index int64
}

// feed hands the plan's objects that have something left to do to the workers, reading the
// plan a chunk at a time, within the memory budget of assets in flight.
func (r *runner) feed(ctx context.Context, work chan<- planned, mem *budget) error {
	index := int64(-1)
	for objs, err := range uniqueObjects(r.e.store.PlanObjects(ctx, r.tenant, r.plan.GetPlanId())) {
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		for _, o := range objs {
			index++
			r.mu.Lock()
			l, ok := r.tally.see(o)
			r.mu.Unlock()
			if ok && l.done {
				continue
			}
			for !mem.tryAcquire(inFlightBytes(o)) {
				select {
				case <-mem.freed:
				case <-ctx.Done():
					return nil
				}
			}
			select {
			case work <- planned{o, index}:
			case <-ctx.Done():
				mem.release(inFlightBytes(o))
				return nil
			}
		}
	}
	return nil
}

// finishRun skips what a cancel left undone, sets the counters, status and plan state, and has
// the receipt made. It reads the plan a chunk at a time and never reads the journal whole:
// what it needs of the journal was kept as it was recorded (tally, the recent steps).
func (e *Engine) finishRun(ctx context.Context, r *runner, cancelled bool) error {
	if err := r.journal.flush(); err != nil {
		return err
	}
	reason := "the execution ended before this asset was processed"
	if cancelled {
		reason = "cancelled before this asset was processed"
	}
	c := r.tally.totals()
	for objs, err := range uniqueObjects(e.store.PlanObjects(ctx, r.tenant, r.plan.GetPlanId())) {
		if err != nil {
			return err
		}
		for _, o := range objs {
			r.mu.Lock()
			l, ok := r.tally.see(o)
			r.mu.Unlock()
			if !ok || !l.done {
				from := discovered
				if ok {
					from = l.to
				}
				if err := r.record(o, Transition{From: from, To: skipped, Step: "skip", Status: "skipped", Error: reason}); err != nil {
					return err
				}
				r.mu.Lock()
				l, _ = r.tally.see(o)
				r.mu.Unlock()
			}
			c.add(l, o.GetAssetId())
		}
	}
	if err := r.journal.flush(); err != nil {
		return err
	}
	recent := r.journal.steps()
	// The counters and steps are stored now; the terminal status only with the receipt
	// (EndExecution), so that no one ever sees an execution ended without its receipt, and a
	// crash before the end resumes here (the execution is still running) to the same receipt.
	var x *svcv1.Execution
	err := e.store.UpdateExecution(ctx, r.tenant, r.exeID, func(stored *svcv1.Execution) error {
		c.apply(stored)
		stored.Steps = steps(recent)
		stored.UpdatedAt = timestamppb.New(e.now())
		x = proto.Clone(stored).(*svcv1.Execution)
		return nil
	})
	if err != nil {
		return err
	}
	end := func(x *svcv1.Execution) {
		c.apply(x)
		x.Steps = steps(recent)
		x.Status = c.status(cancelled)
		x.Errors = append(x.Errors, c.errors...)
	}
	end(x)
	objects := uniqueObjects(e.store.PlanObjects(ctx, r.tenant, r.plan.GetPlanId()))
	journal := func(fn func(Transition) error) error { return e.store.ScanJournal(ctx, r.tenant, r.exeID, fn) }
	rc, err := e.receipt(ctx, r.tenant, x, r.plan, objects, journal)
	if err != nil {
		return fmt.Errorf("receipt: %w", err)
	}
	// The plan ends once the receipt is made: an execution whose receipt fails is abandoned,
	// and its plan is then partially executed.
	final := svcv1.PlanState_PLAN_STATE_EXECUTED
	if x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
		final = svcv1.PlanState_PLAN_STATE_PARTIALLY_EXECUTED
	}
	err = e.store.UpdatePlan(ctx, r.tenant, r.plan.GetPlanId(), func(p *svcv1.Plan) error {
		if p.GetState() == svcv1.PlanState_PLAN_STATE_COMMITTING && c.preserved > 0 {
			if err := plan.Transition(p, svcv1.PlanState_PLAN_STATE_COMMITTED); err != nil {
				return err
			}
		}
		if plan.Final(p.GetState()) {
			return nil // a resumed finish: already done
		}
		return plan.Transition(p, final)
	})
	if err != nil {
		return err
	}
	return e.store.EndExecution(ctx, r.tenant, r.exeID, func(stored *svcv1.Execution) error {
		if stored.GetReceiptId() != "" {
			return nil // ended already
		}
		end(stored)
		stored.ReceiptId = &rc.ID
		stored.FinishedAt = timestamppb.New(rc.FinishedAt)
		stored.UpdatedAt = timestamppb.New(e.now())
		return nil
	})
}

// runner is one execution in progress.
type runner struct {
	e      *Engine
	tenant string
	exeID  string
	plan   *svcv1.Plan

	journal *journal
	// work is the context the assets' steps run in (stepContext): an execution's cancel does
	// not end it, a shutdown does.
	work  context.Context
	mu    sync.Mutex
	tally *tally // of what was recorded, for the counters shown while it runs

	processed, bytes atomic.Int64

	batchers map[string]*trashBatcher // by source id, under mu
	fetchers map[string]*fetchBatcher // by source id, under mu
}

// record journals an asset's transition. A transition that guards a side effect is durable
// when record returns; the others are written with the next group (journal.go).
func (r *runner) record(o *svcv1.PlanObject, t Transition) error {
	t.AssetID = o.GetAssetId()
	if t.At.IsZero() {
		t.At = r.e.now()
	}
	if err := r.journal.append(t, guards(t.To)); err != nil {
		return err
	}
	r.mu.Lock()
	r.tally.add(t, o)
	r.mu.Unlock()
	return nil
}

// guards reports whether a transition to s comes right before a side effect that a resumed
// execution must know may have happened: a source action (a trash, the removal that ends a
// move, an unsubscribe request) or a write to a destination (a copy, a move, a restore). Those
// are durable before the side effect. Every other step is redone after a crash that lost it,
// and redoing it is harmless: a fetch reads, a vault write goes into the same object.
func guards(s svcv1.StepState) bool { return s == actionQueued || s == restoreQueued }

// progress updates the execution's counters while it runs, for clients that poll it.
func (r *runner) progress(ctx context.Context) (stop func()) {
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				r.mu.Lock()
				c := r.tally.counts()
				r.mu.Unlock()
				r.e.store.UpdateExecution(ctx, r.tenant, r.exeID, func(x *svcv1.Execution) error {
					c.apply(x)
					x.UpdatedAt = timestamppb.New(r.e.now())
					return nil
				})
			}
		}
	}()
	return func() { close(quit); <-finished }
}

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

// writeOut writes an object to the plan's destination, for a copy or a move: from its vault
// copy when it was preserved (read and verified), else fetched from the source against the
// planned version. RESTORE_QUEUED, with the path, is journaled before the write; the write
// never replaces an object already at the path unless that object holds the same content (a
// write redone after a crash, or an earlier export); and the written object is read back from
// the destination and its SHA-256 checked before RESTORED is journaled. It reports whether the
// object is written (the caller's state is then RESTORED).
func (r *runner) writeOut(ctx context.Context, o *svcv1.PlanObject, state svcv1.StepState, last Transition, src providers.Provider, ref string,
	step func(svcv1.StepState, string, string, func(*Transition)) bool, fail func(string, error), skip func(string, string)) bool {
	work := r.work
	name, mode := "copy", providers.WriteCopy
	if has(o, svcv1.PlanAction_PLAN_ACTION_MOVE) {
		name, mode = "move", providers.WriteMove
	}
	dest := r.plan.GetDestination()
	if dest == nil {
		fail(name, errors.New("the plan has no destination"))
		return false
	}
	preserved := has(o, svcv1.PlanAction_PLAN_ACTION_PRESERVE)
	if preserved && state == selected {
		fail(name, fmt.Errorf("refusing to %s %s without its committed vault copy", name, o.GetAssetId()))
		return false
	}
	path := DestinationPath(dest.GetPathTemplate(), o)
	if state == restoreQueued && last.Path != "" {
		path = last.Path
	}
	if state != restoreQueued {
		if ctx.Err() != nil {
			return false
		}
		if !step(restoreQueued, name, "ok", func(t *Transition) { t.Path = path }) {
			return false
		}
	}
	dst, dref, err := r.e.sources.Source(work, r.tenant, dest.GetDestinationId())
	if err != nil {
		fail(name, fmt.Errorf("open the destination: %w", err))
		return false
	}
	w, ok := providers.AsWriter(dst)
	if !ok {
		fail(name, fmt.Errorf("the destination cannot be written to: %w", providers.ErrUnsupported))
		return false
	}
	var out writeResult
	err = r.retry(work, r.e.limiter(providers.Name(enumName(dest.GetProvider()))), func() error {
		var body io.ReadCloser
		var want string
		size := int64(-1)
		if preserved {
			rc, v, err := r.e.vault.Read(work, r.tenant, o.GetAssetId())
			if err != nil {
				return err
			}
			body, want, size, out.vault = rc, v.SHA256, v.Size, v
		} else {
			limit := FetchLimit(o.GetExpectedSizeBytes())
			c, err := src.Fetch(work, providers.FetchRequest{SourceRef: ref, ObjectID: o.GetProviderObjectId(), ExpectedVersion: o.GetExpectedVersion(), MaxBytes: limit})
			if err != nil {
				return err
			}
			if c, err = bounded(c, limit); err != nil {
				return err
			}
			body, want, size = c.Body, o.GetExpectedSha256(), c.Object.SizeBytes
		}
		defer body.Close()
		out, err = writeVerified(work, dst, w, providers.WriteRequest{SourceRef: dref, Path: path, SizeBytes: size, SHA256: want, Mode: mode}, body, out.vault)
		return err
	})
	switch {
	case errors.Is(err, providers.ErrVersionMismatch):
		skip(name, "the object's version changed since the plan: "+err.Error())
		return false
	case errors.Is(err, providers.ErrNotFound):
		skip(name, "the object is no longer at the source")
		return false
	case errors.Is(err, providers.ErrAlreadyExists):
		skip(name, "another object is already at "+path+" at the destination; it was left as it is")
		return false
	case errors.Is(err, providers.ErrInvalidData) && !preserved:
		skip(name, "the content differs from the planned content; nothing was left at the destination: "+err.Error())
		return false
	case err != nil:
		fail(name, err)
		return false
	}
	if !step(restored, name, "ok", func(t *Transition) {
		t.ResultID, t.Bytes, t.Path, t.VaultID, t.VaultSHA256 = out.obj.ID, out.size, path, out.vault.ID, out.vault.SHA256
	}) {
		return false
	}
	r.bytes.Add(out.size)
	return true
}

// writeResult is a verified write to a destination.
type writeResult struct {
	obj   providers.Object // as the destination reports it
	size  int64
	vault VaultRef // the vault copy it was written from, if any
}

// writeVerified writes body with w and reads the written object back from dst, checking that
// it holds exactly the bytes written (and req.SHA256, when set). When an object is already at
// the path, it is accepted only if it holds the same content; otherwise the error wraps
// providers.ErrAlreadyExists and nothing is changed.
func writeVerified(ctx context.Context, dst providers.Provider, w providers.Writer, req providers.WriteRequest, body io.Reader, v VaultRef) (writeResult, error) {
	h := sha256.New()
	cr := &countingReader{r: io.TeeReader(body, h)}
	obj, err := w.Write(ctx, req, cr)
	if errors.Is(err, providers.ErrAlreadyExists) {
		// Hash the rest, then compare with what is there.
		if _, cerr := io.Copy(io.Discard, cr); cerr != nil {
			return writeResult{}, cerr
		}
		sum := hex.EncodeToString(h.Sum(nil))
		there, n, rerr := readBack(ctx, dst, req.SourceRef, req.Path)
		if rerr != nil || there != sum || (req.SHA256 != "" && sum != req.SHA256) {
			return writeResult{}, err // someone else's object: leave it
		}
		return writeResult{obj: providers.Object{ID: req.Path, SizeBytes: n}, size: n, vault: v}, nil
	}
	if err != nil {
		return writeResult{}, err
	}
	sum := hex.EncodeToString(h.Sum(nil))
	if req.SHA256 != "" && sum != req.SHA256 {
		return writeResult{}, fmt.Errorf("wrote sha256 %s, want %s: %w", sum, req.SHA256, providers.ErrInvalidData)
	}
	id := cmp.Or(obj.ID, req.Path)
	there, n, err := readBack(ctx, dst, req.SourceRef, id)
	if err != nil {
		return writeResult{}, fmt.Errorf("read back %s from the destination: %w", id, err)
	}
	if there != sum || n != cr.n {
		return writeResult{}, fmt.Errorf("the destination holds sha256 %s (%d bytes) at %s, written %s (%d bytes): %w", there, n, id, sum, cr.n, providers.ErrInvalidData)
	}
	obj.ID = id
	return writeResult{obj: obj, size: n, vault: v}, nil
}

// readBack fetches an object and returns its SHA-256 and size.
func readBack(ctx context.Context, p providers.Provider, ref, id string) (string, int64, error) {
	c, err := p.Fetch(ctx, providers.FetchRequest{SourceRef: ref, ObjectID: id})
	if err != nil {
		return "", 0, err
	}
	defer c.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, c.Body)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

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
			SHA256: v.SHA256, Mode: providers.WriteRestore}, body)
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
