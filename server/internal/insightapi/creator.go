package insightapi

import (
	"context"
	"sort"

	"google.golang.org/protobuf/types/known/timestamppb"

	"svc.dev/svc"
	"svc.dev/svc/creator"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform/job"
	"svc.dev/svc/server/internal/rpc"
)

// creatorSourceProto is a revenue source as the API shows it: never its credentials.
func creatorSourceProto(src *creator.Source) *svcv1.CreatorSource {
	out := &svcv1.CreatorSource{Id: src.ID, Kind: string(src.Kind), Status: src.Status, Label: src.Label, CreatedAt: timestamppb.New(src.CreatedAt)}
	if src.MailSourceID != "" {
		out.SourceId = &src.MailSourceID
	}
	return out
}

func (a *API) createCreatorSource(ctx context.Context, req *svcv1.CreateCreatorSourceRequest) (*svcv1.CreatorSource, error) {
	cr := req.GetCredentials()
	src, err := a.Scope(rpc.From(ctx)).CreateCreatorSource(ctx, creator.CreateRequest{Kind: creator.Kind(req.GetKind()), Label: req.GetLabel(),
		SourceID: req.GetSourceId(), Credentials: creator.Credentials{APIKey: cr.GetApiKey(), AccessToken: cr.GetAccessToken(),
			ShopDomain: cr.GetShopDomain(), AccountSID: cr.GetAccountSid()}})
	if err != nil {
		return nil, err
	}
	return creatorSourceProto(src), nil
}

func (a *API) getCreatorSource(ctx context.Context, req *svcv1.CreatorSourceRequest) (*svcv1.CreatorSource, error) {
	src, err := a.Scope(rpc.From(ctx)).CreatorSource(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return creatorSourceProto(src), nil
}

func (a *API) listCreatorSources(ctx context.Context, _ *svcv1.ListCreatorSourcesRequest) (*svcv1.ListCreatorSourcesResponse, error) {
	srcs, err := a.Scope(rpc.From(ctx)).CreatorSources(ctx)
	if err != nil {
		return nil, err
	}
	out := &svcv1.ListCreatorSourcesResponse{Data: []*svcv1.CreatorSource{}}
	for _, src := range srcs {
		out.Data = append(out.Data, creatorSourceProto(src))
	}
	return out, nil
}

func (a *API) deleteCreatorSource(ctx context.Context, req *svcv1.CreatorSourceRequest) (*svcv1.DeleteCreatorSourceResponse, error) {
	if err := a.Scope(rpc.From(ctx)).DeleteCreatorSource(ctx, req.GetId()); err != nil {
		return nil, err
	}
	return &svcv1.DeleteCreatorSourceResponse{Id: req.GetId(), Deleted: true}, nil
}

func (a *API) uploadStatement(ctx context.Context, req *svcv1.UploadStatementRequest) (*svcv1.UploadStatementResponse, error) {
	if err := a.Scope(rpc.From(ctx)).UploadStatement(ctx, req.GetId(), req.GetName(), []byte(req.GetCsv())); err != nil {
		return nil, err
	}
	return &svcv1.UploadStatementResponse{CreatorSourceId: req.GetId(), Name: req.GetName()}, nil
}

// syncCreator reconciles every revenue source as a job of kind reconcile (202: read the job).
func (a *API) syncCreator(ctx context.Context, _ *svcv1.SyncCreatorRequest) (*svcv1.Job, error) {
	c := rpc.From(ctx)
	sc := a.Scope(c)
	if _, err := sc.CreatorSources(ctx); err != nil { // refused before a job is made
		return nil, err
	}
	tenant := c.Tenant.String()
	j, err := a.Jobs.Create(ctx, tenant, svcv1.JobKind_JOB_KIND_RECONCILE)
	if err != nil {
		return nil, err
	}
	a.Jobs.Go(tenant, j.GetId(), ReconcileJob(sc))
	return j, nil
}

// ReconcileJob is the body of a reconcile job over a scope's revenue sources.
func ReconcileJob(sc *svc.Scope) func(ctx context.Context, p *job.Progress) (map[string]any, error) {
	return func(ctx context.Context, p *job.Progress) (map[string]any, error) {
		rep, err := sc.ReconcileCreator(ctx, func(pct int) { p.Fraction(ctx, int64(pct), 100) })
		if err != nil {
			return nil, err
		}
		problems := make([]any, len(rep.Problems))
		for i, pr := range rep.Problems {
			problems[i] = pr
		}
		return map[string]any{"type": "creator_reconcile", "items": float64(len(rep.Result.Items)), "anomalies": float64(len(rep.Result.Anomalies)),
			"opened": float64(len(rep.Opened)), "resolved": float64(len(rep.Resolved)), "problems": problems}, nil
	}
}

// pageByID pages a list sorted by id: up to limit after the id after, and the cursor's last id.
func pageByID[T any](all []T, idOf func(T) string, after string, limit int) ([]T, string) {
	sort.Slice(all, func(i, j int) bool { return idOf(all[i]) > idOf(all[j]) }) // newest first
	start := 0
	if after != "" {
		start = sort.Search(len(all), func(i int) bool { return idOf(all[i]) < after })
	}
	end := min(len(all), start+limit)
	page := all[start:end]
	if end < len(all) && len(page) > 0 {
		return page, idOf(page[len(page)-1])
	}
	return page, ""
}

func (a *API) listRevenueItems(ctx context.Context, req *svcv1.ListRevenueItemsRequest) (*svcv1.ListRevenueItemsResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.CreatorServiceListRevenueItemsProcedure, req)
	if err != nil {
		return nil, err
	}
	f := creator.ItemFilter{CreatorSourceID: req.GetCreatorSourceId()}
	if req.State != nil {
		f.State = creator.ItemState(rpc.EnumWire(req.GetState()))
	}
	items, err := a.Scope(rpc.From(ctx)).RevenueItems(ctx, f)
	if err != nil {
		return nil, err
	}
	page, last := pageByID(items, (*svcv1.RevenueItem).GetId, after, limit)
	return &svcv1.ListRevenueItemsResponse{Data: rpc.NonNil(page), NextCursor: a.Pager.Next(binding, last)}, nil
}

func (a *API) getRevenueItem(ctx context.Context, req *svcv1.RevenueItemRequest) (*svcv1.RevenueItem, error) {
	return a.Scope(rpc.From(ctx)).RevenueItem(ctx, req.GetId())
}

func (a *API) listAnomalies(ctx context.Context, req *svcv1.ListAnomaliesRequest) (*svcv1.ListAnomaliesResponse, error) {
	after, limit, binding, err := a.Pager.Start(ctx, svcv1connect.CreatorServiceListAnomaliesProcedure, req)
	if err != nil {
		return nil, err
	}
	var status creator.Status
	if req.Status != nil {
		status = creator.Status(rpc.EnumWire(req.GetStatus()))
	}
	as, err := a.Scope(rpc.From(ctx)).Anomalies(ctx, status)
	if err != nil {
		return nil, err
	}
	page, last := pageByID(as, (*svcv1.Anomaly).GetId, after, limit)
	return &svcv1.ListAnomaliesResponse{Data: rpc.NonNil(page), NextCursor: a.Pager.Next(binding, last)}, nil
}

func (a *API) getAnomaly(ctx context.Context, req *svcv1.AnomalyRequest) (*svcv1.Anomaly, error) {
	return a.Scope(rpc.From(ctx)).Anomaly(ctx, req.GetId())
}

func (a *API) dismissAnomaly(ctx context.Context, req *svcv1.AnomalyRequest) (*svcv1.Anomaly, error) {
	return a.Scope(rpc.From(ctx)).DismissAnomaly(ctx, req.GetId())
}

func (a *API) reopenAnomaly(ctx context.Context, req *svcv1.AnomalyRequest) (*svcv1.Anomaly, error) {
	return a.Scope(rpc.From(ctx)).ReopenAnomaly(ctx, req.GetId())
}
