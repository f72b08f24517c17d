package server

import (
	"context"
	"net/http"
	"slices"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
)

// executePlan starts an authorized plan (POST /v1/plans/{id}/execute).
func (s *Server) executePlan(ctx context.Context, req *svcv1.ExecutePlanRequest) (*svcv1.Execution, error) {
	c := callerFrom(ctx)
	p, err := s.loadPlanHeader(ctx, req.GetId())
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
	x, err := s.core.Tenant(c.Tenant).Execute(ctx, p.PlanId, &svc.ExecuteOptions{Principal: c.Actor().GetPrincipalId()})
	if err != nil {
		return nil, err
	}
	return x, nil
}

func (s *Server) getExecution(ctx context.Context, req *svcv1.GetExecutionRequest) (*svcv1.Execution, error) {
	c := callerFrom(ctx)
	x, err := s.core.Tenant(c.Tenant).Execution(ctx, req.GetId())
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
	p, err := s.plans.Header(ctx, c.Tenant.String(), x.GetPlanId())
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
	return s.core.Tenant(c.Tenant).CancelExecution(ctx, x.Id)
}

func (s *Server) listExecutions(ctx context.Context, req *svcv1.ListExecutionsRequest) (*svcv1.ListExecutionsResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.ExecutionServiceListExecutionsProcedure, req)
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	tenant := c.Tenant.String()
	page, err := s.store.Resources().ListExecutions(ctx, tenant, after, limit, func(x *svcv1.Execution, plan func() (*svcv1.Plan, error)) bool {
		if (req.PlanId != nil && x.GetPlanId() != req.GetPlanId()) || (req.Status != nil && x.GetStatus() != req.GetStatus()) {
			return false
		}
		if c.Connection == nil {
			return true
		}
		p, err := plan()
		return err == nil && c.grantReaches(p.GetSourceMarkers())
	})
	if err != nil {
		return nil, err
	}
	return &svcv1.ListExecutionsResponse{Data: nonNil(page.Items), NextCursor: s.nextCursor(binding, page.Last)}, nil
}
