package server

import (
	"context"
	"svc.dev/svc/providers"

	"svc.dev/svc/platform"
)

// MarkReauth exposes markReauth to the black-box tests until the source paths call it.
func (s *Server) MarkReauth(ctx context.Context, tenant platform.Tenant, sourceID string) error {
	return s.markReauth(ctx, tenant, sourceID)
}

// AuthCodeURL is the authorization URL the consent page sends a browser to.
func AuthCodeURL(p OAuthProvider, name providers.Name, state, verifier string) string {
	return p.oauth2("https://svc.example/callback").AuthCodeURL(state, p.authCodeOptions(name, verifier)...)
}
