package svc

import (
	"context"
	"errors"
	"iter"
	"time"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
)

// ExecuteOptions are who executes.
type ExecuteOptions struct {
	// Principal is who starts the execution (default: the tenant's owner).
	Principal string
}

// Execute starts an authorized plan: it checks that the plan's sources have not moved since it
// was built (a moved one makes the plan stale: CodePlanStale) and that its hash is the
// authorized one, then runs it in the background. Wait or Watch follow it.
func (s *Scope) Execute(ctx context.Context, planID string, opts *ExecuteOptions) (*svcv1.Execution, error) {
	principal := s.t.Owner
	if opts != nil && opts.Principal != "" {
		principal = opts.Principal
	}
	p, err := s.PlanHeader(ctx, planID)
	if err != nil {
		return nil, err
	}
	if p.GetState() != svcv1.PlanState_PLAN_STATE_AUTHORIZED {
		return nil, refused(CodeInvalidState, "Only an authorized plan can be executed; this plan is "+enumWire(p.GetState())+".")
	}
	if err := s.checkSources(ctx, p); err != nil {
		return nil, err
	}
	x, err := s.c.engine.Start(ctx, s.key(), planID, principal)
	if errors.Is(err, execute.ErrNotAuthorized) {
		return nil, refused(CodePlanStale, "The plan's hash is not the authorized one.")
	}
	return x, err
}

// Execution returns an execution of the tenant.
func (s *Scope) Execution(ctx context.Context, id string) (*svcv1.Execution, error) {
	return s.c.store.Executions().Get(ctx, s.key(), id)
}

// CancelExecution asks a running execution to stop between steps (an execution that already
// ended: CodeInvalidState). What it already did stays done and is in its receipt.
func (s *Scope) CancelExecution(ctx context.Context, id string) (*svcv1.Execution, error) {
	x, err := s.Execution(ctx, id)
	if err != nil {
		return nil, err
	}
	err = s.c.engine.Cancel(ctx, s.key(), x.Id)
	if errors.Is(err, execute.ErrFinished) {
		return nil, refused(CodeInvalidState, "The execution already ended ("+enumWire(x.GetStatus())+").")
	}
	if err != nil {
		return nil, err
	}
	s.emit(ctx, EventExecutionCancelled, "/v1/executions", x.Id, map[string]any{"execution_id": x.Id, "plan_id": x.GetPlanId()})
	return s.Execution(ctx, x.Id)
}

// Ended reports whether an execution has ended: a terminal status, with its receipt.
func Ended(x *svcv1.Execution) bool {
	switch x.GetStatus() {
	case svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED, svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING,
		svcv1.ExecutionStatus_EXECUTION_STATUS_UNSPECIFIED:
		return false
	}
	return x.GetFinishedAt() != nil
}

// Wait returns the execution once it has ended (with its receipt), or ctx's error.
func (s *Scope) Wait(ctx context.Context, id string) (*svcv1.Execution, error) {
	delay := 5 * time.Millisecond
	for {
		x, err := s.Execution(ctx, id)
		if err != nil || Ended(x) {
			return x, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 250*time.Millisecond)
	}
}

// Steps returns an execution's journal so far: every step transition of every asset, in the
// order they were recorded.
func (s *Scope) Steps(ctx context.Context, id string) ([]execute.Transition, error) {
	if _, err := s.Execution(ctx, id); err != nil {
		return nil, err
	}
	return s.c.journal(ctx, s.key(), id)
}

// Watch yields an execution's step transitions as they are recorded, from the first, until
// the execution has ended and all its transitions were yielded (or ctx ends, yielded as the
// error). It polls the journal; a consumer that stops early just breaks.
func (s *Scope) Watch(ctx context.Context, id string) iter.Seq2[execute.Transition, error] {
	return func(yield func(execute.Transition, error) bool) {
		seen := 0
		delay := 5 * time.Millisecond
		for {
			x, err := s.Execution(ctx, id) // before the journal: an ended execution's journal is complete
			if err != nil {
				yield(execute.Transition{}, err)
				return
			}
			ts, err := s.c.journal(ctx, s.key(), id)
			if err != nil {
				yield(execute.Transition{}, err)
				return
			}
			for ; seen < len(ts); seen++ {
				if !yield(ts[seen], nil) {
					return
				}
				delay = 5 * time.Millisecond
			}
			if Ended(x) {
				return
			}
			select {
			case <-ctx.Done():
				yield(execute.Transition{}, ctx.Err())
				return
			case <-time.After(delay):
			}
			delay = min(2*delay, 250*time.Millisecond)
		}
	}
}
