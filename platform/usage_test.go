package platform_test

import (
	"testing"

	"svc.dev/svc/platform"
)

func line(b platform.Bill, meter string) platform.BillLine {
	for _, l := range b.Lines {
		if l.Meter == meter {
			return l
		}
	}
	return platform.BillLine{}
}

// Golden figures from the rate card developer-2026-09.
func TestRateMonth(t *testing.T) {
	cases := []struct {
		meter string
		qty   float64
		cents int64
	}{
		{platform.MeterAPIOperations, 30_000, 250},      // 5,000 over at 0.50 USD per 1,000
		{platform.MeterAPIOperations, 25_000, 0},        // exactly the allowance
		{platform.MeterPlans, 120, 200},                 // 20 over at 0.10 USD
		{platform.MeterExecutions, 30, 250},             // 5 over at 0.50 USD
		{platform.MeterDataTransferred, 60, 150},        // 10 GB over at 0.15 USD
		{platform.MeterDeveloperStorage, 35, 100},       // 25 GB-month over at 0.04 USD
		{platform.MeterIntelligenceOps, 600, 400},       // 100 over at 0.04 USD
		{platform.MeterWebhookDeliveries, 150_000, 500}, // 50,000 over at 0.10 USD per 1,000
		{platform.MeterConnectedUsers, 12, 300},         // none included, 0.25 USD each
	}
	for _, c := range cases {
		b := platform.RateMonth("2026-11", map[string]float64{c.meter: c.qty})
		if got := line(b, c.meter).Cents; got != c.cents {
			t.Errorf("%s x %v: %d cents, want %d", c.meter, c.qty, got, c.cents)
		}
		if b.TotalCents != 1900+c.cents || b.RateCardVersion != "developer-2026-09" {
			t.Errorf("%s: total %d", c.meter, b.TotalCents)
		}
	}
	empty := platform.RateMonth("2026-11", nil)
	if empty.TotalCents != 1900 || empty.OverageCents != 0 || len(empty.Lines) != 8 {
		t.Fatalf("an empty month: %+v", empty)
	}
}
