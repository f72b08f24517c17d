package tenantapi

import (
	"context"
	"io"
	"strconv"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
)

// createPlan builds a plan over the caller's sources (POST /v1/plans).
func (a *API) createPlan(ctx context.Context, req *svcv1.CreatePlanRequest) (*svcv1.Plan, error) {
	c := rpc.From(ctx)
	br := svc.PlanRequest{Intent: req.GetIntent(), Policy: req.GetPolicy(), PreservationRequired: req.PreservationRequired,
		SourceIDs: req.GetSourceIds(), DestinationID: req.GetDestinationId()}
	var err error
	if br.Billing, err = a.Billing(ctx, c); err != nil {
		return nil, err
	}
	// A live plan is metered in the transaction that stores it: exactly once.
	if c.Key != nil && c.Key.Mode == platform.ModeLive {
		br.Also = append(br.Also, a.Usage.Write(platform.Deltas(c.Key.OrgID, c.Key.AppID, platform.Month(a.Now()), platform.MeterPlans, 1)))
	}
	return a.Scope(c).BuildPlan(ctx, br)
}

// getPlan reads a plan; over REST its objects are streamed from the store (planStore).
func (a *API) getPlan(ctx context.Context, req *svcv1.GetPlanRequest) (*svcv1.Plan, error) {
	c := rpc.From(ctx)
	sc := a.Scope(c)
	p, err := sc.PlanHeader(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if c.REST {
		if small, err := sc.FillPlans(ctx, []*svcv1.Plan{p}, InlineObjects); small || err != nil {
			return p, err
		}
		a.streamPlans(ctx, p, []*svcv1.Plan{p}) // a big plan: one chunk in memory at a time
		return p, nil
	}
	return p, sc.FillPlan(ctx, p)
}

// streamPlans makes the REST response msg, whose plans are headers, a stream that writes each
// plan's objects from the store as the client reads (plan.WriteJSON).
func (a *API) streamPlans(ctx context.Context, msg proto.Message, plans []*svcv1.Plan) {
	c := rpc.From(ctx)
	sc := a.Scope(c)
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(plan.WriteJSON(context.WithoutCancel(ctx), sc.PlanObjectChunks, pw, msg, plans))
	}()
	c.Header.Set("Content-Type", "application/json")
	c.Stream = pr
}

// listPlanObjects pages one plan's objects (GET /v1/plans/{id}/objects).
func (a *API) listPlanObjects(ctx context.Context, req *svcv1.ListPlanObjectsRequest) (*svcv1.ListPlanObjectsResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.PlanServiceListPlanObjectsProcedure, req)
	if err != nil {
		return nil, err
	}
	if req.Limit != nil {
		limit = int(req.GetLimit()) // up to 1,000 here (validated), not the lists' 200
	}
	sc := a.Scope(rpc.From(ctx))
	p, err := sc.PlanHeader(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	start := 0
	if after != "" {
		if start, err = strconv.Atoi(after); err != nil || start < 0 {
			return nil, rpc.Invalid("cursor", "is not a cursor of this listing")
		}
	}
	objs, more, err := sc.PlanObjects(ctx, p, start, limit)
	if err != nil {
		return nil, err
	}
	last := ""
	if more {
		last = strconv.Itoa(start + len(objs))
	}
	return &svcv1.ListPlanObjectsResponse{Data: rpc.NonNil(objs), NextCursor: a.Pager.Next(binding, last)}, nil
}

func (a *API) cancelPlan(ctx context.Context, req *svcv1.CancelPlanRequest) (*svcv1.Plan, error) {
	return a.Scope(rpc.From(ctx)).CancelPlan(ctx, req.GetId())
}

// authorizePlan authorizes a plan by the hash the caller reviewed. The plan must be validated,
// unexpired, with that hash, and its sources unmoved since it was built; the policy decision is
// taken again with the authorizer's approvals, grant and ceiling.
func (a *API) authorizePlan(ctx context.Context, req *svcv1.AuthorizePlanRequest) (*svcv1.Plan, error) {
	c := rpc.From(ctx)
	billing, err := a.Billing(ctx, c)
	if err != nil {
		return nil, err
	}
	return a.Scope(c).AuthorizePlan(ctx, req.GetId(), req.GetPlanHash(), &svc.AuthorizeOptions{Billing: billing,
		ApprovalsFor: func(p *svcv1.Plan) plan.Approvals {
			return plan.Approvals{HumanUser: c.User != nil && c.User.ID == p.GetUserId(),
				DeveloperOwner: a.OwnsApplication(ctx, c, p.GetActor().GetApplicationId())}
		}})
}

func (a *API) listPlans(ctx context.Context, req *svcv1.ListPlansRequest) (*svcv1.ListPlansResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.PlanServiceListPlansProcedure, req)
	if err != nil {
		return nil, err
	}
	c := rpc.From(ctx)
	sc := a.Scope(c)
	page, err := sc.ListPlans(ctx, svc.PlanFilter{State: req.State, Intent: req.Intent}, after, limit)
	if err != nil {
		return nil, err
	}
	res := &svcv1.ListPlansResponse{Data: rpc.NonNil(page.Items), NextCursor: a.Pager.Next(binding, page.Last)}
	if c.REST {
		if small, err := sc.FillPlans(ctx, page.Items, InlineObjects); small || err != nil {
			return res, err
		}
		a.streamPlans(ctx, res, page.Items) // big plans: one chunk of objects in memory at a time
		return res, nil
	}
	for _, p := range page.Items {
		if err := sc.FillPlan(ctx, p); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// InlineObjects is how many objects, in all, a REST response of plans holds in memory and
// encodes at once (about 1 MiB of JSON); pages and plans with more are streamed chunk by chunk.
const InlineObjects = 5_000
