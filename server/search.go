package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/providers"
	"svc.dev/svc/storage"
)

// searchVault searches the vault (spec #11): the embedding package searches the caller's
// tenant (q, filters, newest first); the edge checks the caller, limits the search to the
// sources of a connection's grant, and seals the cursor.
func (s *Server) searchVault(ctx context.Context, req *svcv1.SearchVaultRequest) (*svcv1.SearchVaultResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.VaultServiceSearchVaultProcedure, req)
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	q := svc.SearchQuery{Q: req.GetQ(), Provider: req.GetProvider(), Type: req.GetType(), Limit: limit, Cursor: after}
	if req.From != nil {
		q.From = req.GetFrom().AsTime()
	}
	if req.To != nil {
		q.To = req.GetTo().AsTime()
	}
	res, err := s.scope(c).SearchVault(ctx, q)
	if err != nil {
		return nil, err
	}
	out := &svcv1.SearchVaultResponse{Data: []*svcv1.SearchHit{}}
	for _, h := range res.Hits {
		hit := &svcv1.SearchHit{VaultObject: h.Object.Proto(), Score: h.Score, Matched: h.Matched}
		if h.Snippet != "" {
			hit.Snippet = &h.Snippet
		}
		out.Data = append(out.Data, hit)
	}
	out.NextCursor = s.nextCursor(binding, res.Next)
	return out, nil
}

// IndexResult is one tenant's index job.
type IndexResult struct {
	Tenant  string
	Job     *svcv1.Job
	Indexed int
	Err     error
}

// indexJob rebuilds one tenant's search index from its vault (svc's ReindexVault) as a job of
// kind index, stored in jobs when it starts, as it progresses (at most every second) and when
// it ends; its result says how many objects were indexed and the index's size.
func indexJob(ctx context.Context, jobs storage.Records[*svcv1.Job], sc *svc.Scope, now func() time.Time, log *slog.Logger, started func(*svcv1.Job)) IndexResult {
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

// ReindexVault rebuilds one tenant's search index now (see indexJob) and emits svc.job.started
// and svc.job.succeeded or svc.job.failed.
func (s *Server) ReindexVault(ctx context.Context, tenant platform.Tenant) IndexResult {
	res := indexJob(ctx, s.jobs, s.core.Tenant(tenant), s.cfg.Now, s.log, func(job *svcv1.Job) {
		s.emit(ctx, tenant, event.JobStarted, "/v1/jobs", job.Id, map[string]any{"job_id": job.Id, "kind": "index"})
	})
	if res.Job != nil {
		typ := event.JobSucceeded
		if res.Err != nil {
			typ = event.JobFailed
		}
		s.emit(ctx, tenant, typ, "/v1/jobs", res.Job.Id, map[string]any{"job_id": res.Job.Id, "kind": "index", "indexed": float64(res.Indexed)})
	}
	return res
}

// indexMissing runs the index job for every tenant with vault content and no index (a data
// directory from before search, or whose index was removed), or an index that still keeps
// text (a data directory from before the index stopped storing it).
func (s *Server) indexMissing(ctx context.Context) {
	tenants, err := s.store.VaultTenants(ctx)
	if err != nil {
		s.log.Error("search index: list tenants", "err", err)
		return
	}
	for _, tn := range tenants {
		t, err := parseTenant(tn)
		if err != nil {
			continue
		}
		// A tenant with no index, or with one that still keeps text, gets one built.
		if sc := s.core.Tenant(t); sc.SearchIndexed() && !sc.SearchIndexStoresText() {
			continue
		}
		if res := s.ReindexVault(ctx, t); res.Err != nil && ctx.Err() == nil {
			s.log.Error("search index job", "tenant", tn, "err", res.Err)
		}
	}
}

// ReindexDataDir rebuilds the search index of a data directory whose server is not running
// (`svc vault reindex`): one tenant, or every tenant with vault content when tenant is "".
// Each rebuild is recorded as a job of kind index; events are not emitted (they are the
// server's). The embedding package is opened on the directory without resuming executions
// or opening providers: it is only there for the vault and its index.
func ReindexDataDir(ctx context.Context, dataDir string, be VaultBackends, tenant string) ([]IndexResult, error) {
	db, master, err := openStopped(dataDir)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	log := slog.New(slog.DiscardHandler)
	sv, err := svc.Open(ctx, dataDir, &svc.Options{Store: db, MasterKey: master, Providers: providers.NewRegistry(),
		VaultHot: be.Hot, VaultCold: be.Cold, DeferResume: true, Logger: log})
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
		out = append(out, indexJob(ctx, jobs, sv.Tenant(t), time.Now, log, nil))
	}
	return out, nil
}
