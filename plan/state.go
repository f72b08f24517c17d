package plan

import (
	"errors"
	"fmt"
	"slices"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// ErrInvalidState is returned when a plan's state does not allow an operation.
var ErrInvalidState = errors.New("invalid plan state")

type state = svcv1.PlanState

const (
	draft             = svcv1.PlanState_PLAN_STATE_DRAFT
	validated         = svcv1.PlanState_PLAN_STATE_VALIDATED
	authorized        = svcv1.PlanState_PLAN_STATE_AUTHORIZED
	committing        = svcv1.PlanState_PLAN_STATE_COMMITTING
	committed         = svcv1.PlanState_PLAN_STATE_COMMITTED
	executed          = svcv1.PlanState_PLAN_STATE_EXECUTED
	partiallyExecuted = svcv1.PlanState_PLAN_STATE_PARTIALLY_EXECUTED
	stale             = svcv1.PlanState_PLAN_STATE_STALE
	expired           = svcv1.PlanState_PLAN_STATE_EXPIRED
	rejected          = svcv1.PlanState_PLAN_STATE_REJECTED
	cancelled         = svcv1.PlanState_PLAN_STATE_CANCELLED
)

// transitions is the plan state machine, in one place. A plan is built validated (or
// rejected); a restore plan from the vault starts as a draft. Stale and expired plans need a
// new plan. Executed, partially executed, stale, expired, rejected and cancelled are final.
var transitions = map[state][]state{
	draft:      {validated, rejected, cancelled, stale, expired},
	validated:  {authorized, rejected, cancelled, stale, expired},
	authorized: {committing, cancelled, stale, expired},
	committing: {committed, executed, partiallyExecuted},
	committed:  {executed, partiallyExecuted},
}

// CanTransition reports whether a plan may go from one state to another.
func CanTransition(from, to svcv1.PlanState) bool {
	return slices.Contains(transitions[from], to)
}

// Transition moves p to state to, or returns an error wrapping ErrInvalidState.
func Transition(p *svcv1.Plan, to svcv1.PlanState) error {
	if !CanTransition(p.GetState(), to) {
		return fmt.Errorf("%w: a %s plan cannot become %s", ErrInvalidState, enumString(p.GetState()), enumString(to))
	}
	p.State = to
	return nil
}

// Final reports whether a state has no way out.
func Final(s svcv1.PlanState) bool { return len(transitions[s]) == 0 }
