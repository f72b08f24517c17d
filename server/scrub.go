package server

import (
	"cmp"
	"context"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/vault"
)

// DefaultScrubInterval is how often a running server scrubs every tenant's vault.
const DefaultScrubInterval = 24 * time.Hour

// DefaultColdAfter is how long after its commit a vault object moves to the cold tier.
const DefaultColdAfter = 90 * 24 * time.Hour

// ScrubVault scrubs one tenant's vault now as a job (see scrubJob), with svc.job.* events; the
// embedding package's scrub emits svc.vault.object.corrupt for every object left corrupt.
func (s *Server) ScrubVault(ctx context.Context, tenant platform.Tenant, opts *vault.ScrubOptions) svc.ScrubResult {
	return svc.ScrubJob(ctx, s.jobRunner, s.vault, tenant.String(), opts, s.core.Tenant(tenant).ScrubVault)
}

// TierVault moves a tenant's committed vault objects to the cold tier once they were committed
// more than coldAfter ago (vault.Cold: the content is copied to the cold backend and verified
// there before the hot copy is dropped). When any object is due, the move runs as a job of kind
// migration (a move of content between storage tiers), with progress over the objects due. It
// returns how many moved.
func (s *Server) TierVault(ctx context.Context, tenant platform.Tenant, coldAfter time.Duration) (int, error) {
	t := s.core.Tenant(tenant)
	due, err := t.ColdDue(ctx, coldAfter)
	if err != nil || len(due) == 0 {
		return 0, err
	}
	moved := 0
	_, err = s.jobRunner.Run(ctx, tenant.String(), svcv1.JobKind_JOB_KIND_MIGRATION, func(ctx context.Context, p *job.Progress) (map[string]any, error) {
		var err error
		moved, err = t.MoveCold(ctx, due, func(n, total int) { p.Fraction(ctx, int64(n), int64(total)) })
		if err != nil {
			return nil, err
		}
		return map[string]any{"type": "vault_tiering", "to": "cold", "objects_moved": float64(moved)}, nil
	})
	return moved, err
}

// scrubLoop scrubs every tenant's vault every interval until ctx ends, then moves what is due
// to the cold tier (Config.ColdAfter).
func (s *Server) scrubLoop(ctx context.Context, interval time.Duration) {
	every(ctx, interval, interval, func() {
		tenants, err := s.store.VaultTenants(ctx)
		if err != nil {
			s.log.Error("vault scrub: list tenants", "err", err)
			return
		}
		for _, tn := range tenants {
			t, err := parseTenant(tn)
			if err != nil {
				continue
			}
			res := s.ScrubVault(ctx, t, nil)
			if res.Err != nil && ctx.Err() == nil {
				s.log.Error("vault scrub", "tenant", tn, "err", res.Err)
			} else if len(res.Report.Corrupt) > 0 {
				s.log.Warn("vault scrub found corrupt objects", "tenant", tn, "corrupt", len(res.Report.Corrupt), "job_id", res.Job.GetId())
			}
			if after := cmp.Or(s.cfg.ColdAfter, DefaultColdAfter); after > 0 {
				if n, err := s.TierVault(ctx, t, after); err != nil && ctx.Err() == nil {
					s.log.Error("vault tiering", "tenant", tn, "moved", n, "err", err)
				}
			}
		}
	})
}

// verifyInterval is how often scheduled verification runs.
const verifyInterval = time.Hour

// verifyLoop runs scheduled verification every verifyInterval until ctx ends: the objects
// whose last verification from the medium is oldest are re-read, within the budget, so that
// each is verified once per Config.VerifyEvery (docs/vault.md).
func (s *Server) verifyLoop(ctx context.Context) {
	opts := &vault.ScheduleOptions{VerifyEvery: s.cfg.VerifyEvery, Interval: verifyInterval, BytesPerHour: s.cfg.VerifyBytesPerHour}
	every(ctx, verifyInterval, verifyInterval, func() {
		r, err := s.core.VerifyScheduled(ctx, opts)
		switch {
		case err != nil && ctx.Err() == nil:
			s.log.Error("scheduled verification", "err", err)
		case len(r.Corrupt) > 0:
			s.log.Warn("scheduled verification found corrupt objects", "corrupt", len(r.Corrupt))
		}
		if err == nil && (!r.Feasible || r.Overdue > 0) {
			s.log.Warn("scheduled verification is behind: raise --verify-bytes-per-hour", "overdue", r.Overdue,
				"overdue_bytes", r.OverdueBytes, "required_bytes_per_hour", r.RequiredBytesPerHour)
		}
	})
}
