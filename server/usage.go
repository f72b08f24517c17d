package server

import (
	"context"
	"net/http"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/receipt"
)

// meterCall meters an API operation made with a live key.
func (s *Server) meterCall(c *Caller, out *outcome) {
	if c.Key == nil || c.Key.Mode != platform.ModeLive || out.status == http.StatusTooManyRequests {
		return
	}
	s.meter.Add(c.Key.OrgID, c.Key.AppID, platform.MeterAPIOperations, 1)
}

// planBilling is the commercial context of a live developer key for plan estimates and
// authorization: this month's usage, the ceiling, and what is already spent.
func (s *Server) planBilling(ctx context.Context, c *Caller) (*plan.Billing, error) {
	b := billingOf(c)
	if b == nil {
		return nil, nil
	}
	month := platform.Month(s.cfg.Now())
	bill, err := s.meter.Bill(ctx, c.Key.OrgID, "", month)
	if err != nil {
		return nil, err
	}
	u := map[string]float64{}
	for _, l := range bill.Lines {
		u[l.Meter] = l.Quantity
	}
	b.Usage = plan.Usage{Plans: int64(u[platform.MeterPlans]), Executions: int64(u[platform.MeterExecutions]),
		TransferredBytes: int64(u[platform.MeterDataTransferred] * 1e9), StoredByteMonths: int64(u[platform.MeterDeveloperStorage] * 1e9)}
	b.CeilingCents = s.meter.CeilingCents(ctx, c.Key.OrgID)
	b.SpentCents = bill.TotalCents
	return b, nil
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

// CloseMonths turns the rated lines of the last closed months into invoice items at the
// payment processor (platform.Meter.CloseMonths); without a processor it does nothing. The
// background loop runs it hourly; it returns how many items it created.
func (s *Server) CloseMonths(ctx context.Context) (int, error) {
	if s.biller == nil {
		return 0, nil
	}
	return s.meter.CloseMonths(ctx, s.biller, s.accounts.Customer)
}

// usageLogFile is the usage log in the data directory (platform.Meter).
const usageLogFile = "usage.log"

// usageLogRotate is the log size from which a flush that read it all starts it again (a
// variable for the tests).
var usageLogRotate int64 = 1 << 20
