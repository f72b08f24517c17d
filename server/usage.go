package server

import (
	"context"
	"net/http"
	"slices"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/receipt"
	"svc.dev/svc/server/internal/rpc"
)

// meterCall meters an API operation made with a live key.
func (s *Server) meterCall(c *Caller, out *outcome) {
	if c.Key == nil || c.Key.Mode != platform.ModeLive || out.status == http.StatusTooManyRequests {
		return
	}
	s.meter.Add(c.Key.OrgID, c.Key.AppID, platform.MeterAPIOperations, 1)
}

// bill rates a month of an organization or one of its applications.
func (s *Server) bill(ctx context.Context, orgID, appID, month string) (platform.Bill, error) {
	return s.meter.Bill(ctx, orgID, appID, month)
}

func (s *Server) ceilingCents(ctx context.Context, orgID string) int64 {
	return s.meter.CeilingCents(ctx, orgID)
}

// planBilling is the commercial context of a live developer key for plan estimates and
// authorization: this month's usage, the ceiling, and what is already spent.
func (s *Server) planBilling(ctx context.Context, c *Caller) (*plan.Billing, error) {
	b := billingOf(c)
	if b == nil {
		return nil, nil
	}
	month := platform.Month(s.cfg.Now())
	bill, err := s.bill(ctx, c.Key.OrgID, "", month)
	if err != nil {
		return nil, err
	}
	u := map[string]float64{}
	for _, l := range bill.Lines {
		u[l.Meter] = l.Quantity
	}
	b.Usage = plan.Usage{Plans: int64(u[platform.MeterPlans]), Executions: int64(u[platform.MeterExecutions]),
		TransferredBytes: int64(u[platform.MeterDataTransferred] * 1e9), StoredByteMonths: int64(u[platform.MeterDeveloperStorage] * 1e9)}
	b.CeilingCents = s.ceilingCents(ctx, c.Key.OrgID)
	b.SpentCents = bill.TotalCents
	return b, nil
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
func usageOrg(c *Caller, orgID *string) (string, error) {
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
func billingAccess(c *Caller, spend bool) error {
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
func liveOnly(c *Caller) error { return billingAccess(c, false) }

func (s *Server) getUsage(ctx context.Context, req *svcv1.GetUsageRequest) (*svcv1.Usage, error) {
	c := rpc.From(ctx)
	if err := liveOnly(c); err != nil {
		return nil, err
	}
	org, err := usageOrg(c, req.OrgId)
	if err != nil {
		return nil, err
	}
	month := platform.Month(s.cfg.Now())
	if req.Month != nil {
		month = req.GetMonth()
	}
	b, err := s.bill(ctx, org, "", month)
	if err != nil {
		return nil, err
	}
	return usageProto(org, "", b, s.ceilingCents(ctx, org)), nil
}

func (s *Server) getApplicationUsage(ctx context.Context, req *svcv1.GetApplicationUsageRequest) (*svcv1.Usage, error) {
	c := rpc.From(ctx)
	if err := liveOnly(c); err != nil {
		return nil, err
	}
	app, err := s.application(ctx, c, req.GetId())
	if err != nil {
		return nil, err
	}
	month := platform.Month(s.cfg.Now())
	if req.Month != nil {
		month = req.GetMonth()
	}
	b, err := s.bill(ctx, app.OrgID, app.ID, month)
	if err != nil {
		return nil, err
	}
	return usageProto(app.OrgID, app.ID, b, s.ceilingCents(ctx, app.OrgID)), nil
}

func (s *Server) setCeiling(ctx context.Context, req *svcv1.SetCeilingRequest) (*svcv1.Ceiling, error) {
	c := rpc.From(ctx)
	if err := billingAccess(c, true); err != nil {
		return nil, err
	}
	org, err := usageOrg(c, req.OrgId)
	if err != nil {
		return nil, err
	}
	if c.User != nil {
		o, err := s.accounts.Org(ctx, org)
		if err != nil || o.OwnerID != c.User.ID {
			return nil, rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "Only the organization's owner changes its spending ceiling.")
		}
	}
	now := s.cfg.Now().UTC()
	before, err := s.meter.SetCeiling(ctx, org, req.GetCeilingCents())
	if err != nil {
		return nil, err
	}
	s.emit(ctx, platform.Tenant{Owner: org, Mode: platform.ModeLive}, event.UsageCeilingChanged, "/v1/usage", org,
		map[string]any{"org_id": org, "ceiling_cents": float64(req.GetCeilingCents()), "previous_ceiling_cents": float64(before)})
	return &svcv1.Ceiling{OrgId: org, CeilingCents: req.GetCeilingCents(), Currency: "usd", UpdatedAt: timestamppb.New(now)}, nil
}

// charger meters executions for the embedding package's finisher (svc.Options.Charger).
type charger struct{ s *Server }

func (c charger) Charge(ctx context.Context, p *svcv1.Plan, x *svcv1.Execution, objs []receipt.Object) ([]receipt.Charge, error) {
	return c.s.chargeExecution(ctx, p, x, objs)
}

// chargeExecution meters a live execution's usage exactly once (platform.Meter) and returns
// the receipt's charges.
func (s *Server) chargeExecution(ctx context.Context, p *svcv1.Plan, x *svcv1.Execution, objs []receipt.Object) ([]receipt.Charge, error) {
	charges := []receipt.Charge{}
	if p.GetMeter() == nil {
		return charges, nil // test mode and end users are not billed
	}
	app, err := s.devs.Application(ctx, p.GetActor().GetApplicationId())
	if err != nil {
		return nil, err
	}
	var moved, preserved int64
	for _, o := range objs {
		if o.Preserved {
			preserved += o.Bytes
		}
		if o.Preserved || o.Transferred {
			moved += o.Bytes
		}
	}
	cs, err := s.meter.ChargeExecution(ctx, app.OrgID, app.ID, x.GetId(), moved, preserved)
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		charges = append(charges, receipt.Charge{Meter: c.Meter, Quantity: c.Quantity, Unit: c.Unit, Cents: c.Cents, UsageEventID: id.New("use")})
	}
	return charges, nil
}

// usageLogFile is the usage log in the data directory (platform.Meter).
const usageLogFile = "usage.log"

// usageLogRotate is the log size from which a flush that read it all starts it again (a
// variable for the tests).
var usageLogRotate int64 = 1 << 20
