package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/storage"
	"svc.dev/svc/wire"
)

// DefaultCeilingCents is the monthly spending ceiling until one is set (100 USD).
const DefaultCeilingCents = 10000

// Problem codes of plan decisions.
const (
	codePlanStale      = "plan_stale"
	codeActionDenied   = "action_denied"
	codeStepUpRequired = "step_up_required"
)

// createPlan builds a plan over the caller's sources (POST /v1/plans).
func (s *Server) createPlan(ctx context.Context, req *svcv1.CreatePlanRequest) (*svcv1.Plan, error) {
	c := callerFrom(ctx)
	switch req.GetIntent() {
	case svcv1.PlanIntent_PLAN_INTENT_RESTORE:
		return nil, invalid("intent", "restore plans start from the vault: POST /v1/vault/objects/{id}/restore")
	case svcv1.PlanIntent_PLAN_INTENT_EXPORT, svcv1.PlanIntent_PLAN_INTENT_MIGRATE:
		if req.DestinationId == nil {
			return nil, invalid("destination_id", "is required for intent "+enumWire(req.GetIntent()))
		}
	}
	srcs, err := s.planSources(ctx, c, req.GetSourceIds())
	if err != nil {
		return nil, err
	}
	br := svc.PlanRequest{Intent: req.GetIntent(), Policy: req.GetPolicy(), PreservationRequired: req.PreservationRequired,
		Actor: c.Actor(), Grant: c.grant()}
	for _, src := range srcs {
		br.SourceIDs = append(br.SourceIDs, src.Id)
	}
	if br.Billing, err = s.planBilling(ctx, c); err != nil {
		return nil, err
	}
	if req.DestinationId != nil {
		if br.Destination, err = s.grantedDestination(ctx, c, req.GetDestinationId()); err != nil {
			return nil, err
		}
	}
	// A live plan is metered in the transaction that stores it: exactly once.
	if c.Key != nil && c.Key.Mode == platform.ModeLive {
		br.Also = append(br.Also, s.store.Usage().Write(usageDeltas(c.Key.OrgID, c.Key.AppID, platform.Month(s.cfg.Now()), platform.MeterPlans, 1)))
	}
	return s.core.Tenant(c.Tenant).BuildPlan(ctx, br)
}

// planSources returns the sources to plan over: those named (each must exist, 404, and be in
// the grant, 403), or every connected source the caller reaches.
func (s *Server) planSources(ctx context.Context, c *Caller, ids []string) ([]*svcv1.Source, error) {
	var out []*svcv1.Source
	if len(ids) > 0 {
		for _, sid := range ids {
			if err := c.sourceInGrant(sid); err != nil {
				return nil, err
			}
			src, err := s.sources.Get(ctx, c.Tenant.String(), sid)
			if err != nil {
				return nil, err
			}
			out = append(out, src)
		}
		return out, nil
	}
	err := s.sources.Scan(ctx, c.Tenant.String(), func(src *svcv1.Source) bool {
		if src.GetStatus() == svcv1.SourceStatus_SOURCE_STATUS_CONNECTED && c.sourceInGrant(src.Id) == nil {
			out = append(out, src)
		}
		return true
	})
	if err == nil && len(out) == 0 {
		err = invalid("source_ids", "there are no connected sources to plan over")
	}
	return out, err
}

// loadPlanHeader reads a plan without its objects, after the grant check, and lets it expire
// when its time has passed.
func (s *Server) loadPlanHeader(ctx context.Context, planID string) (*svcv1.Plan, error) {
	c := callerFrom(ctx)
	p, err := s.plans.Header(ctx, c.Tenant.String(), planID)
	if err != nil {
		return nil, err
	}
	if !c.grantReaches(p.GetSourceMarkers()) {
		return nil, newProblem(http.StatusForbidden, codeForbidden, "The connection's grant does not include every source of this plan.")
	}
	if s.cfg.Now().After(p.GetExpiresAt().AsTime()) && plan.CanTransition(p.GetState(), svcv1.PlanState_PLAN_STATE_EXPIRED) {
		return s.core.Tenant(c.Tenant).SetPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_EXPIRED, nil, svc.EventPlanExpired)
	}
	return p, nil
}

// getPlan reads a plan; over REST its objects are streamed from the store (planStore).
func (s *Server) getPlan(ctx context.Context, req *svcv1.GetPlanRequest) (*svcv1.Plan, error) {
	p, err := s.loadPlanHeader(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	if c.REST {
		if small, err := s.plans.FillSmall(ctx, c.Tenant.String(), []*svcv1.Plan{p}, inlineObjects); small || err != nil {
			return p, err
		}
		s.streamPlans(ctx, p, []*svcv1.Plan{p}) // a big plan: one chunk in memory at a time
		return p, nil
	}
	return p, s.plans.Fill(ctx, c.Tenant.String(), p)
}

// streamPlans makes the REST response msg, whose plans are headers, a stream that writes each
// plan's objects from the store as the client reads (planStore.writePlansJSON).
func (s *Server) streamPlans(ctx context.Context, msg proto.Message, plans []*svcv1.Plan) {
	c := callerFrom(ctx)
	tenant := c.Tenant.String()
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writePlansJSON(context.WithoutCancel(ctx), s.plans, pw, tenant, msg, plans))
	}()
	c.Header.Set("Content-Type", "application/json")
	c.Stream = pr
}

// listPlanObjects pages one plan's objects (GET /v1/plans/{id}/objects).
func (s *Server) listPlanObjects(ctx context.Context, req *svcv1.ListPlanObjectsRequest) (*svcv1.ListPlanObjectsResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.PlanServiceListPlanObjectsProcedure, req)
	if err != nil {
		return nil, err
	}
	if req.Limit != nil {
		limit = int(req.GetLimit()) // up to 1,000 here (validated), not the lists' 200
	}
	p, err := s.loadPlanHeader(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	start := 0
	if after != "" {
		if start, err = strconv.Atoi(after); err != nil || start < 0 {
			return nil, invalid("cursor", "is not a cursor of this listing")
		}
	}
	objs, more, err := s.plans.Page(ctx, callerFrom(ctx).Tenant.String(), p, start, limit)
	if err != nil {
		return nil, err
	}
	last := ""
	if more {
		last = strconv.Itoa(start + len(objs))
	}
	return &svcv1.ListPlanObjectsResponse{Data: nonNil(objs), NextCursor: s.nextCursor(binding, last)}, nil
}

func (s *Server) cancelPlan(ctx context.Context, req *svcv1.CancelPlanRequest) (*svcv1.Plan, error) {
	if _, err := s.loadPlanHeader(ctx, req.GetId()); err != nil {
		return nil, err
	}
	return s.core.Tenant(callerFrom(ctx).Tenant).CancelPlan(ctx, req.GetId())
}

// authorizePlan authorizes a plan by the hash the caller reviewed. The plan must be validated,
// unexpired, with that hash, and its sources unmoved since it was built; the policy decision is
// taken again with the authorizer's approvals, grant and ceiling.
func (s *Server) authorizePlan(ctx context.Context, req *svcv1.AuthorizePlanRequest) (*svcv1.Plan, error) {
	c := callerFrom(ctx)
	p, err := s.loadPlanHeader(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	approvals := plan.Approvals{HumanUser: c.User != nil && c.User.ID == p.GetUserId(), DeveloperOwner: s.ownsApplication(ctx, c, p.GetActor().GetApplicationId())}
	billing, err := s.planBilling(ctx, c)
	if err != nil {
		return nil, err
	}
	return s.core.Tenant(c.Tenant).AuthorizePlan(ctx, p.PlanId, req.GetPlanHash(), &svc.AuthorizeOptions{
		Principal: c.Actor().GetPrincipalId(), Grant: c.grant(), Billing: billing, Approvals: &approvals})
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
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.PlanServiceListPlansProcedure, req)
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	keep := func(p *svcv1.Plan) bool {
		if req.State != nil && p.GetState() != req.GetState() {
			return false
		}
		if req.Intent != nil && p.GetIntent() != req.GetIntent() {
			return false
		}
		return c.grantReaches(p.GetSourceMarkers())
	}
	page, err := s.planHeaders.List(ctx, c.Tenant.String(), after, limit, keep)
	if err != nil {
		return nil, err
	}
	res := &svcv1.ListPlansResponse{Data: nonNil(page.Items), NextCursor: s.nextCursor(binding, page.Last)}
	if c.REST {
		if small, err := s.plans.FillSmall(ctx, c.Tenant.String(), page.Items, inlineObjects); small || err != nil {
			return res, err
		}
		s.streamPlans(ctx, res, page.Items) // big plans: one chunk of objects in memory at a time
		return res, nil
	}
	for _, p := range page.Items {
		if err := s.plans.Fill(ctx, c.Tenant.String(), p); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// inlineObjects is how many objects, in all, a REST response of plans holds in memory and
// encodes at once (about 1 MiB of JSON); pages and plans with more are streamed chunk by chunk.
const inlineObjects = 5_000

// WritePlansJSON writes msg (a plan, or a list of plans) as the REST JSON the codec would
// write for it with every plan's objects, streaming those from the store: msg's plans are
// headers, and each header's empty "objects":[] is replaced by its objects, one chunk in
// memory at a time. A plan stored whole is encoded as it is.
func writePlansJSON(ctx context.Context, ps storage.Plans, w io.Writer, tenant string, msg proto.Message, plans []*svcv1.Plan) error {
	body, err := wire.Marshal(msg)
	if err != nil {
		return err
	}
	empty := []byte(`"objects":[]`)
	var buf []byte
	for _, p := range plans {
		if len(p.Objects) > 0 {
			continue // encoded whole: no "objects":[] of its own
		}
		i := bytes.Index(body, empty)
		if i < 0 {
			return fmt.Errorf("plan %s: no objects field in its JSON", p.PlanId)
		}
		if _, err := w.Write(body[:i+len(empty)-1]); err != nil {
			return err
		}
		body = body[i+len(empty)-1:]
		first := true
		for objs, err := range ps.Objects(ctx, tenant, p.PlanId) {
			if err != nil {
				return err
			}
			buf = buf[:0]
			for _, o := range objs {
				if !first {
					buf = append(buf, ',')
				}
				first = false
				if buf, err = wire.Append(buf, o); err != nil {
					return err
				}
			}
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
	}
	_, err = w.Write(body)
	return err
}
