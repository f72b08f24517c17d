// Package insightapi serves what svc notices for a tenant: the intel endpoints (billing meters
// and trials) and creator revenue reconciliation (revenue sources, statements, items and
// anomalies). Every handler is one call of the tenant's scope, which decides authorization.
package insightapi

import (
	"context"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/server/internal/rpc"
)

// Meter counts billable operations (platform.Meter).
type Meter interface {
	Add(orgID, appID, meter string, quantity float64)
}

// Jobs records and starts jobs (job.Runner).
type Jobs interface {
	Create(ctx context.Context, tenant string, kind svcv1.JobKind) (*svcv1.Job, error)
	Go(tenant, id string, fn job.Func)
}

// API holds what the endpoints use.
type API struct {
	// Scope is the layer's scope of a request's caller.
	Scope func(c *rpc.Caller) *svc.Scope
	Pager rpc.Pager
	Meter Meter
	Jobs  Jobs
}

// Handlers returns the implementation of each procedure the API serves, by procedure.
func (a *API) Handlers() map[string]rpc.Handler {
	return map[string]rpc.Handler{
		svcv1connect.IntelServiceListMetersProcedure:            rpc.Handle(a.listMeters),
		svcv1connect.IntelServiceGetMeterProcedure:              rpc.Handle(a.getMeter),
		svcv1connect.IntelServiceActOnMeterProcedure:            rpc.Handle(a.actOnMeter),
		svcv1connect.IntelServiceListTrialsProcedure:            rpc.Handle(a.listTrials),
		svcv1connect.IntelServiceGetTrialProcedure:              rpc.Handle(a.getTrial),
		svcv1connect.IntelServiceDecideTrialProcedure:           rpc.Handle(a.decideTrial),
		svcv1connect.CreatorServiceCreateCreatorSourceProcedure: rpc.Handle(a.createCreatorSource),
		svcv1connect.CreatorServiceGetCreatorSourceProcedure:    rpc.Handle(a.getCreatorSource),
		svcv1connect.CreatorServiceListCreatorSourcesProcedure:  rpc.Handle(a.listCreatorSources),
		svcv1connect.CreatorServiceDeleteCreatorSourceProcedure: rpc.Handle(a.deleteCreatorSource),
		svcv1connect.CreatorServiceUploadStatementProcedure:     rpc.Handle(a.uploadStatement),
		svcv1connect.CreatorServiceSyncCreatorProcedure:         rpc.Handle(a.syncCreator),
		svcv1connect.CreatorServiceListRevenueItemsProcedure:    rpc.Handle(a.listRevenueItems),
		svcv1connect.CreatorServiceGetRevenueItemProcedure:      rpc.Handle(a.getRevenueItem),
		svcv1connect.CreatorServiceListAnomaliesProcedure:       rpc.Handle(a.listAnomalies),
		svcv1connect.CreatorServiceGetAnomalyProcedure:          rpc.Handle(a.getAnomaly),
		svcv1connect.CreatorServiceDismissAnomalyProcedure:      rpc.Handle(a.dismissAnomaly),
		svcv1connect.CreatorServiceReopenAnomalyProcedure:       rpc.Handle(a.reopenAnomaly),
	}
}
