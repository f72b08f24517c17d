package server

import (
	"context"
	"net/http"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/receipt"
	"svc.dev/svc/store"
)

const receiptBlobs = "receipts"

// charger meters executions for the embedding package's finisher (svc.Options.Charger).
type charger struct{ s *Server }

func (c charger) Charge(ctx context.Context, p *svcv1.Plan, x *svcv1.Execution, objs []receipt.Object) ([]receipt.Charge, error) {
	return c.s.chargeExecution(ctx, p, x, objs)
}

// chargeExecution meters a live execution's usage exactly once (one execution, the data it
// moved, a month of storing what it preserved) and returns the receipt's charges: each meter's
// quantity and what it added to this month's bill.
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
	month := platform.Month(s.cfg.Now())
	qty := map[string]float64{platform.MeterExecutions: 1, platform.MeterDataTransferred: float64(moved) / 1e9,
		platform.MeterDeveloperStorage: float64(preserved) / 1e9}
	s.usage.flush()
	before, err := s.db.Usage(ctx, "org:"+app.OrgID, month)
	if err != nil {
		return nil, err
	}
	var deltas []store.UsageDelta
	after := map[string]float64{}
	for k, v := range before {
		after[k] = v
	}
	for _, r := range platform.RateCard {
		q, ok := qty[r.Meter]
		if !ok || q == 0 {
			continue
		}
		after[r.Meter] += q
		for _, scope := range []string{"org:" + app.OrgID, "app:" + app.ID} {
			deltas = append(deltas, store.UsageDelta{Scope: scope, Month: month, Meter: r.Meter, Quantity: q})
		}
	}
	if _, err := s.db.AddUsageOnce(ctx, "execution:"+x.GetId(), deltas); err != nil {
		return nil, err
	}
	b0, b1 := platform.RateMonth(month, before), platform.RateMonth(month, after)
	for i, r := range platform.RateCard {
		q, ok := qty[r.Meter]
		if !ok || q == 0 {
			continue
		}
		charges = append(charges, receipt.Charge{Meter: r.Meter, Quantity: q, Unit: r.Unit,
			Cents: b1.Lines[i].Cents - b0.Lines[i].Cents, UsageEventID: id.New("use")})
	}
	return charges, nil
}

// getReceipt serves a receipt's exact signed bytes (spec #17).
func (s *Server) getReceipt(ctx context.Context, req *svcv1.GetReceiptRequest) (*svcv1.Receipt, error) {
	c := callerFrom(ctx)
	r, raw, err := s.core.Tenant(c.Tenant).Receipt(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	// A receipt lists every object of its execution: a connection sees it only when its grant
	// reaches every source of the plan, as for the plan and the execution themselves.
	if c.Connection != nil {
		p, err := s.plans.Header(ctx, c.Tenant.String(), r.GetPlanId())
		if err != nil {
			return nil, err
		}
		if !c.grantReaches(p.GetSourceMarkers()) {
			return nil, newProblem(http.StatusForbidden, codeForbidden, "The connection's grant does not include every source of this receipt.")
		}
	}
	c.RawJSON = raw
	return r, nil
}

// serveReceiptKeys publishes the receipt signing keys, old ones included.
func (s *Server) serveReceiptKeys(w http.ResponseWriter, r *http.Request) {
	if !s.rateHeaders(w, r) {
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(s.keyring.KeySet())
}
