package insightapi

import (
	"context"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
)

func (a *API) listMeters(ctx context.Context, req *svcv1.ListMetersRequest) (*svcv1.ListMetersResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.IntelServiceListMetersProcedure, req)
	if err != nil {
		return nil, err
	}
	page, err := a.Scope(rpc.From(ctx)).ListMeters(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListMetersResponse{Data: rpc.NonNil(page.Items), NextCursor: a.Pager.Next(binding, page.Last)}, nil
}

func (a *API) getMeter(ctx context.Context, req *svcv1.GetMeterRequest) (*svcv1.Meter, error) {
	return a.Scope(rpc.From(ctx)).Meter(ctx, req.GetId())
}

// actOnMeter records an action on a meter (spec #4); a live key's action is an intelligence
// operation, metered.
func (a *API) actOnMeter(ctx context.Context, req *svcv1.ActOnMeterRequest) (*svcv1.MeterActionResult, error) {
	c := rpc.From(ctx)
	m, err := a.Scope(c).ActOnMeter(ctx, req.GetId(), req.GetAction(), req.LimitCents)
	if err != nil {
		return nil, err
	}
	metered := c.Key != nil && c.Key.Mode == platform.ModeLive
	if metered {
		a.Meter.Add(c.Key.OrgID, c.Key.AppID, platform.MeterIntelligenceOps, 1)
	}
	return &svcv1.MeterActionResult{Meter: m, Metered: metered}, nil
}

func (a *API) listTrials(ctx context.Context, req *svcv1.ListTrialsRequest) (*svcv1.ListTrialsResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.IntelServiceListTrialsProcedure, req)
	if err != nil {
		return nil, err
	}
	page, err := a.Scope(rpc.From(ctx)).ListTrials(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListTrialsResponse{Data: rpc.NonNil(page.Items), NextCursor: a.Pager.Next(binding, page.Last)}, nil
}

func (a *API) getTrial(ctx context.Context, req *svcv1.GetTrialRequest) (*svcv1.Trial, error) {
	return a.Scope(rpc.From(ctx)).Trial(ctx, req.GetId())
}

// decideTrial records keep, stop or remind on a trial (spec #20); stop answers the plan_id of
// its plan of intent unsubscribe.
func (a *API) decideTrial(ctx context.Context, req *svcv1.DecideTrialRequest) (*svcv1.TrialDecisionResult, error) {
	o, err := a.Scope(rpc.From(ctx)).DecideTrial(ctx, req.GetId(), req.GetDecision(), req.GetRemindAt().AsTime())
	if err != nil {
		return nil, err
	}
	res := &svcv1.TrialDecisionResult{Trial: o.Trial, Action: o.Action}
	if o.PlanID != "" {
		res.PlanId = &o.PlanID
	}
	return res, nil
}
