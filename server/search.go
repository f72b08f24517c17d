package server

import (
	"context"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/server/internal/rpc"
)

// searchVault searches the vault (spec #11): the embedding package searches the caller's
// tenant (q, filters, newest first); the edge checks the caller, limits the search to the
// sources of a connection's grant, and seals the cursor.
func (s *Server) searchVault(ctx context.Context, req *svcv1.SearchVaultRequest) (*svcv1.SearchVaultResponse, error) {
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.VaultServiceSearchVaultProcedure, req)
	if err != nil {
		return nil, err
	}
	c := rpc.From(ctx)
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
	out.NextCursor = s.pager.Next(binding, res.Next)
	return out, nil
}

// ReindexVault rebuilds one tenant's search index now (see indexJob) and emits svc.job.started
// and svc.job.succeeded or svc.job.failed.
func (s *Server) ReindexVault(ctx context.Context, tenant platform.Tenant) svc.IndexResult {
	res := svc.IndexJob(ctx, s.jobs, s.core.Tenant(tenant), s.cfg.Now, s.log, func(job *svcv1.Job) {
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
