package server

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/server/internal/rpc"
)

// jobEvents announces job transitions as svc.job.* events of the job's tenant. The data
// never carries a download URL: an export's archive is fetched by reading the job with the
// account's own credential.
type jobEvents struct{ s *Server }

func (e jobEvents) JobEvent(ctx context.Context, tenant, typ string, j *svcv1.Job) {
	if j.GetKind() == svcv1.JobKind_JOB_KIND_DELETION && j.GetStatus() == svcv1.JobStatus_JOB_STATUS_SUCCEEDED {
		return // the account and its event stream are gone; an event would be a new trace
	}
	t, err := parseTenant(tenant)
	if err != nil {
		e.s.log.Error("job event", "job_id", j.GetId(), "err", err)
		return
	}
	data := map[string]any{"job_id": j.GetId(), "kind": rpc.EnumWire(j.GetKind()), "status": rpc.EnumWire(j.GetStatus()), "progress": j.GetProgress()}
	if j.GetResult() != nil {
		data["result"] = j.GetResult().AsMap()
	}
	if j.Error != nil {
		data["error"] = j.GetError()
	}
	e.s.emit(ctx, t, typ, "/v1/jobs", j.GetId(), data)
}

// jobStore is the jobs collection as the runner's Store.

// interruptJobs fails the jobs that were running when the process stopped (their owners start
// their work again where that makes sense: a due deletion is picked up by the deletion loop).
func (s *Server) interruptJobs(ctx context.Context) error {
	type found struct {
		tenant string
		job    *svcv1.Job
	}
	var running []found
	err := s.jobs.ScanAll(ctx, func(tenant, _ string, j *svcv1.Job) bool {
		if j.GetStatus() == svcv1.JobStatus_JOB_STATUS_RUNNING {
			running = append(running, found{tenant, j})
		}
		return true
	})
	if err != nil {
		return err
	}
	for _, f := range running {
		// A job another replica runs (it holds the job's lease) is not interrupted.
		if orphan, err := s.jobRunner.Orphan(ctx, f.tenant, f.job); err != nil {
			return err
		} else if !orphan {
			continue
		}
		if f.job.GetKind() == svcv1.JobKind_JOB_KIND_DELETION {
			// A deletion is finished, not abandoned: back to queued, the loop runs it again.
			if err := s.jobs.Update(ctx, f.tenant, f.job.GetId(), func(j *svcv1.Job) error {
				j.Status = svcv1.JobStatus_JOB_STATUS_QUEUED
				return nil
			}); err != nil {
				return err
			}
			continue
		}
		if err := s.jobRunner.Interrupted(ctx, f.tenant, f.job); err != nil {
			return err
		}
	}
	return nil
}

// orphanLoop looks, every lease time to live, for jobs left running by a replica that died
// (interruptJobs at start does it for this replica's own).
func (s *Server) orphanLoop(ctx context.Context) {
	every(ctx, s.replica.r.LeaseTTL, s.replica.r.LeaseTTL, func() {
		if err := s.interruptJobs(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("interrupted jobs", "err", err)
		}
	})
}

// jobsReached reports whether a caller sees the account's jobs: a job is about the whole
// account (a seed, an export, a deletion, a scrub), so a connection whose grant is limited to
// some sources does not reach it.
func jobsReached(c *Caller) bool {
	return c.Connection == nil || len(c.Connection.Grant.SourceIDs) == 0
}

var errJobOutsideGrant = rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "The connection's grant is limited to sources; jobs concern the whole account.")

func (s *Server) getJob(ctx context.Context, req *svcv1.GetJobRequest) (*svcv1.Job, error) {
	c := rpc.From(ctx)
	if !jobsReached(c) {
		return nil, errJobOutsideGrant
	}
	j, err := s.jobs.Get(ctx, c.Tenant.String(), req.GetId())
	if err != nil {
		return nil, err
	}
	return s.renderJob(ctx, j), nil
}

func (s *Server) listJobs(ctx context.Context, req *svcv1.ListJobsRequest) (*svcv1.ListJobsResponse, error) {
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.JobServiceListJobsProcedure, req)
	if err != nil {
		return nil, err
	}
	c := rpc.From(ctx)
	if !jobsReached(c) {
		return &svcv1.ListJobsResponse{Data: []*svcv1.Job{}}, nil
	}
	page, err := s.jobs.List(ctx, c.Tenant.String(), after, limit, func(j *svcv1.Job) bool {
		return (req.Kind == nil || j.GetKind() == req.GetKind()) && (req.Status == nil || j.GetStatus() == req.GetStatus())
	})
	if err != nil {
		return nil, err
	}
	out := &svcv1.ListJobsResponse{Data: []*svcv1.Job{}, NextCursor: s.pager.Next(binding, page.Last)}
	for _, j := range page.Items {
		out.Data = append(out.Data, s.renderJob(ctx, j))
	}
	return out, nil
}

// cancelJob cancels a queued or running job; cancelling a queued deletion keeps the account.
func (s *Server) cancelJob(ctx context.Context, req *svcv1.CancelJobRequest) (*svcv1.Job, error) {
	c := rpc.From(ctx)
	if !jobsReached(c) {
		return nil, errJobOutsideGrant
	}
	tenant := c.Tenant.String()
	j, err := s.jobs.Get(ctx, tenant, req.GetId())
	if err != nil {
		return nil, err
	}
	if j.GetKind() == svcv1.JobKind_JOB_KIND_DELETION && c.User == nil {
		return nil, rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "Only the account's user, signed in, can cancel its deletion.")
	}
	started := rpc.NewProblem(http.StatusConflict, rpc.CodeInvalidState, "The account's deletion has started; it can no longer be cancelled.")
	if j.GetKind() == svcv1.JobKind_JOB_KIND_DELETION {
		// Checked in the cancel's own write: a deletion that starts meanwhile is not cancelled.
		j, err = s.jobRunner.CancelQueued(ctx, tenant, req.GetId())
		if errors.Is(err, job.ErrNotQueued) {
			return nil, started
		}
	} else {
		j, err = s.jobRunner.Cancel(ctx, tenant, req.GetId())
	}
	if errors.Is(err, job.ErrFinished) {
		return nil, rpc.NewProblem(http.StatusConflict, rpc.CodeInvalidState, "The job has finished; only a queued or running job can be cancelled.")
	}
	if err != nil {
		return nil, err
	}
	if j.GetKind() == svcv1.JobKind_JOB_KIND_DELETION {
		if err := s.keepAccount(ctx, c.Tenant.Owner, j.GetId()); err != nil {
			return nil, err
		}
	}
	return s.renderJob(ctx, j), nil
}

// renderJob is a job as served: a finished export's result gains a fresh download URL when
// the account's user reads it. An application reading it through a connection sees the job
// but no URL: the archive holds the whole account, far beyond any grant.
func (s *Server) renderJob(ctx context.Context, j *svcv1.Job) *svcv1.Job {
	if j.GetKind() != svcv1.JobKind_JOB_KIND_EXPORT || j.GetStatus() != svcv1.JobStatus_JOB_STATUS_SUCCEEDED || j.GetResult() == nil {
		return j
	}
	if c := rpc.From(ctx); c == nil || c.User == nil {
		return j
	}
	out := proto.Clone(j).(*svcv1.Job)
	s.addDownloadURL(ctx, out)
	return out
}
