package server

import (
	"context"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/server/internal/rpc"
)

func (s *Server) listMeters(ctx context.Context, req *svcv1.ListMetersRequest) (*svcv1.ListMetersResponse, error) {
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.IntelServiceListMetersProcedure, req)
	if err != nil {
		return nil, err
	}
	page, err := s.scope(rpc.From(ctx)).ListMeters(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListMetersResponse{Data: rpc.NonNil(page.Items), NextCursor: s.pager.Next(binding, page.Last)}, nil
}

func (s *Server) getMeter(ctx context.Context, req *svcv1.GetMeterRequest) (*svcv1.Meter, error) {
	return s.scope(rpc.From(ctx)).Meter(ctx, req.GetId())
}

// actOnMeter records an action on a meter (spec #4); a live key's action is an intelligence
// operation, metered.
func (s *Server) actOnMeter(ctx context.Context, req *svcv1.ActOnMeterRequest) (*svcv1.MeterActionResult, error) {
	c := rpc.From(ctx)
	m, err := s.scope(c).ActOnMeter(ctx, req.GetId(), req.GetAction(), req.LimitCents)
	if err != nil {
		return nil, err
	}
	metered := c.Key != nil && c.Key.Mode == platform.ModeLive
	if metered {
		s.meter.Add(c.Key.OrgID, c.Key.AppID, platform.MeterIntelligenceOps, 1)
	}
	return &svcv1.MeterActionResult{Meter: m, Metered: metered}, nil
}

func (s *Server) listTrials(ctx context.Context, req *svcv1.ListTrialsRequest) (*svcv1.ListTrialsResponse, error) {
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.IntelServiceListTrialsProcedure, req)
	if err != nil {
		return nil, err
	}
	page, err := s.scope(rpc.From(ctx)).ListTrials(ctx, after, limit)
	if err != nil {
		return nil, err
	}
	return &svcv1.ListTrialsResponse{Data: rpc.NonNil(page.Items), NextCursor: s.pager.Next(binding, page.Last)}, nil
}

func (s *Server) getTrial(ctx context.Context, req *svcv1.GetTrialRequest) (*svcv1.Trial, error) {
	return s.scope(rpc.From(ctx)).Trial(ctx, req.GetId())
}

// decideTrial records keep, stop or remind on a trial (spec #20); stop answers the plan_id of
// its plan of intent unsubscribe.
func (s *Server) decideTrial(ctx context.Context, req *svcv1.DecideTrialRequest) (*svcv1.TrialDecisionResult, error) {
	o, err := s.scope(rpc.From(ctx)).DecideTrial(ctx, req.GetId(), req.GetDecision(), req.GetRemindAt().AsTime())
	if err != nil {
		return nil, err
	}
	res := &svcv1.TrialDecisionResult{Trial: o.Trial, Action: o.Action}
	if o.PlanID != "" {
		res.PlanId = &o.PlanID
	}
	return res, nil
}

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
