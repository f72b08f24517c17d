package svc

import (
	"context"
	"errors"
	"iter"
	"strings"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/plan"
	"svc.dev/svc/storage"
)

// PlanRequest is what to plan.
type PlanRequest struct {
	// SourceIDs are the sources to plan over; none means every connected source of the tenant.
	SourceIDs []string
	Intent    svcv1.PlanIntent
	// Policy, when set, replaces every source's own policy for this plan.
	Policy *svcv1.SourcePolicy
	// Destination is required for the export and migrate intents.
	Destination *svcv1.Destination
	// DestinationID names the destination instead of Destination: the scope reads it, with
	// Destination's checks, after the sources'.
	DestinationID string
	// PreservationRequired defaults to true: every asset is vaulted and verified before
	// anything is trashed or moved at its source.
	PreservationRequired *bool
	// Actor is who asks (default: the tenant's owner, as a user).
	Actor *svcv1.Actor
	// Grant limits the operation classes (zero: all, as for the owner acting for themself).
	Grant plan.Grant
	// Billing is a live developer's commercial context (nil: not billed).
	Billing *plan.Billing
	// Also are the host's writes stored with the plan, in its transaction (usage counts).
	Also []storage.Write
}

func (s *Scope) actor(a *svcv1.Actor) *svcv1.Actor {
	if a != nil {
		return a
	}
	return &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_USER, PrincipalId: s.t.Owner}
}

// BuildPlan builds a plan over the tenant's sources and stores it, with its svc.plan.created
// event. Building reads the sources' listings and changes nothing at them; the plan's hash
// covers everything that would change what an execution does.
func (s *Scope) BuildPlan(ctx context.Context, req PlanRequest) (*svcv1.Plan, error) {
	switch req.Intent {
	case svcv1.PlanIntent_PLAN_INTENT_RESTORE:
		return nil, invalid("intent", "restore plans start from the vault: POST /v1/vault/objects/{id}/restore")
	case svcv1.PlanIntent_PLAN_INTENT_EXPORT, svcv1.PlanIntent_PLAN_INTENT_MIGRATE:
		if req.Destination == nil && req.DestinationID == "" {
			return nil, invalid("destination_id", "is required for intent "+enumWire(req.Intent))
		}
	}
	srcs, err := s.planSources(ctx, req.SourceIDs)
	if err != nil {
		return nil, err
	}
	if req.DestinationID != "" {
		if req.Destination, err = s.Destination(ctx, req.DestinationID); err != nil {
			return nil, err
		}
	}
	br := plan.Request{
		TenantID:             s.key(),
		UserID:               s.t.Owner,
		Actor:                s.actorOr(req.Actor),
		Simulated:            s.t.Simulated(),
		Intent:               req.Intent,
		Policy:               req.Policy,
		PreservationRequired: req.PreservationRequired == nil || *req.PreservationRequired,
		Grant:                s.grantOr(req.Grant),
		Billing:              req.Billing,
		Destination:          req.Destination,
		Now:                  s.c.now(),
	}
	for _, src := range srcs {
		ps, err := s.planSource(ctx, src)
		if err != nil {
			return nil, err
		}
		br.Sources = append(br.Sources, ps)
	}
	p, err := plan.Build(ctx, br)
	if err != nil {
		return nil, err
	}
	if err := s.PutPlan(ctx, p, req.Also...); err != nil {
		return nil, err
	}
	for _, src := range srcs { // the quota observed while planning
		if src.Quota != nil {
			q := src.Quota
			s.c.store.Sources().Update(ctx, s.key(), src.Id, func(stored *svcv1.Source) error {
				stored.Quota = q
				stored.LastScanAt = timestamppb.New(s.c.now())
				return nil
			})
		}
	}
	return p, nil
}

// planSources returns the sources named (each in the grant, CodeForbidden, and in the tenant,
// ErrNotFound), or every connected one the scope reaches.
func (s *Scope) planSources(ctx context.Context, ids []string) ([]*svcv1.Source, error) {
	var out []*svcv1.Source
	if len(ids) > 0 {
		for _, sid := range ids {
			if err := s.reachesSource(sid); err != nil {
				return nil, err
			}
			src, err := s.Source(ctx, sid)
			if err != nil {
				return nil, err
			}
			out = append(out, src)
		}
		return out, nil
	}
	err := s.c.store.Sources().Scan(ctx, s.key(), func(src *svcv1.Source) bool {
		if src.GetStatus() == svcv1.SourceStatus_SOURCE_STATUS_CONNECTED && s.reachesSource(src.Id) == nil {
			out = append(out, src)
		}
		return true
	})
	if err == nil && len(out) == 0 {
		err = invalid("source_ids", "there are no connected sources to plan over")
	}
	return out, err
}

// PutPlan stores a new plan with its svc.plan.created event (and also) in one transaction.
func (s *Scope) PutPlan(ctx context.Context, p *svcv1.Plan, also ...storage.Write) error {
	pe, err := s.prepare(ctx, EventPlanCreated, "/v1/plans", p.PlanId, PlanEventData(p))
	if err != nil {
		return err
	}
	if err := s.c.store.Plans().Put(ctx, s.key(), p, append(also, pe.write)...); err != nil {
		return err
	}
	pe.wake()
	return nil
}

// PlanHeader returns a plan without its objects (refused, CodeForbidden, when the scope's
// grant does not reach every source of it), and lets it expire when its time has passed.
func (s *Scope) PlanHeader(ctx context.Context, id string) (*svcv1.Plan, error) {
	p, err := s.c.store.Plans().Header(ctx, s.key(), id)
	if err != nil {
		return nil, err
	}
	if err := s.reachesAll(p.GetSourceMarkers(), "plan"); err != nil {
		return nil, err
	}
	if s.c.now().After(p.GetExpiresAt().AsTime()) && plan.CanTransition(p.GetState(), svcv1.PlanState_PLAN_STATE_EXPIRED) {
		return s.SetPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_EXPIRED, nil, EventPlanExpired)
	}
	return p, nil
}

// PlanFilter selects plans in ListPlans; zero fields select all.
type PlanFilter struct {
	State  *svcv1.PlanState
	Intent *svcv1.PlanIntent
}

// ListPlans returns a page of the tenant's plan headers (without their objects) the scope
// reaches, newest first, after the plan id after ("": from the newest).
func (s *Scope) ListPlans(ctx context.Context, f PlanFilter, after string, limit int) (storage.Page[*svcv1.Plan], error) {
	res, err := s.c.resources()
	if err != nil {
		return storage.Page[*svcv1.Plan]{}, err
	}
	return res.PlanHeaders().List(ctx, s.key(), after, limit, func(p *svcv1.Plan) bool {
		return (f.State == nil || p.GetState() == *f.State) && (f.Intent == nil || p.GetIntent() == *f.Intent) &&
			s.reaches(p.GetSourceMarkers())
	})
}

// FillPlans reads the objects of plan headers when they hold at most limit objects in all,
// and reports whether it did (with more, a caller streams them: PlanObjectChunks).
func (s *Scope) FillPlans(ctx context.Context, plans []*svcv1.Plan, limit int) (bool, error) {
	return s.c.store.Plans().FillSmall(ctx, s.key(), plans, limit)
}

// FillPlan reads the objects of a plan header into it.
func (s *Scope) FillPlan(ctx context.Context, p *svcv1.Plan) error {
	return s.c.store.Plans().Fill(ctx, s.key(), p)
}

// PlanObjectChunks yields a plan's objects chunk by chunk, each read on its own.
func (s *Scope) PlanObjectChunks(ctx context.Context, planID string) iter.Seq2[[]*svcv1.PlanObject, error] {
	return s.c.store.Plans().Objects(ctx, s.key(), planID)
}

// Plan returns a whole plan, objects and all (PlanHeader, then its objects).
func (s *Scope) Plan(ctx context.Context, id string) (*svcv1.Plan, error) {
	p, err := s.PlanHeader(ctx, id)
	if err != nil {
		return nil, err
	}
	return p, s.c.store.Plans().Fill(ctx, s.key(), p)
}

// PlanObjects returns up to limit objects of plan h from index start, and whether more follow.
func (s *Scope) PlanObjects(ctx context.Context, h *svcv1.Plan, start, limit int) ([]*svcv1.PlanObject, bool, error) {
	return s.c.store.Plans().Page(ctx, s.key(), h, start, limit)
}

// SetPlanState moves a stored plan to a state (and applies change), atomically, with the event
// of type evType (none when empty) in the same transaction: the event's data is computed from
// p moved the same way, and the transaction aborts, event and all, if the stored plan cannot
// make the transition.
func (s *Scope) SetPlanState(ctx context.Context, p *svcv1.Plan, to svcv1.PlanState, change func(*svcv1.Plan), evType string) (*svcv1.Plan, error) {
	move := func(q *svcv1.Plan) error {
		if err := plan.Transition(q, to); err != nil {
			return err
		}
		if change != nil {
			change(q)
		}
		return nil
	}
	var also []storage.Write
	var pe pending
	if evType != "" {
		next := proto.CloneOf(p)
		if err := move(next); err != nil {
			return nil, err
		}
		var err error
		if pe, err = s.prepare(ctx, evType, "/v1/plans", p.PlanId, PlanEventData(next)); err != nil {
			return nil, err
		}
		also = append(also, pe.write)
	}
	var out *svcv1.Plan
	err := s.c.store.Plans().Update(ctx, s.key(), p.PlanId, func(stored *svcv1.Plan) error {
		if err := move(stored); err != nil {
			return err
		}
		out = stored
		return nil
	}, also...)
	if err != nil {
		return nil, err
	}
	pe.wake()
	return out, nil
}

// CancelPlan cancels a plan that has not run.
func (s *Scope) CancelPlan(ctx context.Context, id string) (*svcv1.Plan, error) {
	p, err := s.Plan(ctx, id)
	if err != nil {
		return nil, err
	}
	return s.SetPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_CANCELLED, nil, EventPlanCancelled)
}

// markStale makes a plan stale because a source moved, and returns the plan_stale Error.
func (s *Scope) markStale(ctx context.Context, p *svcv1.Plan, sourceID string) error {
	if _, err := s.SetPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_STALE, nil, EventPlanStale); err != nil {
		return err
	}
	return refused(CodePlanStale, "Source "+sourceID+" changed since the plan was built; make a new plan.")
}

// checkSources makes the plan stale, and returns the plan_stale Error, when one of its
// sources changed since it was built in a way that touches the plan's own objects
// (sourceMoved).
func (s *Scope) checkSources(ctx context.Context, p *svcv1.Plan) error {
	expected := map[string]map[string]string{} // source id -> provider object id -> version
	for _, o := range p.GetObjects() {
		if expected[o.GetSourceId()] == nil {
			expected[o.GetSourceId()] = map[string]string{}
		}
		expected[o.GetSourceId()][o.GetProviderObjectId()] = o.GetExpectedVersion()
	}
	for _, m := range p.GetSourceMarkers() {
		moved, err := s.sourceMoved(ctx, m, expected[m.GetSourceId()])
		if err != nil {
			return err
		}
		if moved {
			return s.markStale(ctx, p, m.GetSourceId())
		}
	}
	return nil
}

// AuthorizeOptions are who authorizes, and within what.
type AuthorizeOptions struct {
	// Principal is who authorizes (default: the tenant's owner).
	Principal string
	// Grant limits the operation classes (zero: all).
	Grant plan.Grant
	// Billing is a live developer's commercial context (nil: not billed).
	Billing *plan.Billing
	// Approvals are the approvals the authorizer gives; nil means the tenant's owner's own (a
	// human user approving their own plan).
	Approvals *plan.Approvals
	// ApprovalsFor, when set, gives the approvals from the plan itself (who made it).
	ApprovalsFor func(*svcv1.Plan) plan.Approvals
}

// AuthorizePlan authorizes a plan by the hash the caller reviewed. The plan must be validated
// (or a draft), unexpired, with that hash, and its sources unmoved since it was built; the
// policy decision is taken again with the authorizer's approvals, grant and ceiling. A denial
// rejects the plan (CodeActionDenied); missing approvals change nothing (CodeStepUpRequired).
func (s *Scope) AuthorizePlan(ctx context.Context, planID, hash string, opts *AuthorizeOptions) (*svcv1.Plan, error) {
	var o AuthorizeOptions
	if opts != nil {
		o = *opts
	}
	if o.Principal == "" {
		o.Principal = s.actorOr(nil).GetPrincipalId()
	}
	o.Grant = s.grantOr(o.Grant)
	if o.Approvals == nil {
		o.Approvals = &plan.Approvals{HumanUser: true}
	}
	p, err := s.Plan(ctx, planID)
	if err != nil {
		return nil, err
	}
	if o.ApprovalsFor != nil {
		a := o.ApprovalsFor(p)
		o.Approvals = &a
	}
	if st := p.GetState(); st != svcv1.PlanState_PLAN_STATE_VALIDATED && st != svcv1.PlanState_PLAN_STATE_DRAFT {
		return nil, refused(CodeInvalidState, "Only a draft or validated plan can be authorized; this plan is "+enumWire(st)+".")
	}
	if hash != p.GetHash() {
		return nil, refused(CodePlanStale, "The plan hash is not the plan's current hash; review the plan again.")
	}
	if err := s.checkSources(ctx, p); err != nil {
		return nil, err
	}
	status := map[string]svcv1.SourceStatus{}
	for _, m := range p.GetSourceMarkers() {
		src, err := s.Source(ctx, m.GetSourceId())
		switch {
		case errors.Is(err, storage.ErrNotFound):
			status[m.GetSourceId()] = svcv1.SourceStatus_SOURCE_STATUS_DISCONNECTED
		case err != nil:
			return nil, err
		default:
			status[src.Id] = src.GetStatus()
		}
	}
	decision := plan.Decide(p, plan.Decision{SourceStatus: status, Grant: o.Grant, Billing: o.Billing, Approvals: *o.Approvals})
	switch decision.GetDecision() {
	case svcv1.PolicyDecision_POLICY_DECISION_DENY:
		if _, err := s.SetPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_REJECTED, func(p *svcv1.Plan) { p.Policy = decision }, EventPlanRejected); err != nil {
			return nil, err
		}
		return nil, refused(CodeActionDenied, joinReasons(decision.GetReasons()))
	case svcv1.PolicyDecision_POLICY_DECISION_STEP_UP_REQUIRED:
		return nil, &Error{Code: CodeStepUpRequired, Detail: joinReasons(decision.GetReasons()), Approvals: decision.GetRequiredApprovals()}
	}
	if p.GetState() == svcv1.PlanState_PLAN_STATE_DRAFT { // a draft (a restore plan) is validated on the way
		if p, err = s.SetPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_VALIDATED, nil, ""); err != nil {
			return nil, err
		}
	}
	return s.SetPlanState(ctx, p, svcv1.PlanState_PLAN_STATE_AUTHORIZED, func(p *svcv1.Plan) {
		p.Policy = decision
		auth := &svcv1.PlanAuthorization{AuthorizedAt: timestamppb.New(s.c.now().UTC().Truncate(time.Millisecond)), AuthorizedBy: o.Principal,
			ActionDecisionId: decision.GetDecisionId(), PlanHashAtAuthorization: p.GetHash()}
		if p.GetMeter() != nil {
			auth.CommercialAuthorizationId = proto.String(id.New("cma"))
		}
		p.Authorization = auth
	}, EventPlanAuthorized)
}

func joinReasons(rs []string) string { return strings.Join(rs, "; ") + "." }
