package plan

import (
	"math"

	svcv1 "svc.dev/svc/gen/svc/v1"
)

// RateCardVersion is the rate card plans are estimated on.
const RateCardVersion = "developer-2026-09"

// A rate card line: monthly included quantity and overage price.
type rate struct {
	meter, unit   string
	included      float64
	centsPerUnit  float64
	quantity      func(pr *svcv1.Projection) float64
	usedThisMonth func(u Usage) float64
}

const gb = 1e9 // the rate card's GB is decimal

// perPlan is the part of the rate card developer-2026-09 a plan's execution incurs: the plan
// itself, one execution, the data it moves (fetched into the vault or copied to a destination)
// and a month of storing what it preserves. API operations, intelligence operations, webhook
// deliveries and connected end users are metered by the platform, not estimated per plan.
var perPlan = []rate{
	{meter: "plans", unit: "plan", included: 100, centsPerUnit: 10,
		quantity: func(*svcv1.Projection) float64 { return 1 }, usedThisMonth: func(u Usage) float64 { return float64(u.Plans) }},
	{meter: "executions", unit: "execution", included: 25, centsPerUnit: 50,
		quantity: func(*svcv1.Projection) float64 { return 1 }, usedThisMonth: func(u Usage) float64 { return float64(u.Executions) }},
	{meter: "data_transferred", unit: "GB", included: 50, centsPerUnit: 15,
		quantity:      func(pr *svcv1.Projection) float64 { return float64(pr.BytesToPreserve+pr.BytesToTransfer) / gb },
		usedThisMonth: func(u Usage) float64 { return float64(u.TransferredBytes) / gb }},
	{meter: "developer_storage", unit: "GB-month", included: 10, centsPerUnit: 4,
		quantity:      func(pr *svcv1.Projection) float64 { return float64(pr.BytesToPreserve) / gb },
		usedThisMonth: func(u Usage) float64 { return float64(u.StoredByteMonths) / gb }},
}

// Estimate prices a plan's projection on the rate card, given the month's usage so far: each
// line's quantity, whether it falls within the included allowance, and the overage in cents
// (rounded up to a whole cent per line). withinStandingEnvelope says whether the estimate fits
// under the spending ceiling.
func Estimate(pr *svcv1.Projection, b *Billing) *svcv1.PlanMeter {
	m := &svcv1.PlanMeter{RateCardVersion: RateCardVersion, Currency: svcv1.Currency_CURRENCY_USD, Lines: []*svcv1.MeterLine{}}
	for _, r := range perPlan {
		q := r.quantity(pr)
		if q == 0 {
			continue
		}
		used := r.usedThisMonth(b.Usage)
		over := math.Max(0, used+q-r.included) - math.Max(0, used-r.included)
		cents := int64(math.Ceil(over*r.centsPerUnit - 1e-9))
		within := over == 0
		m.Lines = append(m.Lines, &svcv1.MeterLine{Meter: r.meter, Quantity: math.Round(q*1e6) / 1e6, Unit: r.unit,
			EstimatedCents: cents, IncludedInAllowance: within})
		m.EstimatedCents += cents
		m.IncludedAllowanceApplied = m.IncludedAllowanceApplied || within || used < r.included
	}
	within := b.SpentCents+m.EstimatedCents <= b.CeilingCents
	m.WithinStandingEnvelope = &within
	return m
}
