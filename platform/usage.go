package platform

import (
	"math"
	"time"
)

// RateCardVersion is the developer rate card.
const RateCardVersion = "developer-2026-09"

// Meters of the rate card.
const (
	MeterAPIOperations     = "api_operations"
	MeterPlans             = "plans"
	MeterExecutions        = "executions"
	MeterDataTransferred   = "data_transferred"  // GB (decimal)
	MeterDeveloperStorage  = "developer_storage" // GB-month
	MeterIntelligenceOps   = "intelligence_operations"
	MeterWebhookDeliveries = "webhook_deliveries"
	MeterConnectedUsers    = "connected_end_users"
)

// BaseCents is the developer plan's monthly price (19 USD).
const BaseCents = 1900

// DefaultCeilingCents is the monthly spending ceiling until one is set (100 USD).
const DefaultCeilingCents = 10000

// Rate is one meter of the rate card: what a month includes and the overage price.
type Rate struct {
	Meter        string
	Unit         string
	Included     float64
	CentsPerUnit float64
}

// RateCard is developer-2026-09, in the spec's order.
var RateCard = []Rate{
	{MeterAPIOperations, "operation", 25_000, 0.05},     // 0.50 USD per 1,000
	{MeterPlans, "plan", 100, 10},                       // 0.10 USD per plan
	{MeterExecutions, "execution", 25, 50},              // 0.50 USD per execution
	{MeterDataTransferred, "GB", 50, 15},                // 0.15 USD per GB
	{MeterDeveloperStorage, "GB-month", 10, 4},          // 0.04 USD per GB-month
	{MeterIntelligenceOps, "operation", 500, 4},         // 0.04 USD per operation
	{MeterWebhookDeliveries, "delivery", 100_000, 0.01}, // 0.10 USD per 1,000
	{MeterConnectedUsers, "end user", 0, 25},            // 0.25 USD per connected end user per month
}

// BillLine is one meter of a month's bill.
type BillLine struct {
	Meter, Unit        string
	Quantity, Included float64
	Overage            float64 // quantity beyond the included amount
	Cents              int64   // overage priced, rounded to the nearest cent
}

// Bill is a month rated.
type Bill struct {
	Month           string // "2026-11"
	RateCardVersion string
	BaseCents       int64
	Lines           []BillLine
	OverageCents    int64
	TotalCents      int64
}

// Month names the billing month of t (UTC).
func Month(t time.Time) string { return t.UTC().Format("2006-01") }

// RateMonth rates a month's usage (quantities by meter) on the rate card: the base price plus
// every meter's overage beyond its included amount.
func RateMonth(month string, usage map[string]float64) Bill {
	b := Bill{Month: month, RateCardVersion: RateCardVersion, BaseCents: BaseCents}
	for _, r := range RateCard {
		q := usage[r.Meter]
		over := math.Max(0, q-r.Included)
		l := BillLine{Meter: r.Meter, Unit: r.Unit, Quantity: q, Included: r.Included, Overage: over,
			Cents: int64(math.Round(over * r.CentsPerUnit))}
		b.Lines = append(b.Lines, l)
		b.OverageCents += l.Cents
	}
	b.TotalCents = b.BaseCents + b.OverageCents
	return b
}
