package svc

import (
	"context"
	"errors"
	"fmt"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
)

// Erasure is what erasing an account needs beyond the instance: the account, its deletion
// job (whose record is kept), the job runner whose jobs of the account are stopped, and how
// to remove an export archive.
type Erasure struct {
	User         *platform.User
	JobID        string
	Jobs         *job.Runner
	RemoveExport func(jobID string) error
}

// EraseAccount removes every trace of a user (docs/account.md says what is kept and why):
// the vault content of both tenants (each object deleted, then the tenant's vault records and
// data key), every tenant-scoped record (plans, executions and their journals, sources with
// their sealed provider tokens, destinations, manifests, events, jobs, exports), the user
// record, sessions and connections. Kept: receipts of executions a developer application
// ran (the application already holds them), this deletion job's record, and the
// organizations the user created, whose API keys are revoked.
func (sv *Instance) EraseAccount(ctx context.Context, e Erasure, p *job.Progress) (map[string]any, error) {
	c, u, jobID := sv.core, e.User, e.JobID
	if c.hosted == nil {
		return nil, fmt.Errorf("erase an account: the store keeps no accounts (storage.Hosted): %w", ErrUnsupported)
	}
	tenants := []string{
		platform.Tenant{Owner: u.ID, Mode: platform.ModeLive}.String(),
		platform.Tenant{Owner: u.ID, Mode: platform.ModeTest}.String(),
	}
	// Nothing of the account runs from here on: its executions are cancelled (each ends with
	// its receipt) and its other jobs stopped, and none starts again, before anything is erased.
	for _, t := range tenants {
		if err := c.engine.Fence(ctx, t); err != nil {
			return nil, err
		}
		// In a cluster, the other replicas too (erasurefence.go): the account's deletion is
		// due, so none starts one of the tenant's executions, and those running are stopped.
		if err := c.fenceCluster(ctx, t); err != nil {
			return nil, err
		}
		if err := e.Jobs.Fence(ctx, t, jobID); err != nil {
			return nil, err
		}
	}
	keep := map[string][]storage.Ref{tenants[0]: {{Kind: storage.KindJob, ID: jobID}}}
	receiptsKept := 0
	var objects, exports []struct{ tenant, id string }
	for _, t := range tenants {
		err := c.vault.Each(ctx, t, func(o vault.Object) error {
			objects = append(objects, struct{ tenant, id string }{t, o.ID})
			return nil
		})
		if err != nil {
			return nil, err
		}
		for j, err := range c.hosted.Resources().Jobs().All(ctx, t, func(j *svcv1.Job) bool { return j.GetKind() == svcv1.JobKind_JOB_KIND_EXPORT }) {
			if err != nil {
				return nil, err
			}
			exports = append(exports, struct{ tenant, id string }{t, j.GetId()})
		}
		kept, err := c.receiptsGivenToApps(ctx, t)
		if err != nil {
			return nil, err
		}
		for _, rid := range kept {
			keep[t] = append(keep[t], storage.Ref{Kind: storage.KindReceipt, ID: rid})
			receiptsKept++
		}
	}
	total := int64(len(objects) + 3)
	done := int64(0)
	for _, o := range objects {
		if _, err := c.vault.Delete(ctx, o.tenant, o.id); err != nil && !errors.Is(err, vault.ErrNotFound) {
			return nil, fmt.Errorf("delete vault object %s: %w", o.id, err)
		}
		done++
		p.Fraction(ctx, done, total)
	}
	for _, x := range exports {
		if err := e.RemoveExport(x.id); err != nil {
			return nil, err
		}
	}
	revoked, err := platform.NewDevelopers(c.hosted, c.now).RevokeOrgKeys(ctx, u.OrgIDs)
	if err != nil {
		return nil, err
	}
	done++
	p.Fraction(ctx, done, total)
	erased := 0
	for _, t := range tenants {
		if err := c.vault.Forget(ctx, t); err != nil {
			return nil, fmt.Errorf("forget vault tenant: %w", err)
		}
		n, err := c.hosted.EraseTenant(ctx, t, keep[t])
		erased += n
		if err != nil {
			return nil, fmt.Errorf("erase %s: %w", t, err)
		}
		if err := c.forgetCreatorTenant(ctx, t); err != nil {
			return nil, fmt.Errorf("erase %s: %w", t, err)
		}
		// Last, once no record of the tenant is left to feed it: its search index and opened
		// providers.
		if tt, err := parseTenant(t); err == nil {
			sv.Tenant(tt).ForgetTenant()
		}
	}
	done++
	p.Fraction(ctx, done, total)
	if err := c.hosted.DeleteUser(ctx, u.ID); err != nil && !errors.Is(err, platform.ErrNotFound) {
		return nil, fmt.Errorf("delete user: %w", err)
	}
	return map[string]any{
		"vault_objects_deleted": len(objects),
		"records_erased":        erased,
		"receipts_kept":         receiptsKept,
		"api_keys_revoked":      revoked,
	}, nil
}

// receiptsGivenToApps lists the receipts of a tenant's executions whose plan a developer
// application made: the application was given the receipt, and its verification must keep
// working.
func (c *core) receiptsGivenToApps(ctx context.Context, tenant string) ([]string, error) {
	type pair struct{ plan, receipt string }
	var withReceipts []pair
	for e, err := range c.hosted.Resources().Executions().All(ctx, tenant, func(e *svcv1.Execution) bool { return e.GetReceiptId() != "" }) {
		if err != nil {
			return nil, err
		}
		withReceipts = append(withReceipts, pair{e.GetPlanId(), e.GetReceiptId()})
	}
	var out []string
	for _, x := range withReceipts {
		p, err := c.store.Plans().Header(ctx, tenant, x.plan)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if p.GetActor().GetType() == svcv1.ActorType_ACTOR_TYPE_DEVELOPER_APPLICATION {
			out = append(out, x.receipt)
		}
	}
	return out, nil
}
