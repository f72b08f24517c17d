package svc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"svc.dev/svc/execute"
	"svc.dev/svc/platform"
	"svc.dev/svc/storage"
)

// A tenant's erasure in a cluster: the erasing replica's engine fence (execute.Engine.Fence)
// stops only what that replica runs. The account's record says the rest: once its deletion is
// due (status deleting, DeletionDueAt passed) every replica refuses to start, adopt or resume
// an execution of its tenants (erasing, checked by Execute and execClaims.Claim), and the
// erasing replica cancels, through the store, the executions of the tenant that other
// replicas run when it begins, and waits for them (fenceCluster).

// erasing reports whether tenant's account is due to be erased (or being erased): its
// deletion was scheduled and its grace period is over. A tenant of no account (an embedding
// program's) never is.
func (c *core) erasing(ctx context.Context, tenant string) (bool, error) {
	if c.hosted == nil {
		return false, nil
	}
	t, err := parseTenant(tenant)
	if err != nil {
		return false, nil
	}
	u, err := c.hosted.User(ctx, t.Owner)
	if errors.Is(err, platform.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("is %s being erased: %w", tenant, err)
	}
	return u.Status == platform.StatusDeleting && u.DeletionDueAt != nil && !c.now().Before(*u.DeletionDueAt), nil
}

// fenceCluster cancels the tenant's executions that run on any replica and waits until each
// has ended or is run by none (with the account's deletion due, none will run again: erasing).
// Without replicas it does nothing: the engine's own fence is the whole of it.
func (c *core) fenceCluster(ctx context.Context, tenant string) error {
	if c.replica == nil || c.leases == nil {
		return nil
	}
	return c.stopTenantExecutions(ctx, tenant)
}

// stopTenantExecutions cancels tenant's unfinished executions through the store and waits
// until each has ended, or no replica holds its lease (nobody runs it, and with the erasure
// lease held nobody will).
func (c *core) stopTenantExecutions(ctx context.Context, tenant string) error {
	all, err := execStore{c}.Unfinished(ctx)
	if err != nil {
		return fmt.Errorf("fence %s: %w", tenant, err)
	}
	var ids []string
	for _, te := range all {
		if te[0] == tenant {
			ids = append(ids, te[1])
			if err := c.engine.Cancel(ctx, tenant, te[1]); err != nil && !errors.Is(err, execute.ErrFinished) {
				return fmt.Errorf("fence %s: cancel %s: %w", tenant, te[1], err)
			}
		}
	}
	for _, id := range ids {
		for {
			stopped, err := c.executionStopped(ctx, tenant, id)
			if err != nil {
				return fmt.Errorf("fence %s: %w", tenant, err)
			}
			if stopped {
				break
			}
			if err := sleepCtx(ctx, 100*time.Millisecond); err != nil {
				return fmt.Errorf("fence %s: execution %s still runs: %w", tenant, id, err)
			}
		}
	}
	return nil
}

// executionStopped reports whether an execution has ended, or is run by no replica.
func (c *core) executionStopped(ctx context.Context, tenant, id string) (bool, error) {
	x, err := c.store.Executions().Get(ctx, tenant, id)
	if errors.Is(err, storage.ErrNotFound) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if x.GetFinishedAt() != nil {
		return true, nil
	}
	l, err := c.leases.Claim(ctx, "execution:"+tenant+"/"+id, c.replica.Holder+"/look", time.Second)
	if errors.Is(err, storage.ErrLeaseHeld) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, c.leases.Release(ctx, l)
}

// sleepCtx waits d, or until ctx ends (its error).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
