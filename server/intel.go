package server

import (
	"context"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/job"
)

// ScanIntel scans a tenant's connected mail with the intel detectors now, as a job of kind
// scan (svc.job.* events), and stores the meters and trials found (svc.Scope.ScanIntel).
func (s *Server) ScanIntel(ctx context.Context, tenant platform.Tenant) (*svcv1.Job, error) {
	return s.jobRunner.Run(ctx, tenant.String(), svcv1.JobKind_JOB_KIND_SCAN, func(ctx context.Context, p *job.Progress) (map[string]any, error) {
		rep, err := s.core.Tenant(tenant).ScanIntel(ctx)
		if err != nil {
			return nil, err
		}
		metered := s.meterScan(ctx, tenant, rep)
		return map[string]any{"type": "intel_scan", "sources": float64(rep.Sources), "messages": float64(rep.Messages),
			"skipped": float64(rep.Skipped), "meters": float64(rep.Meters), "trials": float64(rep.Trials), "metered": float64(metered)}, nil
	})
}

// meterScan meters a live tenant's scan that read new mail (rate card: intelligence
// operations): one operation for each application whose active live connection to the user
// grants monitor, the operation class of the intel endpoints, since each of them receives what
// the scan found. A scan that read nothing new, a test tenant's, or one no application is
// connected for, is not metered. It returns how many operations were counted.
func (s *Server) meterScan(ctx context.Context, tenant platform.Tenant, rep svc.IntelScanReport) int {
	if tenant.Mode != platform.ModeLive || rep.Messages == 0 {
		return 0
	}
	conns, err := s.devs.ConnectionsOfUser(ctx, tenant.Owner)
	if err != nil {
		s.log.Error("intel scan: meter: list connections", "tenant", tenant.String(), "err", err)
		return 0
	}
	n := 0
	for _, c := range conns {
		if c.Mode == platform.ModeLive && c.Status == "active" && c.Grant.Allows("monitor") {
			s.meter.Add(c.OrgID, c.AppID, platform.MeterIntelligenceOps, 1)
			n++
		}
	}
	return n
}

// intelLoop scans, every interval (the first time a minute after start), the connected mail of
// every tenant that has some, as scan jobs, until ctx ends.
func (s *Server) intelLoop(ctx context.Context, interval time.Duration) {
	every(ctx, min(interval, time.Minute), interval, func() {
		tenants := map[string]bool{}
		err := s.sources.ScanAll(ctx, func(tenant, _ string, src *svcv1.Source) bool {
			if src.GetKind() == "mail" && src.GetStatus() == svcv1.SourceStatus_SOURCE_STATUS_CONNECTED {
				tenants[tenant] = true
			}
			return true
		})
		if err != nil {
			s.log.Error("intel scan: list sources", "err", err)
			return
		}
		for tn := range tenants {
			t, err := parseTenant(tn)
			if err != nil {
				continue
			}
			if _, err := s.ScanIntel(ctx, t); err != nil && ctx.Err() == nil {
				s.log.Error("intel scan", "tenant", tn, "err", err)
			}
		}
	})
}

// remindLoop fires the trials' due reminders every minute until ctx ends.
func (s *Server) remindLoop(ctx context.Context) {
	every(ctx, time.Minute, time.Minute, func() {
		if _, err := s.core.FireTrialReminders(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("trial reminders", "err", err)
		}
	})
}
