package server

import (
	"context"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
)

// SourceSpec describes a source to connect (svc.SourceSpec).
type SourceSpec = svc.SourceSpec

// ConnectSource opens a provider to check it works, records a connected source in the tenant
// with its configuration sealed, and returns it. The connect flow and the seed job call it.
func (s *Server) ConnectSource(ctx context.Context, tenant platform.Tenant, spec SourceSpec) (*svcv1.Source, error) {
	return s.core.Tenant(tenant).ConnectSource(ctx, spec)
}
