package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
)

// DefaultDeletionGrace is how long after DELETE /v1/account the account's deletion runs; until
// then cancelling the deletion job keeps the account.
const DefaultDeletionGrace = 7 * 24 * time.Hour

const statusDeleting = platform.StatusDeleting

// deleteAccount marks the signed-in account deleting and queues its deletion job, due after
// the grace period. The job is in the user's live tenant whatever Svc-Mode says; asking again
// while the account is deleting answers the same job.
func (s *Server) deleteAccount(ctx context.Context, _ *svcv1.DeleteAccountRequest) (*svcv1.Job, error) {
	c := callerFrom(ctx)
	live := platform.Tenant{Owner: c.User.ID, Mode: platform.ModeLive}.String()
	if c.User.Status == statusDeleting && c.User.DeletionJobID != "" {
		return s.jobs.Get(ctx, live, c.User.DeletionJobID)
	}
	j, err := s.jobRunner.Create(ctx, live, svcv1.JobKind_JOB_KIND_DELETION)
	if err != nil {
		return nil, err
	}
	u, err := s.accounts.ScheduleDeletion(ctx, c.User.ID, j.GetId(), s.cfg.Now().Add(s.deletionGrace()))
	if err != nil {
		return nil, err
	}
	if u.DeletionJobID != j.GetId() { // a concurrent request scheduled it first
		if _, err := s.jobRunner.Cancel(ctx, live, j.GetId()); err != nil {
			s.log.Error("cancel duplicate deletion job", "job_id", j.GetId(), "err", err)
		}
		return s.jobs.Get(ctx, live, u.DeletionJobID)
	}
	return j, nil
}

func (s *Server) deletionGrace() time.Duration {
	if s.cfg.DeletionGrace > 0 {
		return s.cfg.DeletionGrace
	}
	return DefaultDeletionGrace
}

// keepAccount makes an account active again after its deletion job was cancelled.
func (s *Server) keepAccount(ctx context.Context, userID, jobID string) error {
	_, err := s.accounts.KeepAccount(ctx, userID, jobID)
	if errors.Is(err, platform.ErrNotFound) {
		return nil
	}
	return err
}

// RunDueDeletions runs the deletion jobs whose grace period has ended (the background loop
// calls it every minute; tools and tests may call it directly). It returns how many ran.
func (s *Server) RunDueDeletions(ctx context.Context) (int, error) {
	type due struct{ tenant, jobID string }
	var queued []due
	err := s.jobs.ScanAll(ctx, func(tenant, id string, j *svcv1.Job) bool {
		if j.GetKind() == svcv1.JobKind_JOB_KIND_DELETION && j.GetStatus() == svcv1.JobStatus_JOB_STATUS_QUEUED {
			queued = append(queued, due{tenant, id})
		}
		return true
	})
	if err != nil {
		return 0, err
	}
	ran := 0
	for _, d := range queued {
		t, err := parseTenant(d.tenant)
		if err != nil {
			continue
		}
		u, err := s.accounts.User(ctx, t.Owner)
		if err != nil || u.DeletionJobID != d.jobID || u.DeletionDueAt == nil || s.cfg.Now().Before(*u.DeletionDueAt) {
			continue
		}
		_, err = s.jobRunner.Execute(ctx, d.tenant, d.jobID, func(ctx context.Context, p *job.Progress) (map[string]any, error) {
			return s.eraseAccount(ctx, u, d.jobID, p)
		})
		if errors.Is(err, job.ErrNotQueued) {
			continue // cancelled meanwhile
		}
		if err != nil {
			return ran, err
		}
		ran++
	}
	return ran, nil
}

// deletionLoop runs due deletions every minute, and closes billing months every hour, until
// ctx ends.
func (s *Server) deletionLoop(ctx context.Context) {
	var closed time.Time
	every(ctx, 0, time.Minute, func() {
		if _, err := s.RunDueDeletions(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("account deletions", "err", err)
		}
		s.exports.Purge()
		if time.Since(closed) >= time.Hour {
			closed = time.Now()
			if _, err := s.CloseMonths(ctx); err != nil && ctx.Err() == nil {
				s.log.Error("billing month close", "err", err)
			}
		}
	})
}

// eraseAccount removes every trace of a user (docs/account.md says what is kept and why):
// the vault content of both tenants (each object deleted, then the tenant's vault records and
// data key), every tenant-scoped record (plans, executions and their journals, sources with
// their sealed provider tokens, destinations, manifests, events, jobs, exports), the user
// record, sessions and connections. Kept: receipts of executions a developer application
// ran (the application already holds them), this deletion job's record, and the
// organizations the user created, whose API keys are revoked.
func (s *Server) eraseAccount(ctx context.Context, u *platform.User, jobID string, p *job.Progress) (map[string]any, error) {
	tenants := []string{
		platform.Tenant{Owner: u.ID, Mode: platform.ModeLive}.String(),
		platform.Tenant{Owner: u.ID, Mode: platform.ModeTest}.String(),
	}
	keep := map[string][]storage.Ref{tenants[0]: {{Kind: storage.KindJob, ID: jobID}}}
	receiptsKept := 0
	var objects, exports []struct{ tenant, id string }
	for _, t := range tenants {
		err := svc.EachVaultObject(ctx, s.vault, t, func(o vault.Object) error {
			objects = append(objects, struct{ tenant, id string }{t, o.ID})
			return nil
		})
		if err != nil {
			return nil, err
		}
		for j, err := range s.jobs.All(ctx, t, func(j *svcv1.Job) bool { return j.GetKind() == svcv1.JobKind_JOB_KIND_EXPORT }) {
			if err != nil {
				return nil, err
			}
			exports = append(exports, struct{ tenant, id string }{t, j.GetId()})
		}
		kept, err := s.receiptsGivenToApps(ctx, t)
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
		if _, err := s.vault.Delete(ctx, o.tenant, o.id); err != nil && !errors.Is(err, vault.ErrNotFound) {
			return nil, fmt.Errorf("delete vault object %s: %w", o.id, err)
		}
		done++
		p.Fraction(ctx, done, total)
	}
	for _, x := range exports {
		if err := s.exports.Remove(x.id); err != nil {
			return nil, err
		}
	}
	revoked, err := s.revokeOwnedKeys(ctx, u)
	if err != nil {
		return nil, err
	}
	done++
	p.Fraction(ctx, done, total)
	erased := 0
	for _, t := range tenants {
		if tt, err := svc.ParseTenant(t); err == nil {
			s.core.Tenant(tt).ForgetTenant()
		}
		if err := s.vault.Forget(ctx, t); err != nil {
			return nil, fmt.Errorf("forget vault tenant: %w", err)
		}
		n, err := s.store.EraseTenant(ctx, t, keep[t])
		erased += n
		if err != nil {
			return nil, fmt.Errorf("erase %s: %w", t, err)
		}
	}
	done++
	p.Fraction(ctx, done, total)
	if err := s.store.DeleteUser(ctx, u.ID); err != nil && !errors.Is(err, platform.ErrNotFound) {
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
func (s *Server) receiptsGivenToApps(ctx context.Context, tenant string) ([]string, error) {
	type pair struct{ plan, receipt string }
	var withReceipts []pair
	for e, err := range s.executions.All(ctx, tenant, func(e *svcv1.Execution) bool { return e.GetReceiptId() != "" }) {
		if err != nil {
			return nil, err
		}
		withReceipts = append(withReceipts, pair{e.GetPlanId(), e.GetReceiptId()})
	}
	var out []string
	for _, x := range withReceipts {
		p, err := s.plans.Header(ctx, tenant, x.plan)
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

// revokeOwnedKeys revokes every API key of the applications of the organizations the user
// created.
func (s *Server) revokeOwnedKeys(ctx context.Context, u *platform.User) (int, error) {
	n := 0
	for _, orgID := range u.OrgIDs {
		apps, err := s.devs.Applications(ctx, orgID)
		if err != nil {
			return n, err
		}
		for _, a := range apps {
			keys, err := s.devs.Keys(ctx, a.ID)
			if err != nil {
				return n, err
			}
			for _, k := range keys {
				if k.RevokedAt != nil {
					continue
				}
				if _, err := s.devs.RevokeKey(ctx, a.ID, k.ID); err != nil {
					return n, err
				}
				n++
			}
		}
	}
	return n, nil
}
