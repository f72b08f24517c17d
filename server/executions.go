package server

import (
	"context"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
)

// executePlan starts an authorized plan (POST /v1/plans/{id}/execute).
func (s *Server) executePlan(ctx context.Context, req *svcv1.ExecutePlanRequest) (*svcv1.Execution, error) {
	return s.scope(callerFrom(ctx)).Execute(ctx, req.GetId(), nil)
}

func (s *Server) getExecution(ctx context.Context, req *svcv1.GetExecutionRequest) (*svcv1.Execution, error) {
	return s.scope(callerFrom(ctx)).Execution(ctx, req.GetId())
}

func (s *Server) cancelExecution(ctx context.Context, req *svcv1.CancelExecutionRequest) (*svcv1.Execution, error) {
	return s.scope(callerFrom(ctx)).CancelExecution(ctx, req.GetId())
}

func (s *Server) listExecutions(ctx context.Context, req *svcv1.ListExecutionsRequest) (*svcv1.ListExecutionsResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.ExecutionServiceListExecutionsProcedure, req)
	if err != nil {
		return nil, err
	}
	page, err := s.scope(callerFrom(ctx)).ListExecutions(ctx, svc.ExecutionFilter{PlanID: req.PlanId, Status: req.Status}, after, limit)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListExecutionsResponse{Data: nonNil(page.Items), NextCursor: s.nextCursor(binding, page.Last)}, nil
}
