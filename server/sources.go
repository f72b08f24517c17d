package server

import (
	"context"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
)

// SourceSpec describes a source to connect (svc.SourceSpec).
type SourceSpec = svc.SourceSpec

// ConnectSource opens a provider to check it works, records a connected source in the tenant
// with its configuration sealed, and returns it. The connect flow and the seed job call it.
func (s *Server) ConnectSource(ctx context.Context, tenant platform.Tenant, spec SourceSpec) (*svcv1.Source, error) {
	return s.core.Tenant(tenant).ConnectSource(ctx, spec)
}

func (s *Server) getSource(ctx context.Context, req *svcv1.GetSourceRequest) (*svcv1.Source, error) {
	return s.scope(rpc.From(ctx)).Source(ctx, req.GetId())
}

func (s *Server) listSources(ctx context.Context, req *svcv1.ListSourcesRequest) (*svcv1.ListSourcesResponse, error) {
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.SourceServiceListSourcesProcedure, req)
	if err != nil {
		return nil, err
	}
	page, err := s.scope(rpc.From(ctx)).ListSources(ctx, svc.SourceFilter{Status: req.Status, Provider: req.Provider}, after, limit)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListSourcesResponse{Data: rpc.NonNil(page.Items), NextCursor: s.pager.Next(binding, page.Last)}, nil
}

// updateSourcePolicy replaces a source's policy (spec #21). A policy without a version gets
// the next revision number.
func (s *Server) updateSourcePolicy(ctx context.Context, req *svcv1.UpdateSourcePolicyRequest) (*svcv1.Source, error) {
	return s.scope(rpc.From(ctx)).UpdateSourcePolicy(ctx, req.GetId(), req.GetPolicy())
}
