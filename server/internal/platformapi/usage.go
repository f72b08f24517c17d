package platformapi

import (
	"context"
	"net/http"
	"slices"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/server/internal/rpc"
)

// bill rates a month of an organization or one of its applications.
func (a *API) bill(ctx context.Context, orgID, appID, month string) (platform.Bill, error) {
	return a.Meter.Bill(ctx, orgID, appID, month)
}

func (a *API) ceilingCents(ctx context.Context, orgID string) int64 {
	return a.Meter.CeilingCents(ctx, orgID)
}

func usageProto(orgID, appID string, b platform.Bill, ceiling int64) *svcv1.Usage {
	u := &svcv1.Usage{OrgId: orgID, Month: b.Month, RateCardVersion: b.RateCardVersion, Currency: "usd", BaseCents: b.BaseCents,
		OverageCents: b.OverageCents, TotalCents: b.TotalCents, CeilingCents: ceiling, WithinCeiling: b.TotalCents <= ceiling}
	if appID != "" {
		u.ApplicationId = &appID
	}
	for _, l := range b.Lines {
		u.Lines = append(u.Lines, &svcv1.UsageLine{Meter: l.Meter, Unit: l.Unit, Quantity: l.Quantity, Included: l.Included, Overage: l.Overage, Cents: l.Cents})
	}
	return u
}

// usageOrg is the organization a usage request is about: the key's, or the one named (which
// the signed-in user must belong to).
func usageOrg(c *rpc.Caller, orgID *string) (string, error) {
	if c.Key != nil {
		if orgID != nil && *orgID != c.Key.OrgID {
			return "", rpc.NewProblem(http.StatusNotFound, rpc.CodeNotFound, "The organization does not exist.")
		}
		return c.Key.OrgID, nil
	}
	if orgID == nil {
		return "", rpc.Invalid("org_id", "is required with a session")
	}
	return *orgID, memberOf(c, *orgID)
}

// billingAccess is the one check of every route that shows or changes an organization's
// live billing (usage, the portal, the ceiling): a test key is refused (test mode is unbilled,
// and a test key touches only test-mode state); what shows spend in full (the portal) or
// changes it (the ceiling) also needs a live key with the billable_execute scope, or a
// signed-in user (each route then checks membership or ownership).
func billingAccess(c *rpc.Caller, spend bool) error {
	if c.Key == nil {
		return nil
	}
	if c.Key.Mode != platform.ModeLive {
		return rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "Usage, billing and the spending ceiling are live-mode settings: use a live key or a signed-in owner.")
	}
	if spend && !slices.Contains(c.Key.Scopes, "billable_execute") {
		return rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "The billing portal and the spending ceiling need a live key with the billable_execute scope, or the organization's owner.")
	}
	return nil
}

// liveOnly refuses a test key on live-mode organization state (billingAccess, reading).
func liveOnly(c *rpc.Caller) error { return billingAccess(c, false) }

func (a *API) getUsage(ctx context.Context, req *svcv1.GetUsageRequest) (*svcv1.Usage, error) {
	c := rpc.From(ctx)
	if err := liveOnly(c); err != nil {
		return nil, err
	}
	org, err := usageOrg(c, req.OrgId)
	if err != nil {
		return nil, err
	}
	month := platform.Month(a.Now())
	if req.Month != nil {
		month = req.GetMonth()
	}
	b, err := a.bill(ctx, org, "", month)
	if err != nil {
		return nil, err
	}
	return usageProto(org, "", b, a.ceilingCents(ctx, org)), nil
}

func (a *API) getApplicationUsage(ctx context.Context, req *svcv1.GetApplicationUsageRequest) (*svcv1.Usage, error) {
	c := rpc.From(ctx)
	if err := liveOnly(c); err != nil {
		return nil, err
	}
	app, err := a.application(ctx, c, req.GetId())
	if err != nil {
		return nil, err
	}
	month := platform.Month(a.Now())
	if req.Month != nil {
		month = req.GetMonth()
	}
	b, err := a.bill(ctx, app.OrgID, app.ID, month)
	if err != nil {
		return nil, err
	}
	return usageProto(app.OrgID, app.ID, b, a.ceilingCents(ctx, app.OrgID)), nil
}

func (a *API) setCeiling(ctx context.Context, req *svcv1.SetCeilingRequest) (*svcv1.Ceiling, error) {
	c := rpc.From(ctx)
	if err := billingAccess(c, true); err != nil {
		return nil, err
	}
	org, err := usageOrg(c, req.OrgId)
	if err != nil {
		return nil, err
	}
	if c.User != nil {
		o, err := a.Accounts.Org(ctx, org)
		if err != nil || o.OwnerID != c.User.ID {
			return nil, rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "Only the organization's owner changes its spending ceiling.")
		}
	}
	now := a.Now().UTC()
	before, err := a.Meter.SetCeiling(ctx, org, req.GetCeilingCents())
	if err != nil {
		return nil, err
	}
	a.Emit(ctx, platform.Tenant{Owner: org, Mode: platform.ModeLive}, event.UsageCeilingChanged, "/v1/usage", org,
		map[string]any{"org_id": org, "ceiling_cents": float64(req.GetCeilingCents()), "previous_ceiling_cents": float64(before)})
	return &svcv1.Ceiling{OrgId: org, CeilingCents: req.GetCeilingCents(), Currency: "usd", UpdatedAt: timestamppb.New(now)}, nil
}
