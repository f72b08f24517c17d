package execute

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
)

// An execution that cannot end normally is abandoned: it ends failed, with its error recorded
// and a receipt of what it did where one can be made. Its Errors then hold, in this order:
//
//	"execution failed: <why>"                       (recorded first, durably: a restart ends it
//	                                                 again rather than running it again)
//	"receipt: lists only the N objects ..."         (a receipt of what was done was made)
//	"no receipt: <why>"                             (not even that receipt could be made)
const (
	failedPrefix    = "execution failed: "
	partialPrefix   = "receipt: lists only the "
	noReceiptPrefix = "no receipt: "
)

// finishAttempts is how many times the receipt of a finished execution is tried before the
// execution is abandoned; the attempts are Options.Backoff apart, doubled each time, so that a
// store that was busy for a moment does not fail an execution.
const finishAttempts = 3

// receipt has the finisher make an execution's receipt, trying again a few times.
func (e *Engine) receipt(ctx context.Context, tenant string, x *svcv1.Execution, p *svcv1.Plan, objects iter.Seq2[[]*svcv1.PlanObject, error],
	journal func(func(Transition) error) error) (Receipt, error) {
	var err error
	wait := e.opts.Backoff
	for i := range finishAttempts {
		if i > 0 {
			time.Sleep(wait)
			wait *= 2
		}
		var rc Receipt
		if rc, err = e.finish.Finish(ctx, tenant, proto.Clone(x).(*svcv1.Execution), p, objects, journal); err == nil {
			return rc, nil
		}
		e.opts.Logger.Warn("receipt failed", "execution_id", x.GetId(), "attempt", i+1, "err", err)
	}
	return Receipt{}, err
}

// failedBefore reports whether an execution was abandoned before (a restart came before it
// ended), and why.
func failedBefore(x *svcv1.Execution) (string, bool) {
	for _, s := range x.GetErrors() {
		if strings.HasPrefix(s, failedPrefix) {
			return s, true
		}
	}
	return "", false
}

// acted reports whether a step state means the execution did something to an asset that a
// receipt must tell: preserved it, acted on its source (or may have: the step was queued),
// or wrote it to a destination.
func acted(s svcv1.StepState) bool {
	switch s {
	case vaultCommitted, actionQueued, trashed, reclaimPending, svcv1.StepState_STEP_STATE_RECLAIM_CONFIRMED, restoreQueued, restored:
		return true
	}
	return false
}

// abandon ends an execution that cannot end normally (cause): failed, with cause recorded, the
// plan partially executed, and a receipt of what was done, made by the finisher from the plan
// objects the execution acted on (acted) rather than all of them, since an object it never
// touched may be what the full receipt failed on. When even that receipt cannot be made (the
// signing key or the store fails, say), the execution ends without one and says why
// ("no receipt: ..."); what it did stays in its journal and its assets' manifests.
//
// The failure is recorded (durably) before anything else, so that a restart in the middle
// comes back here instead of running the execution again into the same failure. abandon
// returns an error only when the store cannot record the end; the execution then stays
// running, and the next start tries again.
func (e *Engine) abandon(ctx context.Context, tenant, exeID string, cause error) error {
	reason := cause.Error()
	if !strings.HasPrefix(reason, failedPrefix) {
		reason = failedPrefix + reason
	}
	e.opts.Logger.Error("abandoning execution", "execution_id", exeID, "reason", reason)
	var x *svcv1.Execution
	err := e.store.UpdateExecution(ctx, tenant, exeID, func(stored *svcv1.Execution) error {
		if stored.GetFinishedAt() != nil || stored.GetReceiptId() != "" {
			return ErrFinished
		}
		if _, ok := failedBefore(stored); !ok {
			stored.Errors = append(stored.Errors, reason)
		}
		stored.UpdatedAt = timestamppb.New(e.now())
		x = proto.Clone(stored).(*svcv1.Execution)
		return nil
	})
	if errors.Is(err, ErrFinished) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("record the failure: %w", err)
	}

	if err := e.store.UpdatePlan(ctx, tenant, x.GetPlanId(), func(p *svcv1.Plan) error {
		if plan.Final(p.GetState()) || !plan.CanTransition(p.GetState(), svcv1.PlanState_PLAN_STATE_PARTIALLY_EXECUTED) {
			return nil
		}
		return plan.Transition(p, svcv1.PlanState_PLAN_STATE_PARTIALLY_EXECUTED)
	}); err != nil {
		e.opts.Logger.Error("abandoned execution: plan state", "execution_id", exeID, "err", err)
	}

	x.Status = svcv1.ExecutionStatus_EXECUTION_STATUS_FAILED
	rc, note, rerr := e.receiptOfWhatWasDone(ctx, tenant, x)
	if rerr != nil {
		note = noReceiptPrefix + rerr.Error()
		e.opts.Logger.Error("abandoned execution: no receipt", "execution_id", exeID, "err", rerr)
	}
	return e.store.EndExecution(ctx, tenant, exeID, func(stored *svcv1.Execution) error {
		if stored.GetFinishedAt() != nil || stored.GetReceiptId() != "" {
			return nil // ended already
		}
		stored.Status = svcv1.ExecutionStatus_EXECUTION_STATUS_FAILED
		stored.Errors = append(stored.Errors, note)
		now := e.now()
		stored.UpdatedAt = timestamppb.New(now)
		if rerr != nil {
			stored.FinishedAt = timestamppb.New(now)
			return nil
		}
		stored.ReceiptId = &rc.ID
		stored.FinishedAt = timestamppb.New(rc.FinishedAt)
		return nil
	})
}

// receiptOfWhatWasDone has the finisher make the receipt of an abandoned execution x: of the
// plan objects its journal shows it acted on. It returns the receipt and the note the
// execution and the receipt carry about it.
func (e *Engine) receiptOfWhatWasDone(ctx context.Context, tenant string, x *svcv1.Execution) (Receipt, string, error) {
	p, err := e.store.PlanHeader(ctx, tenant, x.GetPlanId())
	if err != nil {
		return Receipt{}, "", fmt.Errorf("read the plan: %w", err)
	}
	p.Objects = nil
	did := map[string]bool{}
	err = e.store.ScanJournal(ctx, tenant, x.GetId(), func(t Transition) error {
		if acted(t.To) {
			did[t.AssetID] = true
		}
		return nil
	})
	if err != nil {
		return Receipt{}, "", fmt.Errorf("read the journal: %w", err)
	}
	note := fmt.Sprintf("%s%d objects the execution acted on (preserved, trashed or removed, or written), as the full receipt could not be made", partialPrefix, len(did))
	x.Errors = append(x.Errors, note)
	objects := func(yield func([]*svcv1.PlanObject, error) bool) {
		for objs, err := range uniqueObjects(e.store.PlanObjects(ctx, tenant, x.GetPlanId())) {
			if err != nil {
				yield(nil, err)
				return
			}
			var keep []*svcv1.PlanObject
			for _, o := range objs {
				if did[o.GetAssetId()] {
					keep = append(keep, o)
				}
			}
			if len(keep) > 0 && !yield(keep, nil) {
				return
			}
		}
	}
	journal := func(fn func(Transition) error) error { return e.store.ScanJournal(ctx, tenant, x.GetId(), fn) }
	rc, err := e.receipt(ctx, tenant, x, p, objects, journal)
	if err != nil {
		return Receipt{}, "", err
	}
	return rc, note, nil
}
