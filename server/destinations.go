package server

import (
	"context"
	"errors"
	"fmt"

	"svc.dev/svc"
	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/server/internal/rpc"
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

// createDestination makes a destination from a connected source (POST /v1/destinations): the
// source must be in the caller's grant (403), be one of the tenant's connected sources and have
// a provider that can write (400, path source_id). Its configuration is copied, resealed under
// the destination's own key, so the destination outlives changes to the source record.
func (s *Server) createDestination(ctx context.Context, req *svcv1.CreateDestinationRequest) (*svcv1.Destination, error) {
	c := rpc.From(ctx)
	if req.PathTemplate != nil {
		if err := execute.CheckPathTemplate(req.GetPathTemplate()); err != nil {
			return nil, rpc.Invalid("path_template", err.Error())
		}
	}
	return s.scope(c).DestinationFromSource(ctx, req.GetSourceId(), svc.DestinationOptions{Label: req.GetLabel(),
		PathTemplate: req.GetPathTemplate(), MetadataMapping: req.GetMetadataMapping(), PermissionMapping: req.GetPermissionMapping()})
}

func (s *Server) getDestination(ctx context.Context, req *svcv1.GetDestinationRequest) (*svcv1.Destination, error) {
	return s.scope(rpc.From(ctx)).Destination(ctx, req.GetId())
}

func (s *Server) listDestinations(ctx context.Context, req *svcv1.ListDestinationsRequest) (*svcv1.ListDestinationsResponse, error) {
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.DestinationServiceListDestinationsProcedure, req)
	if err != nil {
		return nil, err
	}
	page, err := s.scope(rpc.From(ctx)).ListDestinations(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListDestinationsResponse{Data: rpc.NonNil(page.Items), NextCursor: s.pager.Next(binding, page.Last)}, nil
}
