package server

import (
	"context"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/internal/platform"
	"svc.dev/svc/internal/store"
)

// PutPlan stores a plan as the plan builder does: a header and its objects in chunks.
func (s *Server) PutPlan(ctx context.Context, tenant platform.Tenant, p *svcv1.Plan) error {
	return s.plans.Put(ctx, tenant.String(), p)
}

// PlanChunk is how many objects one stored chunk of a plan holds.
const PlanChunk = store.PlanChunk

// InlineObjects is how many objects a REST response of plans encodes at once; more stream.
const InlineObjects = store.InlineObjects
