package server

import (
	"context"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
)

// UnendExecution puts an ended execution back as the process left it when it died between
// storing the receipt and recording the execution's end: running, without receipt_id and
// finished_at. (Its end events were in that last transaction: ForgetEvents removes them.)
func (s *Server) UnendExecution(ctx context.Context, tenant platform.Tenant, exeID string) error {
	return s.executions.Update(ctx, tenant.String(), exeID, func(x *svcv1.Execution) error {
		x.Status, x.ReceiptId, x.FinishedAt = svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING, nil, nil
		return nil
	})
}

// ResumeExecutions resumes unfinished executions, as a restart does, and waits for them.
func (s *Server) ResumeExecutions(ctx context.Context) error {
	if err := s.core.Resume(ctx); err != nil {
		return err
	}
	s.core.WaitExecutions()
	return nil
}

// ForgetEvents removes events from the streams of a tenant and of the applications that reach
// it, as if the process had died before publishing them.
func (s *Server) ForgetEvents(ctx context.Context, tenant platform.Tenant, ids []string) error {
	apps, err := s.devs.Reaching(ctx, tenant)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := s.eventLog.Delete(ctx, tenant.String(), id); err != nil {
			return err
		}
		for _, app := range apps {
			if err := s.eventLog.Delete(ctx, rpc.AppStream(app, tenant.Mode), id); err != nil {
				return err
			}
		}
	}
	return nil
}
