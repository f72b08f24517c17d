package svc

import "context"

// FenceCluster is fenceCluster for the external tests: what an account's erasure does on
// the replica running it, before it erases anything.
func (sv *Instance) FenceCluster(ctx context.Context, tenant string) error {
	return sv.core.fenceCluster(ctx, tenant)
}
