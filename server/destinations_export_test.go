package server

import (
	"context"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
)

// OpenDestination exposes openDestination to the black-box tests: the destination, the
// provider it writes to and the reference within it. The server owns the provider.
func (s *Server) OpenDestination(ctx context.Context, tenant platform.Tenant, dstID string) (*svcv1.Destination, providers.Provider, string, error) {
	return s.openDestination(ctx, tenant, dstID)
}
