package gmail_test

import (
	"context"
	"testing"
	"time"

	fake "svc.dev/svc/internal/vendorfake/gmail"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/gmail"
	"svc.dev/svc/providers/google"
	"svc.dev/svc/providers/providertest"
)

// TestPacingWithinQuota lists a mailbox for a few seconds with the default
// pacing (Gmail's published 15,000 quota units per user per minute) and
// counts the quota units the fake received: in every interval of the run
// they stay within the token bucket's bound, burst + rate*t, which keeps
// any 60 seconds under 15,000 units.
func TestPacingWithinQuota(t *testing.T) {
	s := fake.New(t, fake.Options{Messages: 2000})
	p := open(t, s, map[string]string{"quota_per_minute": "15000"})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Second)
	defer cancel()
	tok := ""
	for {
		pg, err := p.List(ctx, providers.ListRequest{SourceRef: "me", PageToken: tok, PageSize: 100})
		if err != nil {
			break // the deadline, as planned
		}
		if tok = pg.NextPageToken; tok == "" {
			t.Fatal("listed the whole mailbox: the pacing let too much through")
		}
	}
	lim := google.Limiter(gmail.QuotaPerMinute)
	rate, burst := float64(lim.Limit()), float64(lim.Burst())
	log := s.Log()
	if len(log) < 50 {
		t.Fatalf("only %d requests in 4 s", len(log))
	}
	total := 0
	for i := range log {
		sum := 0
		for j := i; j < len(log); j++ {
			sum += log[j].Cost
			// Server-side times lag the client's reservations a little:
			// allow one batch of slack.
			if bound := burst + rate*log[j].At.Sub(log[i].At).Seconds() + 5*gmail.DefaultBatch; float64(sum) > bound {
				t.Fatalf("%d units between request %d and %d (%v): more than %0.f", sum, i, j, log[j].At.Sub(log[i].At), bound)
			}
		}
		total += log[i].Cost
	}
	span := log[len(log)-1].At.Sub(log[0].At).Seconds()
	// The sustained rate: what came after the first second's burst.
	perMinute := (float64(total) - burst) / span * 60
	t.Logf("%d requests (%.0f/s), %d quota units in %.2f s; after the burst of %.0f units, %.0f units/s = %.0f a minute (quota %d)",
		len(log), float64(len(log))/span, total, span, burst, (float64(total)-burst)/span, perMinute, gmail.QuotaPerMinute)
	if perMinute > gmail.QuotaPerMinute*1.05 {
		t.Errorf("%.0f units a minute, quota %d", perMinute, gmail.QuotaPerMinute)
	}
	providertest.ListAll(context.Background(), t, open(t, s, nil), "me", 1000) // unpaced, for contrast: no error
}
