package creator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	stripego "github.com/stripe/stripe-go/v85"
)

// stripeConnector reads a Stripe account through stripe-go: balance transactions (charges,
// refunds, fees, adjustments) grouped by the month they were created in, and payouts.
type stripeConnector struct {
	src *Source
	c   *stripego.Client
}

func newStripe(s *Source, d Deps) *stripeConnector {
	cfg := &stripego.BackendConfig{HTTPClient: d.httpClient(), LeveledLogger: &stripego.LeveledLogger{Level: stripego.LevelNull},
		MaxNetworkRetries: stripego.Int64(1)}
	if d.StripeURL != "" {
		cfg.URL = stripego.String(d.StripeURL)
	}
	return &stripeConnector{src: s, c: stripego.NewClient(s.Credentials.APIKey, stripego.WithBackends(stripego.NewBackendsWithConfig(cfg)))}
}

func (c *stripeConnector) Check(ctx context.Context) error {
	k := c.src.Credentials.APIKey
	if !strings.HasPrefix(k, "sk_") && !strings.HasPrefix(k, "rk_") {
		return &CredentialError{Kind: KindStripe, Field: "api_key", Reason: "not a Stripe secret or restricted key (sk_... or rk_...)"}
	}
	if _, err := c.c.V1Balance.Retrieve(ctx, &stripego.BalanceRetrieveParams{}); err != nil {
		return stripeErr(err)
	}
	return nil
}

// stripeErr turns Stripe's refusal of the key into a CredentialError.
func stripeErr(err error) error {
	var se *stripego.Error
	if errors.As(err, &se) && (se.HTTPStatusCode == 401 || se.HTTPStatusCode == 403) {
		return &CredentialError{Kind: KindStripe, Field: "api_key", Reason: "Stripe refused the key", Err: err}
	}
	return fmt.Errorf("stripe: %w", err)
}

func (c *stripeConnector) Collect(ctx context.Context, since time.Time) (*Ledger, error) {
	key := StreamKey("stripe") + strings.ToLower(strings.TrimPrefix(c.src.ID, "crs_"))
	name := c.src.Label
	if name == "" {
		name = "Stripe"
	}
	led := &Ledger{}
	led.stream(key, name, "stripe.com", KindStripe, c.src.ID)
	at := func(unix int64) time.Time { return time.Unix(unix, 0).UTC() }
	type month struct {
		a     *Activity
		first time.Time
	}
	months := map[string]*month{}
	params := &stripego.BalanceTransactionListParams{}
	if !since.IsZero() {
		params.CreatedRange = &stripego.RangeQueryParams{GreaterThanOrEqual: since.Unix()}
	}
	params.Limit = stripego.Int64(100)
	for bt, err := range c.c.V1BalanceTransactions.List(ctx, params).All(ctx) {
		if err != nil {
			return nil, stripeErr(err)
		}
		p := Month(at(bt.Created))
		cur := strings.ToUpper(string(bt.Currency))
		m := months[p.Label+"/"+cur]
		if m == nil {
			m = &month{a: &Activity{Stream: key, Name: name, Period: p, Currency: cur, Model: ModelFee, Gross: ptr(int64(0)),
				Net: ptr(int64(0)), Deductions: map[string]int64{},
				Evidence: Evidence{Kind: EvidenceAPI, Ref: "stripe:balance_transactions?created=" + p.Label, SourceID: c.src.ID, ObservedAt: time.Now().UTC()}}}
			months[p.Label+"/"+cur] = m
		}
		a := m.a
		switch bt.Type {
		case stripego.BalanceTransactionTypePayout, stripego.BalanceTransactionTypePayoutCancel, stripego.BalanceTransactionTypePayoutFailure:
			continue // payouts are read from /v1/payouts
		case stripego.BalanceTransactionTypeCharge, stripego.BalanceTransactionTypePayment:
			*a.Gross += bt.Amount
		case stripego.BalanceTransactionTypeRefund, stripego.BalanceTransactionTypePaymentRefund:
			a.Refunds += -bt.Amount
			a.Adjustments += bt.Amount
		case stripego.BalanceTransactionTypeStripeFee, stripego.BalanceTransactionTypeStripeFxFee, stripego.BalanceTransactionTypeTaxFee,
			stripego.BalanceTransactionTypeApplicationFee:
			a.Fees += -bt.Amount
			a.Deductions[string(bt.Type)] += -bt.Amount
		default:
			a.Adjustments += bt.Amount
		}
		if bt.Fee != 0 {
			a.Fees += bt.Fee
			a.Deductions["stripe fees"] += bt.Fee
		}
		*a.Net += bt.Net
		if m.first.IsZero() || at(bt.Created).Before(m.first) {
			m.first = at(bt.Created)
			a.Evidence.Ref = "stripe:" + bt.ID
			a.Evidence.Excerpt = excerpt(fmt.Sprintf("first balance transaction of %s: %s %s %s", p.Label, bt.Type, money(cur, bt.Amount), bt.ID))
		}
	}
	for _, m := range months {
		m.a.Earned = ptr(*m.a.Gross - m.a.Fees)
		led.Activity = append(led.Activity, *m.a)
	}
	pp := &stripego.PayoutListParams{}
	pp.Limit = stripego.Int64(100)
	if !since.IsZero() {
		pp.CreatedRange = &stripego.RangeQueryParams{GreaterThanOrEqual: since.Unix()}
	}
	for po, err := range c.c.V1Payouts.List(ctx, pp).All(ctx) {
		if err != nil {
			return nil, stripeErr(err)
		}
		// A payout pays what the balance made available before it: its earning period is
		// the month it was created in (docs/creator.md).
		p := Payout{Stream: key, Name: name, Period: Month(at(po.Created)), Currency: strings.ToUpper(string(po.Currency)),
			AmountCents: po.Amount, API: true,
			Evidence: Evidence{Kind: EvidenceAPI, Ref: "stripe:" + po.ID, SourceID: c.src.ID, ObservedAt: time.Now().UTC(),
				Excerpt: excerpt(fmt.Sprintf("payout %s %s, status %s, arrival %s", po.ID, money(strings.ToUpper(string(po.Currency)), po.Amount), po.Status, at(po.ArrivalDate).Format("2006-01-02")))}}
		switch po.Status {
		case stripego.PayoutStatusPaid:
			p.Settled, p.SettledAt = true, at(po.ArrivalDate)
		case stripego.PayoutStatusPending, stripego.PayoutStatusInTransit:
			p.DueAt = at(po.ArrivalDate)
		default: // failed, canceled: nothing was or will be paid
			continue
		}
		led.Payouts = append(led.Payouts, p)
	}
	return led, nil
}
