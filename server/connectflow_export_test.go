package server

import (
	"context"

	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/server/internal/connectflow"
)

// MarkReauth exposes markReauth to the black-box tests until the source paths call it.
func (s *Server) MarkReauth(ctx context.Context, tenant platform.Tenant, sourceID string) error {
	return s.markReauth(ctx, tenant, sourceID)
}

// AuthCodeURL is the authorization URL the consent page sends a browser to.
func AuthCodeURL(p OAuthProvider, name providers.Name, state, verifier string) string {
	return connectflow.OAuthProvider(p).AuthCodeURL(name, "https://svc.example/callback", state, verifier)
}
