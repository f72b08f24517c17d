package server

import (
	"context"
	"fmt"

	"svc.dev/svc/platform"
)

// RefinishExecution runs the finisher of a finished execution again, as the engine does when a
// crash came between the receipt and the execution's last update.
func (s *Server) RefinishExecution(ctx context.Context, tenant platform.Tenant, exeID string) (string, error) {
	x, err := s.executions.Get(ctx, tenant.String(), exeID)
	if err != nil {
		return "", err
	}
	p, err := s.plans.get(ctx, tenant.String(), x.GetPlanId())
	if err != nil {
		return "", err
	}
	journal, err := execStore{s}.Journal(ctx, tenant.String(), exeID)
	if err != nil {
		return "", fmt.Errorf("journal: %w", err)
	}
	return finisher{s}.Finish(ctx, tenant.String(), x, p, journal)
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
			if err := s.eventLog.Delete(ctx, appStream(app, tenant.Mode), id); err != nil {
				return err
			}
		}
	}
	return nil
}
