package server

import (
	"context"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/tenantapi"
	"svc.dev/svc/storage/bolt"
)

// PutPlan stores a plan as the plan builder does: a header and its objects in chunks.
func (s *Server) PutPlan(ctx context.Context, tenant platform.Tenant, p *svcv1.Plan) error {
	return s.plans.Put(ctx, tenant.String(), p)
}

// PlanChunk is how many objects one stored chunk of a plan holds.
const PlanChunk = bolt.PlanChunk

// InlineObjects is how many objects a REST response of plans encodes at once; more stream.
const InlineObjects = tenantapi.InlineObjects

// DBOf is the bbolt database under a server that opened the default store, for tests that
// plant records directly.
func DBOf(s *Server) *bolt.DB { return s.Store().(*bolt.Seam).DB() }
