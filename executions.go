package svc

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"sync"
	"time"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
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
	principal := s.actorOr(nil).GetPrincipalId()
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
	if d := p.GetDestination(); d != nil {
		if _, err := s.Destination(ctx, d.GetDestinationId()); err != nil {
			return nil, err
		}
	}
	if err := s.allowsOperations(p); err != nil {
		return nil, err
	}
	if err := s.checkSources(ctx, p); err != nil {
		return nil, err
	}
	if s.c.replica != nil && s.c.leases != nil {
		// The replica erasing the tenant fences only its own engine: the account's record
		// fences the others (erasurefence.go).
		if erasing, err := s.c.erasing(ctx, s.key()); err != nil {
			return nil, err
		} else if erasing {
			return nil, execute.ErrFenced // as the erasing replica's own engine answers
		}
	}
	x, err := s.c.engine.Start(ctx, s.key(), planID, principal)
	if errors.Is(err, execute.ErrNotAuthorized) {
		return nil, refused(CodePlanStale, "The plan's hash is not the authorized one.")
	}
	return x, err
}

// Execution returns an execution of the tenant (refused, CodeForbidden, when the scope's
// grant does not reach every source of its plan).
func (s *Scope) Execution(ctx context.Context, id string) (*svcv1.Execution, error) {
	x, err := s.c.store.Executions().Get(ctx, s.key(), id)
	if err != nil {
		return nil, err
	}
	return x, s.reachesPlanOf(ctx, x.GetPlanId(), "execution")
}

// ExecutionFilter selects executions in ListExecutions; zero fields select all.
type ExecutionFilter struct {
	PlanID *string
	Status *svcv1.ExecutionStatus
}

// ListExecutions returns a page of the tenant's executions the scope reaches, newest first,
// after the execution id after ("": from the newest). Under a source grant each execution's
// plan is read in the list's own read. A list holds the executions without their steps (an
// execution keeps up to execute.MaxSteps of them): Execution has the most recent, StepsPage
// all of them a page at a time.
func (s *Scope) ListExecutions(ctx context.Context, f ExecutionFilter, after string, limit int) (storage.Page[*svcv1.Execution], error) {
	res, err := s.c.resources()
	if err != nil {
		return storage.Page[*svcv1.Execution]{}, err
	}
	page, err := res.ListExecutions(ctx, s.key(), after, limit, func(x *svcv1.Execution, plan func() (*svcv1.Plan, error)) bool {
		if (f.PlanID != nil && x.GetPlanId() != *f.PlanID) || (f.Status != nil && x.GetStatus() != *f.Status) {
			return false
		}
		if !s.access.limited() {
			return true
		}
		p, err := plan()
		return err == nil && s.reaches(p.GetSourceMarkers())
	})
	for i, x := range page.Items {
		page.Items[i] = withoutSteps(x) // a copy: a store may hand out records it keeps
	}
	return page, err
}

// withoutSteps returns a shallow copy of x whose steps are nil.
func withoutSteps(x *svcv1.Execution) *svcv1.Execution {
	c := &svcv1.Execution{Id: x.Id, PlanId: x.PlanId, PlanHash: x.PlanHash, PrincipalId: x.PrincipalId, Status: x.Status,
		Attempted: x.Attempted, Completed: x.Completed, Failed: x.Failed, BytesPreserved: x.BytesPreserved,
		BytesRemoved: x.BytesRemoved, BytesTransferred: x.BytesTransferred, MeasuredReclaimBytes: x.MeasuredReclaimBytes,
		Errors: x.Errors, Simulated: x.Simulated, ReceiptId: x.ReceiptId, StartedAt: x.StartedAt, FinishedAt: x.FinishedAt,
		CreatedAt: x.CreatedAt, UpdatedAt: x.UpdatedAt}
	return c
}

// StepsPage returns up to limit of an execution's step transitions recorded after journal
// position after (0: from the first), oldest first, and the position to continue from; more
// says whether steps recorded so far remain after the page. The journal holds every step,
// where an Execution holds only its most recent execute.MaxSteps.
func (s *Scope) StepsPage(ctx context.Context, id string, after uint64, limit int) (steps []execute.Transition, next uint64, more bool, err error) {
	if _, err := s.Execution(ctx, id); err != nil {
		return nil, 0, false, err
	}
	limit = max(limit, 1)
	// One entry past the page, to know whether there are more; next is the position of the
	// page's last entry.
	var positions []uint64
	err = s.c.store.Journal().ScanAfter(ctx, s.key(), id, after, func(p uint64, b []byte) error {
		if len(steps) == limit {
			more = true
			return errBatchFull
		}
		t, err := decodeTransition(b)
		if err != nil {
			return fmt.Errorf("journal entry at %d: %w", p, err)
		}
		steps, positions = append(steps, t), append(positions, p)
		return nil
	})
	if errors.Is(err, errBatchFull) {
		err = nil
	}
	if err != nil {
		return nil, 0, false, fmt.Errorf("execution %s steps: %w", id, err)
	}
	if more {
		next = positions[len(positions)-1]
	}
	return steps, next, more, nil
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

// ErrNotCompleted is returned, wrapped, by Wait when an execution ended without completing:
// partially_completed, failed or cancelled. Wait returns the execution with it: its counters
// and errors say what failed, and its receipt has every object's outcome.
var ErrNotCompleted = errors.New("the execution did not complete")

// Wait returns the execution once it has ended (with its receipt), or ctx's error. An
// execution that ended other than completed is returned with an error wrapping
// ErrNotCompleted.
func (s *Scope) Wait(ctx context.Context, id string) (*svcv1.Execution, error) {
	delay := 5 * time.Millisecond
	for {
		changed := s.c.changes.next() // before the read: a change after it is not missed
		x, err := s.Execution(ctx, id)
		if err != nil {
			return x, err
		}
		if Ended(x) {
			if x.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED {
				return x, fmt.Errorf("execution %s ended %s, %d of %d assets failed (receipt %s): %w",
					x.GetId(), enumWire(x.GetStatus()), x.GetFailed(), x.GetAttempted(), x.GetReceiptId(), ErrNotCompleted)
			}
			return x, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-changed:
		case <-time.After(delay):
		}
		delay = min(2*delay, maxWatchPoll)
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

// Watch yields an execution's step transitions as they are recorded, from the first, each
// once and in order, until the execution has ended and all its transitions were yielded (or
// ctx ends, yielded as the error). It reads only the entries recorded since its last look
// (storage.Journal.ScanAfter), up to watchBatch at a time, and looks again when this
// process's engine records a step or changes an execution (or after a poll interval, for a
// store shared with another process). A consumer that stops early just breaks.
func (s *Scope) Watch(ctx context.Context, id string) iter.Seq2[execute.Transition, error] {
	return func(yield func(execute.Transition, error) bool) {
		var pos uint64
		delay := 5 * time.Millisecond
		for {
			changed := s.c.changes.next()
			x, err := s.Execution(ctx, id) // before the journal: an ended execution's journal is complete
			if err != nil {
				yield(execute.Transition{}, err)
				return
			}
			for {
				ts, next, err := s.c.journalAfter(ctx, s.key(), id, pos, watchBatch)
				if err != nil {
					yield(execute.Transition{}, err)
					return
				}
				pos = next
				for _, t := range ts {
					if !yield(t, nil) {
						return
					}
				}
				if len(ts) < watchBatch {
					break
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
			case <-changed:
				delay = 5 * time.Millisecond
			case <-time.After(delay):
				delay = min(2*delay, maxWatchPoll)
			}
		}
	}
}

// watchBatch is how many journal entries Watch holds at a time; maxWatchPoll is the longest it
// waits between looks when nothing in this process tells it of a change.
const (
	watchBatch   = 256
	maxWatchPoll = 250 * time.Millisecond
)

// errBatchFull stops a journal scan once a batch is full.
var errBatchFull = errors.New("batch full")

// journalAfter decodes up to limit journal entries after position after, and returns the
// position of the last one (after itself when there is none). The entries are collected in
// the scan and handed out after it: the scan may hold a transaction, and a consumer may call
// the store.
func (c *core) journalAfter(ctx context.Context, tenant, exeID string, after uint64, limit int) ([]execute.Transition, uint64, error) {
	var out []execute.Transition
	pos := after
	err := c.store.Journal().ScanAfter(ctx, tenant, exeID, after, func(p uint64, b []byte) error {
		t, err := decodeTransition(b)
		if err != nil {
			return fmt.Errorf("journal entry at %d: %w", p, err)
		}
		out, pos = append(out, t), p
		if len(out) == limit {
			return errBatchFull
		}
		return nil
	})
	if errors.Is(err, errBatchFull) {
		err = nil
	}
	return out, pos, err
}

// changes tells waiters that an execution's journal or record changed in this process: next
// returns a channel closed at the next change.
type changes struct {
	mu sync.Mutex
	ch chan struct{}
}

func (n *changes) next() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch == nil {
		n.ch = make(chan struct{})
	}
	return n.ch
}

func (n *changes) notify() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ch != nil {
		close(n.ch)
		n.ch = nil
	}
}

// signalling is the store an Instance uses: the store it was given, whose journal appends and
// execution updates also tell Wait and Watch (changes).
type signalling struct {
	storage.Store
	changes *changes
}

func (s signalling) Journal() storage.Journal { return signallingJournal{s.Store.Journal(), s.changes} }

func (s signalling) Executions() storage.Executions {
	return signallingExecutions{s.Store.Executions(), s.changes}
}

type signallingJournal struct {
	storage.Journal
	changes *changes
}

func (j signallingJournal) Append(ctx context.Context, tenant, executionID string, entries [][]byte) error {
	err := j.Journal.Append(ctx, tenant, executionID, entries)
	if err == nil {
		j.changes.notify()
	}
	return err
}

type signallingExecutions struct {
	storage.Executions
	changes *changes
}

func (x signallingExecutions) Update(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error, also ...storage.Write) error {
	err := x.Executions.Update(ctx, tenant, id, fn, also...)
	if err == nil {
		x.changes.notify()
	}
	return err
}
