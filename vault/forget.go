package vault

import "context"

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
	return nil
}
