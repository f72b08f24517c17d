package server

import (
	"context"
	"slices"
)

// DefaultCeilingCents is the monthly spending ceiling until one is set (100 USD).
const DefaultCeilingCents = 10000

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
