// Package billing charges developer organizations for their metered live usage at a payment
// processor: one customer per organization, created once however often it is asked for, and at
// each month's close the month's rated lines (rate card developer-2026-09) become invoice items
// on that customer, exactly once. Processors implement the small Processor interface
// (billing/stripe is Stripe's); storage comes through Store.
package billing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"svc.dev/svc/id"
)

// ErrNotFound is returned by a Store that holds no such record.
var ErrNotFound = id.ErrNotFound

// Processor is a payment processor's side of billing. Each call that creates something takes
// an idempotency key: the same key must yield the same object, so that a call repeated after a
// crash (or a lost answer) creates nothing twice.
type Processor interface {
	// CreateCustomer creates the customer of an organization.
	CreateCustomer(ctx context.Context, idempotencyKey string, c Customer) (string, error)
	// AddInvoiceItem adds a pending invoice item to a customer's next invoice.
	AddInvoiceItem(ctx context.Context, idempotencyKey string, item InvoiceItem) (string, error)
	// PortalURL opens a customer-portal session and returns its address.
	PortalURL(ctx context.Context, customerID, returnURL string) (string, error)
}

// Customer is what the processor is told of an organization.
type Customer struct {
	OrgID, Name, Email string
}

// InvoiceItem is one rated line of a closed month.
type InvoiceItem struct {
	CustomerID  string
	OrgID       string
	Month       string // "2026-10"
	Meter       string // a rate card meter, or "base"
	Description string
	AmountCents int64
	Currency    string // "usd"
	PeriodStart time.Time
	PeriodEnd   time.Time
}

// Line is a rated line of a month's bill, as billing receives it.
type Line struct {
	Meter, Description string
	Cents              int64
}

// Store keeps the billing records: the customer of each organization and the invoice items
// made for each closed month's lines.
type Store interface {
	// Customer returns an organization's customer id, or ErrNotFound.
	Customer(ctx context.Context, orgID string) (string, error)
	PutCustomer(ctx context.Context, orgID, customerID string) error
	// InvoiceItem returns the item made for a line of an organization's month, or ErrNotFound.
	InvoiceItem(ctx context.Context, orgID, month, meter string) (string, error)
	PutInvoiceItem(ctx context.Context, orgID, month, meter, itemID string) error
}

// Biller runs billing on a processor.
type Biller struct {
	p  Processor
	s  Store
	mu sync.Mutex // one customer creation at a time, so concurrent requests make one call
}

// New returns a biller charging through p, recording in s.
func New(p Processor, s Store) *Biller { return &Biller{p: p, s: s} }

// EnsureCustomer returns an organization's customer, creating it at the processor the first
// time. The idempotency key is the organization's id, so a creation whose answer was lost (a
// crash before it was recorded) is answered with the same customer when tried again.
func (b *Biller) EnsureCustomer(ctx context.Context, c Customer) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	id, err := b.s.Customer(ctx, c.OrgID)
	if err == nil {
		return id, nil
	}
	if !errors.Is(err, ErrNotFound) {
		return "", err
	}
	id, err = b.p.CreateCustomer(ctx, "svc-customer-"+c.OrgID, c)
	if err != nil {
		return "", fmt.Errorf("create customer: %w", err)
	}
	if err := b.s.PutCustomer(ctx, c.OrgID, id); err != nil {
		return "", fmt.Errorf("record customer: %w", err)
	}
	return id, nil
}

// PortalURL opens a customer-portal session for an organization.
func (b *Biller) PortalURL(ctx context.Context, c Customer, returnURL string) (string, error) {
	id, err := b.EnsureCustomer(ctx, c)
	if err != nil {
		return "", err
	}
	return b.p.PortalURL(ctx, id, returnURL)
}

// CloseMonth turns a closed month's rated lines (those with a charge) into invoice items on the
// organization's customer, each exactly once: a line already recorded is skipped, and a line's
// idempotency key (organization, month, meter) makes a repeat after a crash return the same
// item. It returns how many items it created.
func (b *Biller) CloseMonth(ctx context.Context, c Customer, month string, lines []Line) (int, error) {
	start, err := time.Parse("2006-01", month)
	if err != nil {
		return 0, fmt.Errorf("month %q: %w", month, err)
	}
	var customer string
	n := 0
	for _, l := range lines {
		if l.Cents <= 0 {
			continue
		}
		_, err := b.s.InvoiceItem(ctx, c.OrgID, month, l.Meter)
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrNotFound) {
			return n, err
		}
		if customer == "" {
			if customer, err = b.EnsureCustomer(ctx, c); err != nil {
				return n, err
			}
		}
		item := InvoiceItem{CustomerID: customer, OrgID: c.OrgID, Month: month, Meter: l.Meter, Description: l.Description,
			AmountCents: l.Cents, Currency: "usd", PeriodStart: start, PeriodEnd: start.AddDate(0, 1, 0).Add(-time.Second)}
		id, err := b.p.AddInvoiceItem(ctx, "svc-invoice-item-"+c.OrgID+"-"+month+"-"+l.Meter, item)
		if err != nil {
			return n, fmt.Errorf("invoice item %s %s: %w", month, l.Meter, err)
		}
		if err := b.s.PutInvoiceItem(ctx, c.OrgID, month, l.Meter, id); err != nil {
			return n, fmt.Errorf("record invoice item: %w", err)
		}
		n++
	}
	return n, nil
}
