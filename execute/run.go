package execute

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
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
func (e *Engine) run(ctx, halt context.Context, c Claim, tenant, exeID string) error {
	err := e.runToEnd(ctx, halt, tenant, exeID)
	if err == nil || halted(halt) {
		return err
	}
	if c != nil {
		// Ending it failed is for the engine that holds the claim: a journal write refused by
		// the fence (the claim lost before the engine saw it) must not end an execution that
		// another engine is running.
		if rerr := c.Renew(context.WithoutCancel(ctx), e.opts.ClaimTTL); rerr != nil {
			return fmt.Errorf("%w (not ended here: %w)", err, rerr)
		}
	}
	if aerr := e.abandon(context.WithoutCancel(ctx), tenant, exeID, err); aerr != nil {
		return fmt.Errorf("%w; and it could not be ended: %w", err, aerr)
	}
	return err
}

// runToEnd is run's normal course: work through the plan, then finishRun.
func (e *Engine) runToEnd(ctx, halt context.Context, tenant, exeID string) error {
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

	work, stopWork := e.stepContext(ctx, halt)
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
		if halted(halt) {
			return r.journal.close() // resumes on the next start, or on the engine that took it over
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
