package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"svc.dev/svc"
	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
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

// createDestination makes a destination from a connected source (POST /v1/destinations): the
// source must be in the caller's grant (403), be one of the tenant's connected sources and have
// a provider that can write (400, path source_id). Its configuration is copied, resealed under
// the destination's own key, so the destination outlives changes to the source record.
func (s *Server) createDestination(ctx context.Context, req *svcv1.CreateDestinationRequest) (*svcv1.Destination, error) {
	c := callerFrom(ctx)
	if req.PathTemplate != nil {
		if err := execute.CheckPathTemplate(req.GetPathTemplate()); err != nil {
			return nil, invalid("path_template", err.Error())
		}
	}
	if err := c.sourceInGrant(req.GetSourceId()); err != nil {
		return nil, err
	}
	return s.core.Tenant(c.Tenant).DestinationFromSource(ctx, req.GetSourceId(), svc.DestinationOptions{Label: req.GetLabel(),
		PathTemplate: req.GetPathTemplate(), MetadataMapping: req.GetMetadataMapping(), PermissionMapping: req.GetPermissionMapping()})
}

// reachesDestination reports whether the caller's grant reaches a destination: always,
// unless a connection's grant names sources and the destination was made from another one.
// Destinations without an origin source (trusted setup's) touch no source.
func (s *Server) reachesDestination(ctx context.Context, c *Caller, dstID string) (bool, error) {
	if c.Connection == nil || len(c.Connection.Grant.SourceIDs) == 0 {
		return true, nil
	}
	origin, err := s.core.Tenant(c.Tenant).DestinationOrigin(ctx, dstID)
	if err != nil || origin == "" {
		return err == nil, err
	}
	return c.Connection.Grant.AllowsSource(origin), nil
}

func (s *Server) getDestination(ctx context.Context, req *svcv1.GetDestinationRequest) (*svcv1.Destination, error) {
	return s.grantedDestination(ctx, callerFrom(ctx), req.GetId())
}

// grantedDestination reads a destination of the caller's tenant that the caller's grant
// reaches (403 otherwise): for reading it, and for every request that would write to it (an
// export or migration plan, a restore), so that a grant limited to some sources never writes
// into a destination made from another.
func (s *Server) grantedDestination(ctx context.Context, c *Caller, dstID string) (*svcv1.Destination, error) {
	d, err := s.core.Tenant(c.Tenant).Destination(ctx, dstID)
	if err != nil {
		return nil, err
	}
	ok, err := s.reachesDestination(ctx, c, d.DestinationId)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, newProblem(http.StatusForbidden, codeForbidden, "The connection's grant does not include the source of destination "+d.DestinationId+".")
	}
	return d, nil
}

func (s *Server) listDestinations(ctx context.Context, req *svcv1.ListDestinationsRequest) (*svcv1.ListDestinationsResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.DestinationServiceListDestinationsProcedure, req)
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	// Under a grant limited to sources, decide which destinations it reaches before listing:
	// the store's filter runs inside its read transaction, which must not open another.
	hidden := map[string]bool{}
	if c.Connection != nil && len(c.Connection.Grant.SourceIDs) > 0 {
		var ids []string
		if err := s.destinations.Scan(ctx, c.Tenant.String(), func(d *svcv1.Destination) bool {
			ids = append(ids, d.DestinationId)
			return true
		}); err != nil {
			return nil, err
		}
		for _, did := range ids {
			ok, err := s.reachesDestination(ctx, c, did)
			if err != nil {
				return nil, err
			}
			hidden[did] = !ok
		}
	}
	page, err := s.destinations.List(ctx, c.Tenant.String(), after, limit, func(d *svcv1.Destination) bool {
		return !hidden[d.DestinationId]
	})
	if err != nil {
		return nil, err
	}
	return &svcv1.ListDestinationsResponse{Data: nonNil(page.Items), NextCursor: s.nextCursor(binding, page.Last)}, nil
}
