// Package stripe is billing's Processor on Stripe, through stripe-go.
package stripe

import (
	"context"
	"fmt"
	"net/http"
	"time"

	stripego "github.com/stripe/stripe-go/v85"

	"svc.dev/svc/platform/billing"
)

// Processor talks to Stripe's API (or to stripe-mock, with Options.URL).
type Processor struct{ c *stripego.Client }

// Options configure a Processor; zero fields take defaults.
type Options struct {
	// URL is the API's base address (default Stripe's own); tests point it at stripe-mock.
	URL string
	// HTTPClient makes the requests (default a client with a 30 s timeout).
	HTTPClient *http.Client
}

// New returns a processor using the secret key (sk_...). The key is never logged.
func New(secretKey string, opts *Options) *Processor {
	if opts == nil {
		opts = &Options{}
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 30 * time.Second}
	}
	cfg := &stripego.BackendConfig{HTTPClient: hc, LeveledLogger: &stripego.LeveledLogger{Level: stripego.LevelNull}}
	if opts.URL != "" {
		cfg.URL = stripego.String(opts.URL)
	}
	return &Processor{c: stripego.NewClient(secretKey, stripego.WithBackends(stripego.NewBackendsWithConfig(cfg)))}
}

var _ billing.Processor = (*Processor)(nil)

// CreateCustomer implements billing.Processor.
func (p *Processor) CreateCustomer(ctx context.Context, idempotencyKey string, c billing.Customer) (string, error) {
	params := &stripego.CustomerCreateParams{Name: stripego.String(c.Name), Metadata: map[string]string{"svc_org_id": c.OrgID}}
	if c.Email != "" {
		params.Email = stripego.String(c.Email)
	}
	params.IdempotencyKey = stripego.String(idempotencyKey)
	cus, err := p.c.V1Customers.Create(ctx, params)
	if err != nil {
		return "", fmt.Errorf("stripe: %w", err)
	}
	return cus.ID, nil
}

// AddInvoiceItem implements billing.Processor.
func (p *Processor) AddInvoiceItem(ctx context.Context, idempotencyKey string, it billing.InvoiceItem) (string, error) {
	params := &stripego.InvoiceItemCreateParams{
		Customer:    stripego.String(it.CustomerID),
		Amount:      stripego.Int64(it.AmountCents),
		Currency:    stripego.String(it.Currency),
		Description: stripego.String(it.Description),
		Period: &stripego.InvoiceItemCreatePeriodParams{
			Start: stripego.Int64(it.PeriodStart.Unix()),
			End:   stripego.Int64(it.PeriodEnd.Unix()),
		},
		Metadata: map[string]string{"svc_org_id": it.OrgID, "svc_month": it.Month, "svc_meter": it.Meter},
	}
	params.IdempotencyKey = stripego.String(idempotencyKey)
	item, err := p.c.V1InvoiceItems.Create(ctx, params)
	if err != nil {
		return "", fmt.Errorf("stripe: %w", err)
	}
	return item.ID, nil
}

// PortalURL implements billing.Processor.
func (p *Processor) PortalURL(ctx context.Context, customerID, returnURL string) (string, error) {
	params := &stripego.BillingPortalSessionCreateParams{Customer: stripego.String(customerID)}
	if returnURL != "" {
		params.ReturnURL = stripego.String(returnURL)
	}
	s, err := p.c.V1BillingPortalSessions.Create(ctx, params)
	if err != nil {
		return "", fmt.Errorf("stripe: %w", err)
	}
	return s.URL, nil
}
