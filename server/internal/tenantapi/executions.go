package tenantapi

import (
	"context"
	"fmt"
	"strconv"

	"google.golang.org/protobuf/types/known/timestamppb"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/server/internal/rpc"
)

// executePlan starts an authorized plan (POST /v1/plans/{id}/execute).
func (a *API) executePlan(ctx context.Context, req *svcv1.ExecutePlanRequest) (*svcv1.Execution, error) {
	return a.Scope(rpc.From(ctx)).Execute(ctx, req.GetId(), nil)
}

func (a *API) getExecution(ctx context.Context, req *svcv1.GetExecutionRequest) (*svcv1.Execution, error) {
	return a.Scope(rpc.From(ctx)).Execution(ctx, req.GetId())
}

func (a *API) cancelExecution(ctx context.Context, req *svcv1.CancelExecutionRequest) (*svcv1.Execution, error) {
	return a.Scope(rpc.From(ctx)).CancelExecution(ctx, req.GetId())
}

func (a *API) listExecutions(ctx context.Context, req *svcv1.ListExecutionsRequest) (*svcv1.ListExecutionsResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.ExecutionServiceListExecutionsProcedure, req)
	if err != nil {
		return nil, err
	}
	page, err := a.Scope(rpc.From(ctx)).ListExecutions(ctx, svc.ExecutionFilter{PlanID: req.PlanId, Status: req.Status}, after, limit)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListExecutionsResponse{Data: rpc.NonNil(page.Items), NextCursor: a.Pager.Next(binding, page.Last)}, nil
}

// listExecutionSteps pages through an execution's journal (GET /v1/executions/{id}/steps): the
// cursor seals the journal position of a page's last step.
func (a *API) listExecutionSteps(ctx context.Context, req *svcv1.ListExecutionStepsRequest) (*svcv1.ListExecutionStepsResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.ExecutionServiceListExecutionStepsProcedure, req)
	if err != nil {
		return nil, err
	}
	var pos uint64
	if after != "" {
		if pos, err = strconv.ParseUint(after, 10, 64); err != nil {
			return nil, fmt.Errorf("steps cursor: %w", err) // sealed by the server: never a client's text
		}
	}
	ts, next, more, err := a.Scope(rpc.From(ctx)).StepsPage(ctx, req.GetId(), pos, limit)
	if err != nil {
		return nil, err
	}
	steps := make([]*svcv1.ExecutionStep, len(ts))
	for i, t := range ts {
		from, to := t.From, t.To
		steps[i] = &svcv1.ExecutionStep{AssetId: t.AssetID, Step: t.Step, Status: t.Status, FromState: &from, ToState: &to, At: timestamppb.New(t.At)}
	}
	last := ""
	if more {
		last = strconv.FormatUint(next, 10)
	}
	return &svcv1.ListExecutionStepsResponse{Data: steps, NextCursor: a.Pager.Next(binding, last)}, nil
}
