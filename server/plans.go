package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strconv"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/id"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/store"
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
	tenant := c.Tenant
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
	br := plan.Request{
		TenantID:             tenant.String(),
		UserID:               tenant.Owner,
		Actor:                c.Actor(),
		Simulated:            tenant.Simulated(),
		Intent:               req.GetIntent(),
		Policy:               req.GetPolicy(),
		PreservationRequired: req.PreservationRequired == nil || req.GetPreservationRequired(),
		Grant:                c.grant(),
		Now:                  s.cfg.Now(),
	}
	if br.Billing, err = s.planBilling(ctx, c); err != nil {
		return nil, err
	}
	if req.DestinationId != nil {
		d, err := s.grantedDestination(ctx, c, req.GetDestinationId())
		if err != nil {
			return nil, err
		}
		br.Destination = d
	}
	for _, src := range srcs {
		ps, err := s.planSource(ctx, tenant, src)
		if err != nil {
			return nil, err
		}
		br.Sources = append(br.Sources, ps)
	}
	p, err := plan.Build(ctx, br)
	if err != nil {
		return nil, err
	}
	// A live plan is metered, and its svc.plan.created event recorded, in the transaction that
	// stores it: exactly once each.
	var usage []store.UsageDelta
	if c.Key != nil && c.Key.Mode == platform.ModeLive {
		usage = usageDeltas(c.Key.OrgID, c.Key.AppID, platform.Month(s.cfg.Now()), platform.MeterPlans, 1)
	}
	if err := s.putPlan(ctx, tenant, p, store.UsageExtra(usage)); err != nil {
		return nil, err
	}
	for _, src := range srcs { // the quota observed while planning
		if src.Quota != nil {
			q := src.Quota
			s.sources.Update(ctx, tenant.String(), src.Id, func(stored *svcv1.Source) error {
				stored.Quota = q
				stored.LastScanAt = timestamppb.New(s.cfg.Now())
				return nil
			})
		}
	}
	return p, nil
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

// grant is what the caller may do: everything for the user themself; for a key, its scopes,
// intersected with its connection's grant.
func (c *Caller) grant() plan.Grant {
	if c.Key == nil {
		return plan.Grant{}
	}
	ops := slices.Clone(c.Key.Scopes)
	if c.Connection != nil {
		ops = slices.DeleteFunc(ops, func(op string) bool { return !c.Connection.Grant.Allows(op) })
	}
	return plan.Grant{OperationClasses: nonNil(ops)}
}

// billing is the commercial context of a live developer key, without usage (planBilling adds
// it); test mode and end users are never billed.
func (c *Caller) billing() *plan.Billing {
	if c.Key == nil || c.Key.Mode != platform.ModeLive {
		return nil
	}
	return &plan.Billing{CeilingCents: DefaultCeilingCents, CanBill: slices.Contains(c.Key.Scopes, "billable_execute")}
}

// loadPlan reads a whole plan and lets it expire when its time has passed.
func (s *Server) loadPlan(ctx context.Context, planID string) (*svcv1.Plan, error) {
	p, err := s.loadPlanHeader(ctx, planID)
	if err != nil {
		return nil, err
	}
	return p, s.plans.fill(ctx, callerFrom(ctx).Tenant.String(), p)
}

// loadPlanHeader is loadPlan without the plan's objects (planStore).
func (s *Server) loadPlanHeader(ctx context.Context, planID string) (*svcv1.Plan, error) {
	c := callerFrom(ctx)
	p, err := s.plans.header(ctx, c.Tenant.String(), planID)
	if err != nil {
		return nil, err
	}
	if !c.grantReaches(p.GetSourceMarkers()) {
		return nil, newProblem(http.StatusForbidden, codeForbidden, "The connection's grant does not include every source of this plan.")
	}
	if s.cfg.Now().After(p.GetExpiresAt().AsTime()) && plan.CanTransition(p.GetState(), svcv1.PlanState_PLAN_STATE_EXPIRED) {
		return s.setPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_EXPIRED, nil, evPlanExpired)
	}
	return p, nil
}

// putPlan stores a new plan with its svc.plan.created event (and extras) in one transaction.
func (s *Server) putPlan(ctx context.Context, tenant platform.Tenant, p *svcv1.Plan, extras ...store.Extra) error {
	pe, err := s.prepareEvent(context.WithoutCancel(ctx), tenant, id.New("evt"), s.cfg.Now(), evPlanCreated, "/v1/plans", p.PlanId, planEventData(p))
	if err != nil {
		return err
	}
	if err := s.plans.putWith(ctx, tenant.String(), p, append(extras, pe.extra)...); err != nil {
		return err
	}
	s.wake(pe)
	return nil
}

// setPlanState moves a stored plan to a state (and applies change), atomically, with the event
// of type evType (none when empty) in the same transaction: the event's data is computed from
// p moved the same way, and the transaction aborts, event and all, if the stored plan cannot
// make the transition.
func (s *Server) setPlanState(ctx context.Context, p *svcv1.Plan, to svcv1.PlanState, change func(*svcv1.Plan), evType string) (*svcv1.Plan, error) {
	move := func(q *svcv1.Plan) error {
		if err := plan.Transition(q, to); err != nil {
			return err
		}
		if change != nil {
			change(q)
		}
		return nil
	}
	tenant := callerFrom(ctx).Tenant
	var extras []store.Extra
	var pe preparedEvent
	if evType != "" {
		next := proto.CloneOf(p)
		if err := move(next); err != nil {
			return nil, err
		}
		var err error
		if pe, err = s.prepareEvent(context.WithoutCancel(ctx), tenant, id.New("evt"), s.cfg.Now(), evType, "/v1/plans", p.PlanId, planEventData(next)); err != nil {
			return nil, err
		}
		extras = append(extras, pe.extra)
	}
	var out *svcv1.Plan
	err := s.plans.updateWith(ctx, tenant.String(), p.PlanId, func(stored *svcv1.Plan) error {
		if err := move(stored); err != nil {
			return err
		}
		out = stored
		return nil
	}, extras...)
	if err != nil {
		return nil, err
	}
	s.wake(pe)
	return out, nil
}

// getPlan reads a plan; over REST its objects are streamed from the store (planStore).
func (s *Server) getPlan(ctx context.Context, req *svcv1.GetPlanRequest) (*svcv1.Plan, error) {
	p, err := s.loadPlanHeader(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	if c.REST {
		if small, err := s.plans.fillSmall(ctx, c.Tenant.String(), []*svcv1.Plan{p}, inlineObjects); small || err != nil {
			return p, err
		}
		s.streamPlans(ctx, p, []*svcv1.Plan{p}) // a big plan: one chunk in memory at a time
		return p, nil
	}
	return p, s.plans.fill(ctx, c.Tenant.String(), p)
}

// streamPlans makes the REST response msg, whose plans are headers, a stream that writes each
// plan's objects from the store as the client reads (planStore.writePlansJSON).
func (s *Server) streamPlans(ctx context.Context, msg proto.Message, plans []*svcv1.Plan) {
	c := callerFrom(ctx)
	tenant := c.Tenant.String()
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(s.plans.writePlansJSON(context.WithoutCancel(ctx), pw, tenant, msg, plans))
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
	objs, more, err := s.plans.page(ctx, callerFrom(ctx).Tenant.String(), p, start, limit)
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
	p, err := s.loadPlan(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return s.setPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_CANCELLED, nil, evPlanCancelled)
}

// authorizePlan authorizes a plan by the hash the caller reviewed. The plan must be validated,
// unexpired, with that hash, and its sources unmoved since it was built; the policy decision is
// taken again with the authorizer's approvals, grant and ceiling.
func (s *Server) authorizePlan(ctx context.Context, req *svcv1.AuthorizePlanRequest) (out *svcv1.Plan, err error) {
	c := callerFrom(ctx)
	p, err := s.loadPlan(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if st := p.GetState(); st != svcv1.PlanState_PLAN_STATE_VALIDATED && st != svcv1.PlanState_PLAN_STATE_DRAFT {
		return nil, newProblem(http.StatusConflict, codeInvalidState, "Only a draft or validated plan can be authorized; this plan is "+enumWire(st)+".")
	}
	if req.GetPlanHash() != p.GetHash() {
		return nil, newProblem(http.StatusConflict, codePlanStale, "The plan hash is not the plan's current hash; review the plan again.")
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
	status := map[string]svcv1.SourceStatus{}
	for _, m := range p.GetSourceMarkers() {
		src, err := s.sources.Get(ctx, c.Tenant.String(), m.GetSourceId())
		switch {
		case errors.Is(err, store.ErrNotFound):
			status[m.GetSourceId()] = svcv1.SourceStatus_SOURCE_STATUS_DISCONNECTED
		case err != nil:
			return nil, err
		default:
			status[src.Id] = src.GetStatus()
		}
	}
	approvals := plan.Approvals{HumanUser: c.User != nil && c.User.ID == p.GetUserId(), DeveloperOwner: s.ownsApplication(ctx, c, p.GetActor().GetApplicationId())}
	billing, err := s.planBilling(ctx, c)
	if err != nil {
		return nil, err
	}
	decision := plan.Decide(p, plan.Decision{SourceStatus: status, Grant: c.grant(), Billing: billing, Approvals: approvals})
	switch decision.GetDecision() {
	case svcv1.PolicyDecision_POLICY_DECISION_DENY:
		if _, err := s.setPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_REJECTED, func(p *svcv1.Plan) { p.Policy = decision }, evPlanRejected); err != nil {
			return nil, err
		}
		return nil, newProblem(http.StatusForbidden, codeActionDenied, joinReasons(decision.GetReasons()))
	case svcv1.PolicyDecision_POLICY_DECISION_STEP_UP_REQUIRED:
		prob := newProblem(http.StatusForbidden, codeStepUpRequired, joinReasons(decision.GetReasons()))
		for _, a := range decision.GetRequiredApprovals() {
			prob.approvals = append(prob.approvals, enumWire(a))
		}
		return nil, prob
	}
	principal := c.Actor().GetPrincipalId()
	if p.GetState() == svcv1.PlanState_PLAN_STATE_DRAFT { // a draft (a restore plan) is validated on the way
		if p, err = s.setPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_VALIDATED, nil, ""); err != nil {
			return nil, err
		}
	}
	return s.setPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_AUTHORIZED, func(p *svcv1.Plan) {
		p.Policy = decision
		auth := &svcv1.PlanAuthorization{AuthorizedAt: timestamppb.New(s.cfg.Now().UTC().Truncate(time.Millisecond)), AuthorizedBy: principal,
			ActionDecisionId: decision.GetDecisionId(), PlanHashAtAuthorization: p.GetHash()}
		if p.GetMeter() != nil {
			auth.CommercialAuthorizationId = proto.String(id.New("cma"))
		}
		p.Authorization = auth
	}, evPlanAuthorized)
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
	o, err := s.db.Org(ctx, orgID)
	if err != nil {
		return ""
	}
	return o.OwnerID
}

func joinReasons(rs []string) string {
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += "; "
		}
		out += r
	}
	return out + "."
}

// markStale makes a plan stale because a source moved, and answers 409 plan_stale.
func (s *Server) markStale(ctx context.Context, p *svcv1.Plan, sourceID string) error {
	if _, err := s.setPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_STALE, nil, evPlanStale); err != nil {
		return err
	}
	return newProblem(http.StatusConflict, codePlanStale, "Source "+sourceID+" changed since the plan was built; make a new plan.")
}
