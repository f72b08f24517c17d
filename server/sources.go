package server

import (
	"context"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
)

// SourceSpec describes a source to connect (svc.SourceSpec).
type SourceSpec = svc.SourceSpec

// ConnectSource opens a provider to check it works, records a connected source in the tenant
// with its configuration sealed, and returns it. The connect flow and the seed job call it.
func (s *Server) ConnectSource(ctx context.Context, tenant platform.Tenant, spec SourceSpec) (*svcv1.Source, error) {
	return s.core.Tenant(tenant).ConnectSource(ctx, spec)
}

func (s *Server) getSource(ctx context.Context, req *svcv1.GetSourceRequest) (*svcv1.Source, error) {
	c := callerFrom(ctx)
	src, err := s.core.Tenant(c.Tenant).Source(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return src, c.sourceInGrant(src.Id)
}

func (s *Server) listSources(ctx context.Context, req *svcv1.ListSourcesRequest) (*svcv1.ListSourcesResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.SourceServiceListSourcesProcedure, req)
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	page, err := s.sources.List(ctx, c.Tenant.String(), after, limit, func(src *svcv1.Source) bool {
		return (req.Status == nil || src.GetStatus() == req.GetStatus()) &&
			(req.Provider == nil || src.GetProvider() == req.GetProvider()) && c.sourceInGrant(src.Id) == nil
	})
	if err != nil {
		return nil, err
	}
	return &svcv1.ListSourcesResponse{Data: nonNil(page.Items), NextCursor: s.nextCursor(binding, page.Last)}, nil
}

// updateSourcePolicy replaces a source's policy (spec #21). A policy without a version gets
// the next revision number.
func (s *Server) updateSourcePolicy(ctx context.Context, req *svcv1.UpdateSourcePolicyRequest) (*svcv1.Source, error) {
	c := callerFrom(ctx)
	t := s.core.Tenant(c.Tenant)
	// Another tenant's source is not found, whatever the grant; the tenant's own outside the
	// grant is refused.
	if _, err := t.Source(ctx, req.GetId()); err != nil {
		return nil, err
	}
	if err := c.sourceInGrant(req.GetId()); err != nil {
		return nil, err
	}
	return t.UpdateSourcePolicy(ctx, req.GetId(), req.GetPolicy())
}
