package stripe_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/internal/stripemock"
	"svc.dev/svc/platform/billing"
	"svc.dev/svc/platform/billing/stripe"
)

// recorder records the requests stripe-go sends.
type recorder struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req.Clone(context.Background()))
	r.mu.Unlock()
	return http.DefaultTransport.RoundTrip(req)
}

func TestAgainstStripeMock(t *testing.T) {
	base := stripemock.Start(t)
	rec := &recorder{}
	p := stripe.New("sk_test_123", &stripe.Options{URL: base, HTTPClient: &http.Client{Transport: rec, Timeout: 10 * time.Second}})
	ctx := context.Background()
	cus, err := p.CreateCustomer(ctx, "svc-customer-org_1", billing.Customer{OrgID: "org_1", Name: "Acme", Email: "a@example.com"})
	if err != nil || !strings.HasPrefix(cus, "cus_") {
		t.Fatalf("customer %q: %v", cus, err)
	}
	start := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	item, err := p.AddInvoiceItem(ctx, "svc-invoice-item-org_1-2026-10-plans", billing.InvoiceItem{CustomerID: cus, OrgID: "org_1",
		Month: "2026-10", Meter: "plans", Description: "Plans beyond 100", AmountCents: 250, Currency: "usd",
		PeriodStart: start, PeriodEnd: start.AddDate(0, 1, 0)})
	if err != nil || !strings.HasPrefix(item, "ii_") {
		t.Fatalf("invoice item %q: %v", item, err)
	}
	url, err := p.PortalURL(ctx, cus, "http://127.0.0.1/return")
	if err != nil || !strings.HasPrefix(url, "http") {
		t.Fatalf("portal %q: %v", url, err)
	}
	// Creations carry their idempotency keys; the secret key travels only as the credential.
	rec.mu.Lock()
	defer rec.mu.Unlock()
	keys := map[string]string{}
	for _, r := range rec.reqs {
		keys[r.URL.Path] = r.Header.Get("Idempotency-Key")
		if r.Header.Get("Authorization") != "Bearer sk_test_123" {
			t.Errorf("%s: Authorization %q", r.URL.Path, r.Header.Get("Authorization"))
		}
	}
	if keys["/v1/customers"] != "svc-customer-org_1" || keys["/v1/invoiceitems"] != "svc-invoice-item-org_1-2026-10-plans" {
		t.Fatalf("idempotency keys %v", keys)
	}
}
