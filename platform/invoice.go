package platform

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"svc.dev/svc/platform/billing"
)

// MonthsToClose is how many past months each close pass looks at (a server that was down
// over a month's end catches up).
const MonthsToClose = 3

// CloseMonths turns the rated lines of the last closed months into invoice items at the
// payment processor, once each (billing.Biller.CloseMonth): the base fee and each meter's
// overage. customer says what the processor is told of an organization. It returns how many
// items it created.
func (m *Meter) CloseMonths(ctx context.Context, biller *billing.Biller, customer func(context.Context, string) (billing.Customer, error)) (int, error) {
	now := m.opts.Now().UTC()
	first := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	created := 0
	for i := MonthsToClose; i >= 1; i-- {
		month := Month(first.AddDate(0, -i, 0))
		orgs, err := m.store.Orgs(ctx, month)
		if err != nil {
			return created, err
		}
		for _, orgID := range orgs {
			b, err := m.Bill(ctx, orgID, "", month)
			if err != nil {
				return created, err
			}
			lines := []billing.Line{{Meter: "base", Description: "svc developer plan (" + b.RateCardVersion + "), " + month, Cents: b.BaseCents}}
			for _, l := range b.Lines {
				lines = append(lines, billing.Line{Meter: l.Meter, Cents: l.Cents,
					Description: fmt.Sprintf("%s: %s %s beyond %s included (%s)", l.Meter, FormatQuantity(l.Overage), l.Unit, FormatQuantity(l.Included), month)})
			}
			cus, err := customer(ctx, orgID)
			if err != nil {
				return created, err
			}
			n, err := biller.CloseMonth(ctx, cus, month, lines)
			created += n
			if err != nil {
				return created, err
			}
		}
	}
	return created, nil
}

// Customer is what the payment processor is told of an organization: its id, its name and
// its owner's email.
func (a *Accounts) Customer(ctx context.Context, orgID string) (billing.Customer, error) {
	org, err := a.Org(ctx, orgID)
	if err != nil {
		return billing.Customer{}, err
	}
	cus := billing.Customer{OrgID: org.ID, Name: org.Name}
	if owner, err := a.User(ctx, org.OwnerID); err == nil {
		cus.Email = owner.Email
	}
	return cus, nil
}

// FormatQuantity writes a metered quantity with at most three decimals and no trailing zeros.
func FormatQuantity(q float64) string {
	s := strconv.FormatFloat(q, 'f', 3, 64)
	return strings.TrimSuffix(strings.TrimRight(strings.TrimRight(s, "0"), "."), ".")
}

// Statement is an organization's billing at a glance: this month so far, its ceiling, and the
// past months that had usage or overage.
type Statement struct {
	Month        Bill
	CeilingCents int64
	Past         []Bill
}

// Statement rates this month and the months past (newest first) of an organization.
func (m *Meter) Statement(ctx context.Context, orgID string, months int) (Statement, error) {
	now := m.opts.Now()
	st := Statement{CeilingCents: m.CeilingCents(ctx, orgID)}
	var err error
	if st.Month, err = m.Bill(ctx, orgID, "", Month(now)); err != nil {
		return st, err
	}
	first := time.Date(now.UTC().Year(), now.UTC().Month(), 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= months; i++ {
		b, err := m.Bill(ctx, orgID, "", Month(first.AddDate(0, -i, 0)))
		if err != nil {
			return st, err
		}
		if b.OverageCents > 0 || b.used() {
			st.Past = append(st.Past, b)
		}
	}
	return st, nil
}

// used reports whether a bill counts any usage.
func (b Bill) used() bool {
	for _, l := range b.Lines {
		if l.Quantity > 0 {
			return true
		}
	}
	return false
}
