package server

import (
	"context"

	"svc.dev/svc/platform"
)

// MarkReauth exposes markReauth to the black-box tests until the source paths call it.
func (s *Server) MarkReauth(ctx context.Context, tenant platform.Tenant, sourceID string) error {
	return s.markReauth(ctx, tenant, sourceID)
}
