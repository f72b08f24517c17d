package server

import (
	"context"
	"io"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
)

// DefaultCeilingCents is the monthly spending ceiling until one is set (100 USD).
const DefaultCeilingCents = 10000

// createPlan builds a plan over the caller's sources (POST /v1/plans).
func (s *Server) createPlan(ctx context.Context, req *svcv1.CreatePlanRequest) (*svcv1.Plan, error) {
	c := rpc.From(ctx)
	br := svc.PlanRequest{Intent: req.GetIntent(), Policy: req.GetPolicy(), PreservationRequired: req.PreservationRequired,
		SourceIDs: req.GetSourceIds(), DestinationID: req.GetDestinationId()}
	var err error
	if br.Billing, err = s.planBilling(ctx, c); err != nil {
		return nil, err
	}
	// A live plan is metered in the transaction that stores it: exactly once.
	if c.Key != nil && c.Key.Mode == platform.ModeLive {
		br.Also = append(br.Also, s.store.Usage().Write(platform.Deltas(c.Key.OrgID, c.Key.AppID, platform.Month(s.cfg.Now()), platform.MeterPlans, 1)))
	}
	return s.scope(c).BuildPlan(ctx, br)
}

// getPlan reads a plan; over REST its objects are streamed from the store (planStore).
func (s *Server) getPlan(ctx context.Context, req *svcv1.GetPlanRequest) (*svcv1.Plan, error) {
	c := rpc.From(ctx)
	sc := s.scope(c)
	p, err := sc.PlanHeader(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if c.REST {
		if small, err := sc.FillPlans(ctx, []*svcv1.Plan{p}, inlineObjects); small || err != nil {
			return p, err
		}
		s.streamPlans(ctx, p, []*svcv1.Plan{p}) // a big plan: one chunk in memory at a time
		return p, nil
	}
	return p, sc.FillPlan(ctx, p)
}

// streamPlans makes the REST response msg, whose plans are headers, a stream that writes each
// plan's objects from the store as the client reads (plan.WriteJSON).
func (s *Server) streamPlans(ctx context.Context, msg proto.Message, plans []*svcv1.Plan) {
	c := rpc.From(ctx)
	sc := s.scope(c)
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(plan.WriteJSON(context.WithoutCancel(ctx), sc.PlanObjectChunks, pw, msg, plans))
	}()
	c.Header.Set("Content-Type", "application/json")
	c.Stream = pr
}

// listPlanObjects pages one plan's objects (GET /v1/plans/{id}/objects).
func (s *Server) listPlanObjects(ctx context.Context, req *svcv1.ListPlanObjectsRequest) (*svcv1.ListPlanObjectsResponse, error) {
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.PlanServiceListPlanObjectsProcedure, req)
	if err != nil {
		return nil, err
	}
	if req.Limit != nil {
		limit = int(req.GetLimit()) // up to 1,000 here (validated), not the lists' 200
	}
	sc := s.scope(rpc.From(ctx))
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
	return &svcv1.ListPlanObjectsResponse{Data: rpc.NonNil(objs), NextCursor: s.pager.Next(binding, last)}, nil
}

func (s *Server) cancelPlan(ctx context.Context, req *svcv1.CancelPlanRequest) (*svcv1.Plan, error) {
	return s.scope(rpc.From(ctx)).CancelPlan(ctx, req.GetId())
}

// authorizePlan authorizes a plan by the hash the caller reviewed. The plan must be validated,
// unexpired, with that hash, and its sources unmoved since it was built; the policy decision is
// taken again with the authorizer's approvals, grant and ceiling.
func (s *Server) authorizePlan(ctx context.Context, req *svcv1.AuthorizePlanRequest) (*svcv1.Plan, error) {
	c := rpc.From(ctx)
	billing, err := s.planBilling(ctx, c)
	if err != nil {
		return nil, err
	}
	return s.scope(c).AuthorizePlan(ctx, req.GetId(), req.GetPlanHash(), &svc.AuthorizeOptions{Billing: billing,
		ApprovalsFor: func(p *svcv1.Plan) plan.Approvals {
			return plan.Approvals{HumanUser: c.User != nil && c.User.ID == p.GetUserId(),
				DeveloperOwner: s.ownsApplication(ctx, c, p.GetActor().GetApplicationId())}
		}})
}

// ownsApplication reports whether a signed-in user owns the organization of an application.
func (s *Server) ownsApplication(ctx context.Context, c *Caller, appID string) bool {
	if c.User == nil || appID == "" {
		return false
	}
	app, err := s.devs.Application(ctx, appID)
	if err != nil {
		return false
	}
	return slices.Contains(c.User.OrgIDs, app.OrgID) && s.orgOwner(ctx, app.OrgID) == c.User.ID
}

func (s *Server) orgOwner(ctx context.Context, orgID string) string {
	o, err := s.store.Org(ctx, orgID)
	if err != nil {
		return ""
	}
	return o.OwnerID
}

func (s *Server) listPlans(ctx context.Context, req *svcv1.ListPlansRequest) (*svcv1.ListPlansResponse, error) {
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.PlanServiceListPlansProcedure, req)
	if err != nil {
		return nil, err
	}
	c := rpc.From(ctx)
	sc := s.scope(c)
	page, err := sc.ListPlans(ctx, svc.PlanFilter{State: req.State, Intent: req.Intent}, after, limit)
	if err != nil {
		return nil, err
	}
	res := &svcv1.ListPlansResponse{Data: rpc.NonNil(page.Items), NextCursor: s.pager.Next(binding, page.Last)}
	if c.REST {
		if small, err := sc.FillPlans(ctx, page.Items, inlineObjects); small || err != nil {
			return res, err
		}
		s.streamPlans(ctx, res, page.Items) // big plans: one chunk of objects in memory at a time
		return res, nil
	}
	for _, p := range page.Items {
		if err := sc.FillPlan(ctx, p); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// inlineObjects is how many objects, in all, a REST response of plans holds in memory and
// encodes at once (about 1 MiB of JSON); pages and plans with more are streamed chunk by chunk.
const inlineObjects = 5_000
