package svc

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/backend"
)

// The vault's maintenance as jobs: a scrub (re-read, re-hash, repair) and a rebuild of the
// search index, each recorded as a Job of the tenant, by a running server or by the offline
// commands (svc vault scrub, svc vault reindex) on a stopped server's data directory.

// ScrubResult is one tenant's scrub: the job that recorded it and what it found.
type ScrubResult struct {
	Tenant string
	Job    *svcv1.Job
	Report vault.ScrubReport
	Err    error
}

// ScrubJob scrubs one tenant's vault as a job of kind scan, run by runner (so it can be read,
// listed and cancelled like any job): every stored copy is re-read and re-hashed, mismatches are
// marked corrupt and repaired from the other tier where possible (vault.Scrub). Progress is the
// share of the tenant's objects examined. The job's result holds the report's figures and the
// corrupt object ids.
func ScrubJob(ctx context.Context, runner *job.Runner, vlt *vault.Vault, tenant string, opts *vault.ScrubOptions,
	scrub func(context.Context, *vault.ScrubOptions) (vault.ScrubReport, error)) ScrubResult {
	res := ScrubResult{Tenant: tenant}
	var o vault.ScrubOptions
	if opts != nil {
		o = *opts
	}
	j, err := runner.Run(ctx, tenant, svcv1.JobKind_JOB_KIND_SCAN, func(ctx context.Context, p *job.Progress) (map[string]any, error) {
		total := 0
		if err := EachVaultObject(ctx, vlt, tenant, func(vault.Object) error { total++; return nil }); err != nil {
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

// IndexResult is one tenant's index job.
type IndexResult struct {
	Tenant  string
	Job     *svcv1.Job
	Indexed int
	Err     error
}

// IndexJob rebuilds one tenant's search index from its vault (svc's ReindexVault) as a job of
// kind index, stored in jobs when it starts, as it progresses (at most every second) and when
// it ends; its result says how many objects were indexed and the index's size.
func IndexJob(ctx context.Context, jobs storage.Records[*svcv1.Job], sc *Scope, now func() time.Time, log *slog.Logger, started func(*svcv1.Job)) IndexResult {
	tenant := sc.TenantOf().String()
	res := IndexResult{Tenant: tenant}
	at := timestamppb.New(now())
	job := &svcv1.Job{Id: id.New("job"), Kind: svcv1.JobKind_JOB_KIND_INDEX, Status: svcv1.JobStatus_JOB_STATUS_RUNNING, CreatedAt: at, UpdatedAt: at}
	if err := jobs.Put(ctx, tenant, job.Id, job); err != nil {
		res.Err = err
		return res
	}
	if started != nil {
		started(job)
	}
	var mu sync.Mutex
	last := time.Now()
	progress := func(n int, total int64) {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(last) < time.Second || total <= 0 {
			return
		}
		last = time.Now()
		p := min(int32(int64(n)*100/total), 99)
		if p <= job.Progress {
			return
		}
		job.Progress, job.UpdatedAt = p, timestamppb.New(now())
		if err := jobs.Put(ctx, tenant, job.Id, job); err != nil {
			log.Error("index job progress", "job_id", job.Id, "err", err)
		}
	}
	st, err := sc.ReindexVault(ctx, progress)
	res.Indexed, res.Err = st.Indexed, err
	job.UpdatedAt = timestamppb.New(now())
	job.FinishedAt = job.UpdatedAt
	job.Result, _ = structpb.NewStruct(map[string]any{"type": "vault_index", "indexed": float64(st.Indexed), "index_bytes": float64(st.IndexBytes)})
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

// EachVaultObject calls fn for every vault object of tenant, in pages of 200 read in short
// transactions (fn runs outside them).
func EachVaultObject(ctx context.Context, v *vault.Vault, tenant string, fn func(vault.Object) error) error {
	return v.Each(ctx, tenant, fn)
}

// ScrubDataDir scrubs the vault of a data directory whose server is not running (`svc vault
// scrub`), on the backends its server uses: one tenant, or every tenant with vault content when tenant is "". Each scrub is
// recorded as a job like the server's; events are not emitted (they are the server's).
func ScrubDataDir(ctx context.Context, dataDir string, hot, cold backend.Backend, tenant string, opts *vault.ScrubOptions) ([]ScrubResult, error) {
	db, master, err := openStoppedWithKey(dataDir)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	vlt, err := OpenVault(dataDir, db.VaultMeta(), master, &vault.Options{Hot: hot, Cold: cold})
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
	runner := job.NewRunner(JobStore{Records: db.Resources().Jobs()}, nil, nil)
	defer runner.Close()
	var out []ScrubResult
	for _, tn := range tenants {
		scrub := func(ctx context.Context, o *vault.ScrubOptions) (vault.ScrubReport, error) {
			return vlt.Scrub(ctx, tn, o)
		}
		out = append(out, ScrubJob(ctx, runner, vlt, tn, opts, scrub))
	}
	return out, nil
}

// ReindexDataDir rebuilds the search index of a data directory whose server is not running
// (`svc vault reindex`): one tenant, or every tenant with vault content when tenant is "".
// Each rebuild is recorded as a job of kind index; events are not emitted (they are the
// server's). The embedding package is opened on the directory without resuming executions
// or opening providers: it is only there for the vault and its index.
func ReindexDataDir(ctx context.Context, dataDir string, hot, cold backend.Backend, tenant string) ([]IndexResult, error) {
	db, master, err := openStoppedWithKey(dataDir)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	log := slog.New(slog.DiscardHandler)
	sv, err := Open(ctx, dataDir, &Options{Store: db, MasterKey: master, Providers: providers.NewRegistry(),
		VaultHot: hot, VaultCold: cold, DeferResume: true, Logger: log})
	if err != nil {
		return nil, err
	}
	defer sv.Close()
	tenants := []string{tenant}
	if tenant == "" {
		if tenants, err = db.VaultTenants(ctx); err != nil {
			return nil, err
		}
	}
	jobs := db.Resources().Jobs()
	var out []IndexResult
	for _, tn := range tenants {
		t, err := parseTenant(tn)
		if err != nil {
			return out, err
		}
		out = append(out, IndexJob(ctx, jobs, sv.Tenant(t), time.Now, log, nil))
	}
	return out, nil
}

// openStoppedWithKey opens the store and master key of a data directory whose server is not
// running, for the offline commands.
func openStoppedWithKey(dataDir string) (storage.Hosted, []byte, error) {
	db, err := OpenStoppedStore(dataDir)
	if err != nil {
		return nil, nil, err
	}
	master, err := LoadMasterKey(dataDir, "")
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return db, master, nil
}

// JobStore keeps jobs in a store's job records, for a job.Runner.
type JobStore struct{ Records storage.Records[*svcv1.Job] }

// Put stores a job.
func (j JobStore) Put(ctx context.Context, tenant, id string, v *svcv1.Job) error {
	return j.Records.Put(ctx, tenant, id, v)
}

// Update changes a stored job.
func (j JobStore) Update(ctx context.Context, tenant, id string, fn func(*svcv1.Job) error) error {
	return j.Records.Update(ctx, tenant, id, fn)
}
