package server

import (
	"context"
	"errors"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/server/internal/rpc"
)

// DefaultDeletionGrace is how long after DELETE /v1/account the account's deletion runs; until
// then cancelling the deletion job keeps the account.
const DefaultDeletionGrace = 7 * 24 * time.Hour

const statusDeleting = platform.StatusDeleting

// deleteAccount marks the signed-in account deleting and queues its deletion job, due after
// the grace period. The job is in the user's live tenant whatever Svc-Mode says; asking again
// while the account is deleting answers the same job.
func (s *Server) deleteAccount(ctx context.Context, _ *svcv1.DeleteAccountRequest) (*svcv1.Job, error) {
	c := rpc.From(ctx)
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
			return s.core.EraseAccount(ctx, svc.Erasure{User: u, JobID: d.jobID, Jobs: s.jobRunner, RemoveExport: s.exports.Remove}, p)
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
