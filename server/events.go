package server

import (
	"context"
	"slices"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
)

// Event types the server emits (docs/webhooks.md has the whole catalogue).
const (
	evPlanCreated        = "svc.plan.created"
	evPlanAuthorized     = "svc.plan.authorized"
	evPlanRejected       = "svc.plan.rejected"
	evPlanCancelled      = "svc.plan.cancelled"
	evPlanStale          = "svc.plan.stale"
	evPlanExpired        = "svc.plan.expired"
	evExecutionStarted   = "svc.execution.started"
	evExecutionCancelled = "svc.execution.cancel_requested"
	evSourceConnected    = "svc.source.connected"
	evSourcePolicy       = "svc.source.policy_updated"
	evJobSucceeded       = "svc.job.succeeded"
	evJobFailed          = "svc.job.failed"
)

// emit records a CloudEvents 1.0 event in the tenant's stream and in the stream of every
// application that reaches the tenant, plus the applications in also (one a change just cut
// off, say); test-mode events carry svcsimulated. It never fails the operation that emitted it.
func (s *Server) emit(ctx context.Context, tenant platform.Tenant, typ, source, subject string, data map[string]any, also ...string) {
	d, err := structpb.NewStruct(data)
	if err != nil {
		s.log.Error("event data", "type", typ, "err", err)
		d = &structpb.Struct{}
	}
	ev := &svcv1.Event{Specversion: "1.0", Id: id.New("evt"), Source: source, Type: typ, Time: timestamppb.New(s.cfg.Now()),
		Subject: subject, Datacontenttype: "application/json", Data: d, Svcsimulated: tenant.Simulated()}
	s.events.add(tenant.String(), ev.Id, ev)
	apps, err := s.devs.Reaching(context.WithoutCancel(ctx), tenant)
	if err != nil {
		s.log.Error("event audience", "type", typ, "err", err)
	}
	for _, app := range also {
		if !slices.Contains(apps, app) {
			apps = append(apps, app)
		}
	}
	for _, app := range apps {
		s.events.add(appStream(app, tenant.Mode), ev.Id, ev)
	}
	s.deliverEvent(ctx, tenant.Mode, apps, ev)
}

// appStream is the stream of events an application's keys of one mode read.
func appStream(appID string, mode platform.Mode) string { return "app:" + appID + ":" + string(mode) }

// listEvents reads the caller's stream (spec #1): an application's (for a key) or the
// user's own tenant's (for a session), newest first, filtered by types and since.
func (s *Server) listEvents(ctx context.Context, req *svcv1.ListEventsRequest) (*svcv1.ListEventsResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.EventServiceListEventsProcedure, req)
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	stream := c.Tenant.String()
	if c.Key != nil {
		stream = appStream(c.Key.AppID, c.Key.Mode)
	}
	s.events.flush()
	page, err := s.eventLog.List(ctx, stream, after, limit, func(ev *svcv1.Event) bool {
		if req.Since != nil && ev.GetTime().AsTime().Before(req.GetSince().AsTime()) {
			return false
		}
		return matchType(req.GetTypes(), ev.GetType())
	})
	if err != nil {
		return nil, err
	}
	return &svcv1.ListEventsResponse{Data: nonNil(page.Items), NextCursor: s.nextCursor(binding, page.Last)}, nil
}

// matchType reports whether an event type is among types: exact names, "prefix.*" wildcards,
// or "*"; no types means all.
func matchType(types []string, t string) bool {
	return len(types) == 0 || event.MatchAny(types, t)
}

// planEvent emits an event about a plan.
func (s *Server) planEvent(ctx context.Context, typ string, p *svcv1.Plan) {
	t, err := parseTenant(p.GetTenantId())
	if err != nil {
		return
	}
	s.emit(ctx, t, typ, "/v1/plans", p.GetPlanId(), map[string]any{
		"plan_id": p.GetPlanId(), "state": enumWire(p.GetState()), "intent": enumWire(p.GetIntent()), "hash": p.GetHash(),
		"object_count": float64(p.GetProjection().GetObjectCount()),
	})
}
