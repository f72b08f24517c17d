package server

import (
	"context"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/insightapi"
)

// ReconcileCreator reconciles a tenant's revenue sources now, as a job of kind reconcile
// (svc.job.* events; svc.Scope.ReconcileCreator).
func (s *Server) ReconcileCreator(ctx context.Context, tenant platform.Tenant) (*svcv1.Job, error) {
	return s.jobRunner.Run(ctx, tenant.String(), svcv1.JobKind_JOB_KIND_RECONCILE, insightapi.ReconcileJob(s.core.Tenant(tenant)))
}

// DefaultCreatorReconcileEvery is how often creatorLoop reconciles connected revenue sources
// when the host sets no interval (docs/creator.md).
const DefaultCreatorReconcileEvery = 6 * time.Hour

// creatorLoop reconciles, every interval (the first time a minute after start), the revenue
// sources of every tenant that has some (svc.Instance.CreatorTenants), each tenant as a
// reconcile job, until ctx ends.
func (s *Server) creatorLoop(ctx context.Context, interval time.Duration) {
	every(ctx, min(interval, time.Minute), interval, func() {
		tenants, err := s.core.CreatorTenants(ctx)
		if err != nil {
			s.log.Error("creator reconcile: list tenants", "err", err)
			return
		}
		for _, t := range tenants {
			if _, err := s.ReconcileCreator(ctx, t); err != nil && ctx.Err() == nil {
				s.log.Error("creator reconcile", "tenant", t.String(), "err", err)
			}
		}
	})
}
