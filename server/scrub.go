package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/store"
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

// scrubJob scrubs one tenant's vault as a job of kind scan, stored in jobs while it runs and
// when it ends: every stored copy is re-read and re-hashed, mismatches are marked corrupt and
// repaired from the other tier where possible (vault.Scrub). The job's result holds the
// report's figures and the corrupt object ids.
func scrubJob(ctx context.Context, jobs *store.Collection[*svcv1.Job], vlt *vault.Vault, tenant string, opts *vault.ScrubOptions, now func() time.Time, started func(*svcv1.Job)) ScrubResult {
	res := ScrubResult{Tenant: tenant}
	at := timestamppb.New(now())
	job := &svcv1.Job{Id: id.New("job"), Kind: svcv1.JobKind_JOB_KIND_SCAN, Status: svcv1.JobStatus_JOB_STATUS_RUNNING, CreatedAt: at, UpdatedAt: at}
	if err := jobs.Put(ctx, tenant, job.Id, job); err != nil {
		res.Err = err
		return res
	}
	if started != nil {
		started(job)
	}
	res.Report, res.Err = vlt.Scrub(ctx, tenant, opts)
	job.UpdatedAt = timestamppb.New(now())
	job.FinishedAt = job.UpdatedAt
	r := res.Report
	corrupt := make([]any, len(r.Corrupt))
	for i, c := range r.Corrupt {
		corrupt[i] = c
	}
	job.Result, _ = structpb.NewStruct(map[string]any{"type": "vault_scrub", "objects": float64(r.Objects), "verified": float64(r.Verified),
		"bytes": float64(r.Bytes), "corrupt": corrupt, "repaired": float64(len(r.Repaired)), "orphan_files": float64(r.OrphanFiles)})
	if res.Err != nil {
		job.Status = svcv1.JobStatus_JOB_STATUS_FAILED
		msg := res.Err.Error()
		job.Error = &msg
	} else {
		job.Status, job.Progress = svcv1.JobStatus_JOB_STATUS_SUCCEEDED, 100
	}
	if err := jobs.Put(context.WithoutCancel(ctx), tenant, job.Id, job); err != nil {
		res.Err = errors.Join(res.Err, err)
	}
	res.Job = job
	return res
}

// ScrubVault scrubs one tenant's vault now (see scrubJob) and emits svc.job.started,
// svc.vault.object.corrupt for every object left corrupt, and svc.job.succeeded or
// svc.job.failed.
func (s *Server) ScrubVault(ctx context.Context, tenant platform.Tenant, opts *vault.ScrubOptions) ScrubResult {
	res := scrubJob(ctx, s.jobs, s.vault, tenant.String(), opts, s.cfg.Now, func(job *svcv1.Job) {
		s.emit(ctx, tenant, evJobStarted, "/v1/jobs", job.Id, map[string]any{"job_id": job.Id, "kind": "scan"})
	})
	for _, vid := range res.Report.Corrupt {
		s.emit(ctx, tenant, event.VaultObjectCorrupt, "/v1/vault/objects", vid, map[string]any{"vault_object_id": vid, "found_by": "scrub"})
	}
	if res.Job != nil {
		typ := evJobSucceeded
		if res.Err != nil {
			typ = evJobFailed
		}
		s.emit(ctx, tenant, typ, "/v1/jobs", res.Job.Id, map[string]any{"job_id": res.Job.Id, "kind": "scan"})
	}
	return res
}

// TierVault moves a tenant's committed vault objects to the cold tier once they were committed
// more than coldAfter ago (vault.Cold: the content is copied to the cold backend and verified
// there before the hot copy is dropped). It returns how many moved.
func (s *Server) TierVault(ctx context.Context, tenant platform.Tenant, coldAfter time.Duration) (int, error) {
	cutoff := s.cfg.Now().Add(-coldAfter)
	due := func(o vault.Object) bool {
		return o.State == vault.StateCommitted && o.ColdSince.IsZero() && !o.CommittedAt.IsZero() && o.CommittedAt.Before(cutoff)
	}
	moved, after := 0, ""
	for {
		page, more, err := s.vault.List(ctx, tenant.String(), after, 256, due)
		if err != nil {
			return moved, err
		}
		for _, o := range page {
			if _, err := s.vault.Cold(ctx, tenant.String(), o.ID); err != nil {
				return moved, fmt.Errorf("cold %s: %w", o.ID, err)
			}
			moved++
			after = o.ID
		}
		if !more || len(page) == 0 {
			return moved, nil
		}
	}
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
		tenants, err := s.db.VaultMeta().Tenants(ctx)
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
	db, keys, err := openStopped(dataDir)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	vlt, err := openVault(dataDir, db, keys, time.Now, be, nil)
	if err != nil {
		return nil, err
	}
	defer vlt.Close()
	tenants := []string{tenant}
	if tenant == "" {
		if tenants, err = db.VaultMeta().Tenants(ctx); err != nil {
			return nil, err
		}
	}
	jobs := store.NewCollection(db, "jobs", func() *svcv1.Job { return &svcv1.Job{} })
	var out []ScrubResult
	for _, tn := range tenants {
		out = append(out, scrubJob(ctx, jobs, vlt, tn, opts, time.Now, nil))
	}
	return out, nil
}

// openStopped opens the store and keys of a data directory whose server is not running, for
// the offline commands (`svc vault scrub`, `svc vault reindex`).
func openStopped(dataDir string) (*store.DB, *platform.Keyring, error) {
	if _, err := os.Stat(filepath.Join(dataDir, "svc.db")); err != nil {
		return nil, nil, fmt.Errorf("no svc data directory at %s: %w", dataDir, err)
	}
	db, err := store.Open(filepath.Join(dataDir, "svc.db"))
	if err != nil {
		return nil, nil, fmt.Errorf("%w (is svc serve running on this data directory? it holds the directory; stop it first)", err)
	}
	keys, err := dataKeys(dataDir)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, keys, nil
}
