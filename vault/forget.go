package vault

import (
	"context"
	"fmt"

	"svc.dev/svc/vault/backend"
)

// Forget ends a tenant's presence in this process once all its objects were deleted (an erased
// account): its open pack is closed, and removed when no entry in it is used any more, and its
// keys leave memory. Its records and data key are the caller's to erase from Meta afterwards; a
// later call on the tenant starts afresh.
func (v *Vault) Forget(ctx context.Context, tenant string) error {
	if err := validTenant(tenant); err != nil {
		return err
	}
	v.mu.Lock()
	t := v.tenants[tenant]
	delete(v.tenants, tenant)
	v.mu.Unlock()
	if t == nil {
		return nil
	}
	t.group.closeOpen(ctx)
	t.mu.Lock()
	t.dataKey, t.nameKey = nil, nil
	t.mu.Unlock()
	// Its directories, left empty by the deletion of its objects, go too: a directory named
	// after an erased tenant is a trace of it.
	for _, b := range []backend.Backend{v.hot, v.cold} {
		if p, ok := b.(backend.Pruner); ok {
			if err := p.Prune(ctx, t.prefix); err != nil {
				return fmt.Errorf("forget tenant: %w", err)
			}
		}
	}
	return nil
}
