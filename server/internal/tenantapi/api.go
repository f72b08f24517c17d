// Package tenantapi serves a tenant's resources: sources and their policies, destinations,
// plans, executions, receipts, the vault, undo and the event stream. Every handler decodes
// nothing itself (the edge did), makes one call of the caller's scope (svc.Scope), which
// decides authorization on every resource the request names, and returns the message.
package tenantapi

import (
	"context"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/storage"
)

// Usage makes the write that meters usage in the transaction of a change (storage.Usage).
type Usage interface {
	Write(deltas []platform.UsageDelta) storage.Write
}

// API holds what the endpoints use.
type API struct {
	// Scope is the layer's scope of a request's caller.
	Scope func(c *rpc.Caller) *svc.Scope
	Pager rpc.Pager
	Now   func() time.Time
	// Billing is the commercial context of a live developer key for plan estimates and
	// authorization (nil for everyone else).
	Billing func(ctx context.Context, c *rpc.Caller) (*plan.Billing, error)
	// Usage meters a live plan in the transaction that stores it.
	Usage Usage
	// OwnsApplication reports whether a signed-in user owns the organization of an
	// application (a plan's developer-owner approval).
	OwnsApplication func(ctx context.Context, c *rpc.Caller, appID string) bool
	// EventLog holds the event streams.
	EventLog storage.Records[*svcv1.Event]
}

// Handlers returns the implementation of each procedure the API serves, by procedure.
func (a *API) Handlers() map[string]rpc.Handler {
	return map[string]rpc.Handler{
		svcv1connect.SourceServiceListSourcesProcedure:            rpc.Handle(a.listSources),
		svcv1connect.SourceServiceGetSourceProcedure:              rpc.Handle(a.getSource),
		svcv1connect.SourceServiceUpdateSourcePolicyProcedure:     rpc.Handle(a.updateSourcePolicy),
		svcv1connect.DestinationServiceCreateDestinationProcedure: rpc.Handle(a.createDestination),
		svcv1connect.DestinationServiceListDestinationsProcedure:  rpc.Handle(a.listDestinations),
		svcv1connect.DestinationServiceGetDestinationProcedure:    rpc.Handle(a.getDestination),
		svcv1connect.PlanServiceListPlansProcedure:                rpc.Handle(a.listPlans),
		svcv1connect.PlanServiceCreatePlanProcedure:               rpc.Handle(a.createPlan),
		svcv1connect.PlanServiceGetPlanProcedure:                  rpc.Handle(a.getPlan),
		svcv1connect.PlanServiceListPlanObjectsProcedure:          rpc.Handle(a.listPlanObjects),
		svcv1connect.PlanServiceAuthorizePlanProcedure:            rpc.Handle(a.authorizePlan),
		svcv1connect.PlanServiceCancelPlanProcedure:               rpc.Handle(a.cancelPlan),
		svcv1connect.ExecutionServiceListExecutionsProcedure:      rpc.Handle(a.listExecutions),
		svcv1connect.ExecutionServiceListExecutionStepsProcedure:  rpc.Handle(a.listExecutionSteps),
		svcv1connect.ExecutionServiceGetExecutionProcedure:        rpc.Handle(a.getExecution),
		svcv1connect.ExecutionServiceExecutePlanProcedure:         rpc.Handle(a.executePlan),
		svcv1connect.ExecutionServiceCancelExecutionProcedure:     rpc.Handle(a.cancelExecution),
		svcv1connect.ReceiptServiceGetReceiptProcedure:            rpc.Handle(a.getReceipt),
		svcv1connect.ReceiptServiceRestoreReceiptProcedure:        rpc.Handle(a.restoreReceipt),
		svcv1connect.VaultServiceListVaultObjectsProcedure:        rpc.Handle(a.listVaultObjects),
		svcv1connect.VaultServiceGetVaultObjectProcedure:          rpc.Handle(a.getVaultObject),
		svcv1connect.VaultServiceGetVaultObjectContentProcedure:   rpc.Handle(a.getVaultObjectContent),
		svcv1connect.VaultServiceExportManifestsProcedure:         rpc.Handle(a.exportManifests),
		svcv1connect.VaultServiceRestoreVaultObjectProcedure:      rpc.Handle(a.restoreVaultObject),
		svcv1connect.VaultServiceGetVaultCoverageProcedure:        rpc.Handle(a.getVaultCoverage),
		svcv1connect.EventServiceListEventsProcedure:              rpc.Handle(a.listEvents),
	}
}
