package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/store"
)

// execStore is the engine's storage on bbolt: executions and plans in their collections, the
// journal in a log whose writes are group-committed.
type execStore struct{ s *Server }

var _ execute.Store = execStore{}

const journalLog = "journal"

// BeginExecution moves the plan (fn), stores the queued execution and its
// svc.execution.started event in one transaction.
func (x execStore) BeginExecution(ctx context.Context, tenant, planID string, fn func(*svcv1.Plan) error, e *svcv1.Execution) error {
	t, err := parseTenant(tenant)
	if err != nil {
		return err
	}
	put := store.PutExtra(x.s.executions, tenant, e.Id, e) // e is complete once fn ran
	pe, err := x.s.prepareEvent(context.WithoutCancel(ctx), t, id.New("evt"), x.s.cfg.Now(), evExecutionStarted, "/v1/executions", e.Id,
		map[string]any{"execution_id": e.Id, "plan_id": planID})
	if err != nil {
		return err
	}
	if err := x.s.plans.updateWith(ctx, tenant, planID, fn, put, pe.extra); err != nil {
		return err
	}
	x.s.wake(pe)
	return nil
}

func (x execStore) UpdateExecution(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error) error {
	return x.s.executions.Update(ctx, tenant, id, fn)
}

// EndExecution ends an execution and stores the events announcing it (with its status,
// receipt_id and finished_at) in the same transaction: an event or webhook about the end is
// never seen before the execution shows it, nor the reverse.
func (x execStore) EndExecution(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error) error {
	t, err := parseTenant(tenant)
	if err != nil {
		return err
	}
	// The events are prepared (which reads the store) before the transaction, from what fn
	// makes of the execution as stored now; fn runs again inside it.
	cur, err := x.s.executions.Get(ctx, tenant, id)
	if err != nil {
		return err
	}
	end := proto.Clone(cur).(*svcv1.Execution)
	if err := fn(end); err != nil {
		return err
	}
	var extras []store.Extra
	var events []preparedEvent
	if cur.GetReceiptId() == "" && end.GetReceiptId() != "" {
		p, err := x.s.plans.header(ctx, tenant, end.GetPlanId())
		if err != nil {
			return err
		}
		if events, err = x.s.endEvents(context.WithoutCancel(ctx), t, end, p); err != nil {
			return err
		}
		for _, pe := range events {
			extras = append(extras, pe.extra)
		}
	}
	if err := x.s.executions.UpdateWith(ctx, tenant, id, fn, extras...); err != nil {
		return err
	}
	for _, pe := range events {
		x.s.wake(pe)
	}
	return nil
}

func (x execStore) Unfinished(ctx context.Context) ([][2]string, error) {
	var out [][2]string
	err := x.s.executions.ScanAll(ctx, func(tenant, id string, e *svcv1.Execution) bool {
		if s := e.GetStatus(); s == svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED || s == svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING ||
			(e.GetFinishedAt() == nil && e.GetStatus() != svcv1.ExecutionStatus_EXECUTION_STATUS_UNSPECIFIED) {
			out = append(out, [2]string{tenant, id})
		}
		return true
	})
	return out, err
}

func (x execStore) PlanHeader(ctx context.Context, tenant, id string) (*svcv1.Plan, error) {
	return x.s.plans.header(ctx, tenant, id)
}

// PlanObjects yields the plan's chunks as stored, or, for a plan stored whole (before plans
// were split), its objects in chunks of the same size.
func (x execStore) PlanObjects(ctx context.Context, tenant, id string) iter.Seq2[[]*svcv1.PlanObject, error] {
	return func(yield func([]*svcv1.PlanObject, error) bool) {
		h, err := x.s.plans.header(ctx, tenant, id)
		if err != nil {
			yield(nil, err)
			return
		}
		for objs := h.GetObjects(); len(objs) > 0; {
			n := min(planChunk, len(objs))
			if !yield(objs[:n], nil) {
				return
			}
			objs = objs[n:]
		}
		if len(h.GetObjects()) > 0 {
			return
		}
		for objs, err := range x.s.plans.objects(ctx, tenant, id) {
			if !yield(objs, err) || err != nil {
				return
			}
		}
	}
}

// UpdatePlan changes the plan's header only: the engine changes its state, never its objects,
// and reading them all for that would cost a large plan's size in memory.
func (x execStore) UpdatePlan(ctx context.Context, tenant, id string, fn func(*svcv1.Plan) error) error {
	return x.s.plans.headers.Update(ctx, tenant, id, fn)
}

// Record appends an execution's group of transitions in one transaction, group-committed with
// the other executions' groups and the vault's records.
func (x execStore) Record(ctx context.Context, tenant, exeID string, ts ...execute.Transition) error {
	vals := make([][]byte, len(ts))
	for i, t := range ts {
		b, err := json.Marshal(t)
		if err != nil {
			return err
		}
		vals[i] = b
	}
	if err := x.s.db.AppendLogs(ctx, journalLog, tenant+"/"+exeID, vals); err != nil {
		return err
	}
	for range ts {
		crashPoint()
	}
	return nil
}

// crashAfter, from SVC_CRASH_AFTER_JOURNAL=N, kills the process with SIGKILL right after the
// group holding the N-th journal entry is durable: the crash tests use it to stop the binary
// exactly at step boundaries. Unset (always, outside those tests) it does nothing.
var (
	crashAfter   = func() int64 { n, _ := strconv.ParseInt(os.Getenv("SVC_CRASH_AFTER_JOURNAL"), 10, 64); return n }()
	journalCount atomic.Int64
)

func crashPoint() {
	if crashAfter > 0 && journalCount.Add(1) == crashAfter {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// ScanJournal decodes an execution's journal entry by entry, in one read transaction.
func (x execStore) ScanJournal(ctx context.Context, tenant, exeID string, fn func(execute.Transition) error) error {
	i := 0
	return x.s.db.ScanLog(ctx, journalLog, tenant+"/"+exeID, func(b []byte) error {
		var t execute.Transition
		if err := json.Unmarshal(b, &t); err != nil {
			return fmt.Errorf("journal entry %d: %w", i, err)
		}
		i++
		return fn(t)
	})
}

func (x execStore) Journal(ctx context.Context, tenant, exeID string) ([]execute.Transition, error) {
	raw, err := x.s.db.ReadLog(ctx, journalLog, tenant+"/"+exeID)
	if err != nil {
		return nil, err
	}
	out := make([]execute.Transition, len(raw))
	for i, b := range raw {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			return nil, fmt.Errorf("journal entry %d: %w", i, err)
		}
	}
	return out, nil
}

// engineSources opens sources for the engine.
type engineSources struct{ s *Server }

func (e engineSources) Source(ctx context.Context, tenant, sourceID string) (providers.Provider, string, error) {
	t, err := parseTenant(tenant)
	if err != nil {
		return nil, "", err
	}
	if id.Prefix(sourceID) == "dst" { // a plan's destination
		_, p, ref, err := e.s.openDestination(ctx, t, sourceID)
		return p, ref, err
	}
	return e.s.openSource(ctx, t, sourceID)
}

func parseTenant(s string) (platform.Tenant, error) {
	for _, m := range []platform.Mode{platform.ModeTest, platform.ModeLive} {
		if owner, ok := cutPrefix(s, string(m)+":"); ok {
			return platform.Tenant{Owner: owner, Mode: m}, nil
		}
	}
	return platform.Tenant{}, fmt.Errorf("bad tenant %q", s)
}

func cutPrefix(s, p string) (string, bool) {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):], true
	}
	return "", false
}

// executePlan starts an authorized plan (POST /v1/plans/{id}/execute).
func (s *Server) executePlan(ctx context.Context, req *svcv1.ExecutePlanRequest) (*svcv1.Execution, error) {
	c := callerFrom(ctx)
	p, err := s.loadPlan(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if p.GetState() != svcv1.PlanState_PLAN_STATE_AUTHORIZED {
		return nil, newProblem(http.StatusConflict, codeInvalidState, "Only an authorized plan can be executed; this plan is "+enumWire(p.GetState())+".")
	}
	if d := p.GetDestination(); d != nil {
		if _, err := s.grantedDestination(ctx, c, d.GetDestinationId()); err != nil {
			return nil, err
		}
	}
	if g := c.grant(); g.OperationClasses != nil {
		for _, op := range p.GetOperationClasses() {
			if !slices.Contains(g.OperationClasses, enumWire(op)) {
				return nil, newProblem(http.StatusForbidden, codeForbidden, "The key's scopes and the connection's grant do not include "+enumWire(op)+".")
			}
		}
	}
	for _, m := range p.GetSourceMarkers() {
		moved, err := s.sourceMoved(ctx, c.Tenant, m)
		if err != nil {
			return nil, err
		}
		if moved {
			return nil, s.markStale(ctx, p, m.GetSourceId())
		}
	}
	x, err := s.engine.Start(ctx, c.Tenant.String(), p.PlanId, c.Actor().GetPrincipalId())
	if errors.Is(err, execute.ErrNotAuthorized) {
		return nil, newProblem(http.StatusConflict, codePlanStale, "The plan's hash is not the authorized one.")
	}
	if err != nil {
		return nil, err
	}
	return x, nil
}

func (s *Server) getExecution(ctx context.Context, req *svcv1.GetExecutionRequest) (*svcv1.Execution, error) {
	c := callerFrom(ctx)
	x, err := s.executions.Get(ctx, c.Tenant.String(), req.GetId())
	if err != nil {
		return nil, err
	}
	return x, s.executionInGrant(ctx, c, x)
}

// executionInGrant answers 403 when a connection's grant does not reach the plan's sources.
func (s *Server) executionInGrant(ctx context.Context, c *Caller, x *svcv1.Execution) error {
	if c.Connection == nil {
		return nil
	}
	p, err := s.plans.header(ctx, c.Tenant.String(), x.GetPlanId())
	if err != nil {
		return err
	}
	if !c.grantReaches(p.GetSourceMarkers()) {
		return newProblem(http.StatusForbidden, codeForbidden, "The connection's grant does not include every source of this execution.")
	}
	return nil
}

func (s *Server) cancelExecution(ctx context.Context, req *svcv1.CancelExecutionRequest) (*svcv1.Execution, error) {
	c := callerFrom(ctx)
	x, err := s.getExecution(ctx, &svcv1.GetExecutionRequest{Id: req.GetId()})
	if err != nil {
		return nil, err
	}
	err = s.engine.Cancel(ctx, c.Tenant.String(), x.Id)
	if errors.Is(err, execute.ErrFinished) {
		return nil, newProblem(http.StatusConflict, codeInvalidState, "The execution already ended ("+enumWire(x.GetStatus())+").")
	}
	if err != nil {
		return nil, err
	}
	s.emit(ctx, c.Tenant, evExecutionCancelled, "/v1/executions", x.Id, map[string]any{"execution_id": x.Id, "plan_id": x.GetPlanId()})
	return s.executions.Get(ctx, c.Tenant.String(), x.Id)
}

func (s *Server) listExecutions(ctx context.Context, req *svcv1.ListExecutionsRequest) (*svcv1.ListExecutionsResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.ExecutionServiceListExecutionsProcedure, req)
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	tenant := c.Tenant.String()
	page, err := s.executions.ListIn(ctx, tenant, after, limit, func(r *store.Reader, x *svcv1.Execution) bool {
		if (req.PlanId != nil && x.GetPlanId() != req.GetPlanId()) || (req.Status != nil && x.GetStatus() != req.GetStatus()) {
			return false
		}
		if c.Connection == nil {
			return true
		}
		p, err := store.GetIn(r, s.plans.headers, tenant, x.GetPlanId()) // in this transaction: never another
		return err == nil && c.grantReaches(p.GetSourceMarkers())
	})
	if err != nil {
		return nil, err
	}
	return &svcv1.ListExecutionsResponse{Data: nonNil(page.Items), NextCursor: s.nextCursor(binding, page.Last)}, nil
}
