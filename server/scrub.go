package server

import (
	"cmp"
	"context"
	"time"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
)

// DefaultScrubInterval is how often a running server scrubs every tenant's vault.
const DefaultScrubInterval = 24 * time.Hour

// DefaultColdAfter is how long after its commit a vault object moves to the cold tier.
const DefaultColdAfter = 90 * 24 * time.Hour

// ScrubResult is one tenant's scrub: the job that recorded it and what it found.
type ScrubResult struct {
	Tenant string
	Job    *svcv1.Job
	Report vault.ScrubReport
	Err    error
}

// scrubJob scrubs one tenant's vault as a job of kind scan, run by runner (so it can be read,
// listed and cancelled like any job): every stored copy is re-read and re-hashed, mismatches are
// marked corrupt and repaired from the other tier where possible (vault.Scrub). Progress is the
// share of the tenant's objects examined. The job's result holds the report's figures and the
// corrupt object ids.
func scrubJob(ctx context.Context, runner *job.Runner, vlt *vault.Vault, tenant string, opts *vault.ScrubOptions,
	scrub func(context.Context, *vault.ScrubOptions) (vault.ScrubReport, error)) ScrubResult {
	res := ScrubResult{Tenant: tenant}
	var o vault.ScrubOptions
	if opts != nil {
		o = *opts
	}
	j, err := runner.Run(ctx, tenant, svcv1.JobKind_JOB_KIND_SCAN, func(ctx context.Context, p *job.Progress) (map[string]any, error) {
		total := 0
		if err := eachVaultObject(ctx, vlt, tenant, func(vault.Object) error { total++; return nil }); err != nil {
			return nil, err
		}
		report := o.Progress
		o.Progress = func(r vault.ScrubReport) {
			p.Fraction(ctx, int64(r.Objects), int64(total))
			if report != nil {
				report(r)
			}
		}
		var err error
		res.Report, err = scrub(ctx, &o)
		if err != nil {
			return nil, err
		}
		r := res.Report
		corrupt := make([]any, len(r.Corrupt))
		for i, c := range r.Corrupt {
			corrupt[i] = c
		}
		return map[string]any{"type": "vault_scrub", "objects": float64(r.Objects), "verified": float64(r.Verified),
			"bytes": float64(r.Bytes), "corrupt": corrupt, "repaired": float64(len(r.Repaired)), "orphan_files": float64(r.OrphanFiles)}, nil
	})
	res.Job, res.Err = j, err
	return res
}

// ScrubVault scrubs one tenant's vault now as a job (see scrubJob), with svc.job.* events; the
// embedding package's scrub emits svc.vault.object.corrupt for every object left corrupt.
func (s *Server) ScrubVault(ctx context.Context, tenant platform.Tenant, opts *vault.ScrubOptions) ScrubResult {
	return scrubJob(ctx, s.jobRunner, s.vault, tenant.String(), opts, s.core.Tenant(tenant).ScrubVault)
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
func (s *Server) scrubLoop(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		tenants, err := s.store.VaultTenants(ctx)
		if err != nil {
			s.log.Error("vault scrub: list tenants", "err", err)
			continue
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
	}
}

// ScrubDataDir scrubs the vault of a data directory whose server is not running (`svc vault
// scrub`), on the backends its server uses: one tenant, or every tenant with vault content when tenant is "". Each scrub is
// recorded as a job like the server's; events are not emitted (they are the server's).
func ScrubDataDir(ctx context.Context, dataDir string, be VaultBackends, tenant string, opts *vault.ScrubOptions) ([]ScrubResult, error) {
	db, master, err := openStopped(dataDir)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	vlt, err := svc.OpenVault(dataDir, db.VaultMeta(), master, &vault.Options{Hot: be.Hot, Cold: be.Cold})
	if err != nil {
		return nil, err
	}
	defer vlt.Close()
	tenants := []string{tenant}
	if tenant == "" {
		if tenants, err = db.VaultTenants(ctx); err != nil {
			return nil, err
		}
	}
	runner := job.NewRunner(jobStore{db.Resources().Jobs()}, nil, nil)
	defer runner.Close()
	var out []ScrubResult
	for _, tn := range tenants {
		scrub := func(ctx context.Context, o *vault.ScrubOptions) (vault.ScrubReport, error) {
			return vlt.Scrub(ctx, tn, o)
		}
		out = append(out, scrubJob(ctx, runner, vlt, tn, opts, scrub))
	}
	return out, nil
}

// openStopped opens the store and master key of a data directory whose server is not
// running, for the offline commands (`svc vault scrub`, `svc vault reindex`).
func openStopped(dataDir string) (storage.Hosted, []byte, error) {
	db, err := svc.OpenStoppedStore(dataDir)
	if err != nil {
		return nil, nil, err
	}
	master, err := svc.LoadMasterKey(dataDir, "")
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, master, nil
}

// verifyInterval is how often scheduled verification runs.
const verifyInterval = time.Hour

// verifyLoop runs scheduled verification every verifyInterval until ctx ends: the objects
// whose last verification from the medium is oldest are re-read, within the budget, so that
// each is verified once per Config.VerifyEvery (docs/vault.md).
func (s *Server) verifyLoop(ctx context.Context) {
	t := time.NewTicker(verifyInterval)
	defer t.Stop()
	opts := &vault.ScheduleOptions{VerifyEvery: s.cfg.VerifyEvery, Interval: verifyInterval, BytesPerHour: s.cfg.VerifyBytesPerHour}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
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
	}
}
