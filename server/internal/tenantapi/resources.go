package tenantapi

import (
	"context"

	"svc.dev/svc"
	"svc.dev/svc/execute"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/server/internal/rpc"
)

// getReceipt serves a receipt's exact signed bytes (spec #17).
func (a *API) getReceipt(ctx context.Context, req *svcv1.GetReceiptRequest) (*svcv1.Receipt, error) {
	c := rpc.From(ctx)
	r, raw, err := a.Scope(c).Receipt(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	c.RawJSON = raw
	return r, nil
}

func (a *API) getSource(ctx context.Context, req *svcv1.GetSourceRequest) (*svcv1.Source, error) {
	return a.Scope(rpc.From(ctx)).Source(ctx, req.GetId())
}

func (a *API) listSources(ctx context.Context, req *svcv1.ListSourcesRequest) (*svcv1.ListSourcesResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.SourceServiceListSourcesProcedure, req)
	if err != nil {
		return nil, err
	}
	page, err := a.Scope(rpc.From(ctx)).ListSources(ctx, svc.SourceFilter{Status: req.Status, Provider: req.Provider}, after, limit)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListSourcesResponse{Data: rpc.NonNil(page.Items), NextCursor: a.Pager.Next(binding, page.Last)}, nil
}

// updateSourcePolicy replaces a source's policy (spec #21). A policy without a version gets
// the next revision number.
func (a *API) updateSourcePolicy(ctx context.Context, req *svcv1.UpdateSourcePolicyRequest) (*svcv1.Source, error) {
	return a.Scope(rpc.From(ctx)).UpdateSourcePolicy(ctx, req.GetId(), req.GetPolicy())
}

// createDestination makes a destination from a connected source (POST /v1/destinations): the
// source must be in the caller's grant (403), be one of the tenant's connected sources and have
// a provider that can write (400, path source_id). Its configuration is copied, resealed under
// the destination's own key, so the destination outlives changes to the source record.
func (a *API) createDestination(ctx context.Context, req *svcv1.CreateDestinationRequest) (*svcv1.Destination, error) {
	c := rpc.From(ctx)
	if req.PathTemplate != nil {
		if err := execute.CheckPathTemplate(req.GetPathTemplate()); err != nil {
			return nil, rpc.Invalid("path_template", err.Error())
		}
	}
	return a.Scope(c).DestinationFromSource(ctx, req.GetSourceId(), svc.DestinationOptions{Label: req.GetLabel(),
		PathTemplate: req.GetPathTemplate(), MetadataMapping: req.GetMetadataMapping(), PermissionMapping: req.GetPermissionMapping()})
}

func (a *API) getDestination(ctx context.Context, req *svcv1.GetDestinationRequest) (*svcv1.Destination, error) {
	return a.Scope(rpc.From(ctx)).Destination(ctx, req.GetId())
}

func (a *API) listDestinations(ctx context.Context, req *svcv1.ListDestinationsRequest) (*svcv1.ListDestinationsResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.DestinationServiceListDestinationsProcedure, req)
	if err != nil {
		return nil, err
	}
	page, err := a.Scope(rpc.From(ctx)).ListDestinations(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListDestinationsResponse{Data: rpc.NonNil(page.Items), NextCursor: a.Pager.Next(binding, page.Last)}, nil
}
