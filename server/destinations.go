package server

import (
	"context"
	"errors"
	"fmt"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage"
)

// A destination is backed by a provider configuration exactly like a source (the embedding
// package keeps both: svc.Scope.AddDestination, DestinationFromSource, OpenDestination). The
// spec has no endpoint for destinations; the API makes them from the caller's connected
// sources (docs/destinations.md). A destination made from a source records it as its origin,
// so that a connection's grant limited to sources reaches only the destinations of its
// sources; destinations added by trusted setup code have no origin.

// DestinationSpec describes a destination for trusted setup code (AddDestination).
type DestinationSpec = svc.DestinationSpec

// AddDestination records a destination in the tenant: it opens the provider to check that it
// can write, then stores the destination and its configuration, sealed. It is the entry point
// for trusted setup code (the dev seed), as ConnectSource is for sources.
func (s *Server) AddDestination(ctx context.Context, tenant platform.Tenant, spec DestinationSpec) (*svcv1.Destination, error) {
	return s.core.Tenant(tenant).AddDestination(ctx, spec)
}

// openDestination returns a destination of the tenant, the provider it writes to and the
// reference within it. A missing destination is an error matching platform.ErrNotFound and
// storage.ErrNotFound (404); a provider that cannot write, one wrapping providers.ErrUnsupported.
func (s *Server) openDestination(ctx context.Context, tenant platform.Tenant, dstID string) (*svcv1.Destination, providers.Provider, string, error) {
	d, p, ref, err := s.core.Tenant(tenant).OpenDestination(ctx, dstID)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, nil, "", fmt.Errorf("%w: %w", platform.ErrNotFound, err)
	}
	return d, p, ref, err
}
