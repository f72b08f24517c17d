package tenantapi

import (
	"context"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/server/internal/rpc"
)

// listEvents reads the caller's stream (spec #1): an application's (for a key) or the
// user's own tenant's (for a session), newest first, filtered by types and since.
func (a *API) listEvents(ctx context.Context, req *svcv1.ListEventsRequest) (*svcv1.ListEventsResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.EventServiceListEventsProcedure, req)
	if err != nil {
		return nil, err
	}
	c := rpc.From(ctx)
	stream := c.Tenant.String()
	if c.Key != nil {
		stream = rpc.AppStream(c.Key.AppID, c.Key.Mode)
	}
	page, err := a.EventLog.List(ctx, stream, after, limit, func(ev *svcv1.Event) bool {
		if req.Since != nil && ev.GetTime().AsTime().Before(req.GetSince().AsTime()) {
			return false
		}
		return matchType(req.GetTypes(), ev.GetType())
	})
	if err != nil {
		return nil, err
	}
	return &svcv1.ListEventsResponse{Data: rpc.NonNil(page.Items), NextCursor: a.Pager.Next(binding, page.Last)}, nil
}

// matchType reports whether an event type is among types: exact names, "prefix.*" wildcards,
// or "*"; no types means all.
func matchType(types []string, t string) bool {
	return len(types) == 0 || event.MatchAny(types, t)
}
