package creator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"time"
)

// StorefrontAPIVersion is the admin REST API version the storefront connector speaks (the
// Shopify Admin REST API's shape: /admin/api/<version>/orders.json and shopify_payments).
const StorefrontAPIVersion = "2024-07"

// storefrontConnector reads a shop's orders, refunds, payments balance transactions (fees) and
// payouts over its admin REST API, authenticated with X-Shopify-Access-Token.
type storefrontConnector struct {
	src  *Source
	base string
	hc   *http.Client
}

func newStorefront(s *Source, d Deps) *storefrontConnector {
	base := "https://" + s.Credentials.ShopDomain
	if d.StorefrontURL != nil {
		base = strings.TrimSuffix(d.StorefrontURL(s.Credentials.ShopDomain), "/")
	}
	return &storefrontConnector{src: s, base: base + "/admin/api/" + StorefrontAPIVersion, hc: d.httpClient()}
}

// StorefrontError is a non-success answer of the admin API.
type StorefrontError struct {
	Status int
	Body   string
}

func (e *StorefrontError) Error() string {
	return fmt.Sprintf("storefront admin API: HTTP %d: %s", e.Status, e.Body)
}

var reLinkNext = regexp.MustCompile(`<([^>]+)>;\s*rel="next"`)

// get fetches one page into v and returns the next page's URL ("" at the end).
func (c *storefrontConnector) get(ctx context.Context, u string, v any) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("X-Shopify-Access-Token", c.src.Credentials.AccessToken)
	req.Header.Set("Accept", "application/json")
	res, err := c.hc.Do(req)
	if err != nil {
		return "", fmt.Errorf("storefront admin API: %w", err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return "", &StorefrontError{Status: res.StatusCode, Body: strings.TrimSpace(string(b))}
	}
	if err := json.NewDecoder(io.LimitReader(res.Body, 64<<20)).Decode(v); err != nil {
		return "", fmt.Errorf("storefront admin API: %s: %w", req.URL.Path, err)
	}
	if m := reLinkNext.FindStringSubmatch(res.Header.Get("Link")); m != nil {
		return m[1], nil
	}
	return "", nil
}

func (c *storefrontConnector) Check(ctx context.Context) error {
	var v struct {
		Shop struct {
			Currency string `json:"currency"`
		} `json:"shop"`
	}
	_, err := c.get(ctx, c.base+"/shop.json", &v)
	if se, ok := err.(*StorefrontError); ok && (se.Status == 401 || se.Status == 403) {
		return &CredentialError{Kind: KindStorefront, Field: "access_token", Reason: "the shop refused the access token", Err: err}
	}
	if se, ok := err.(*StorefrontError); ok && se.Status == 404 {
		return &CredentialError{Kind: KindStorefront, Field: "shop_domain", Reason: "no shop answers at this domain", Err: err}
	}
	return err
}

type sfOrder struct {
	ID        int64     `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	Currency  string    `json:"currency"`
	Total     string    `json:"total_price"`
	Refunds   []struct {
		ID           int64     `json:"id"`
		CreatedAt    time.Time `json:"created_at"`
		Transactions []struct {
			Amount string `json:"amount"`
			Kind   string `json:"kind"`
			Status string `json:"status"`
		} `json:"transactions"`
	} `json:"refunds"`
}

type sfBalanceTxn struct {
	ID          int64     `json:"id"`
	Type        string    `json:"type"`
	PayoutID    *int64    `json:"payout_id"`
	Currency    string    `json:"currency"`
	Amount      string    `json:"amount"`
	Fee         string    `json:"fee"`
	Net         string    `json:"net"`
	ProcessedAt time.Time `json:"processed_at"`
}

type sfPayout struct {
	ID       int64  `json:"id"`
	Status   string `json:"status"`
	Date     string `json:"date"`
	Currency string `json:"currency"`
	Amount   string `json:"amount"`
}

func decimalCents(s string) (int64, error) {
	c, _, err := parseMoney(s, false)
	return c, err
}

func (c *storefrontConnector) Collect(ctx context.Context, since time.Time) (*Ledger, error) {
	shop := c.src.Credentials.ShopDomain
	key := StreamKey(shop)
	name := c.src.Label
	if name == "" {
		name = shop
	}
	led := &Ledger{}
	led.stream(key, name, shop, KindStorefront, c.src.ID)
	now := time.Now().UTC()
	acts := map[string]*Activity{}
	act := func(t time.Time, cur string) *Activity {
		p := Month(t)
		cur = strings.ToUpper(cur)
		a := acts[p.Label]
		if a == nil {
			a = &Activity{Stream: key, Name: name, Period: p, Currency: cur, Model: ModelFee, Gross: ptr(int64(0)), Deductions: map[string]int64{},
				Evidence: Evidence{Kind: EvidenceAPI, Ref: "storefront:orders.json?created_at=" + p.Label, SourceID: c.src.ID, ObservedAt: now}}
			acts[p.Label] = a
		}
		return a
	}
	q := url.Values{"status": {"any"}, "limit": {"250"}, "fields": {"id,name,created_at,currency,total_price,refunds"}}
	if !since.IsZero() {
		q.Set("created_at_min", since.UTC().Format(time.RFC3339))
	}
	next := c.base + "/orders.json?" + q.Encode()
	orders := 0
	for next != "" {
		var page struct {
			Orders []sfOrder `json:"orders"`
		}
		var err error
		if next, err = c.get(ctx, next, &page); err != nil {
			return nil, err
		}
		for _, o := range page.Orders {
			total, err := decimalCents(o.Total)
			if err != nil {
				led.Problems = append(led.Problems, fmt.Sprintf("storefront order %d: total_price %q unreadable", o.ID, o.Total))
				continue
			}
			a := act(o.CreatedAt, o.Currency)
			*a.Gross += total
			orders++
			for _, r := range o.Refunds {
				for _, t := range r.Transactions {
					if t.Kind != "refund" || t.Status != "success" {
						continue
					}
					v, err := decimalCents(t.Amount)
					if err != nil {
						continue
					}
					ra := act(r.CreatedAt, o.Currency)
					ra.Refunds += v
					ra.Adjustments -= v
				}
			}
		}
	}
	// Fees, and which payout paid which month, from the payments balance transactions.
	payoutMonth := map[int64]map[string]int64{}
	next = c.base + "/shopify_payments/balance/transactions.json?limit=250"
	for next != "" {
		var page struct {
			Transactions []sfBalanceTxn `json:"transactions"`
		}
		var err error
		if next, err = c.get(ctx, next, &page); err != nil {
			return nil, err
		}
		for _, t := range page.Transactions {
			if strings.HasPrefix(t.Type, "payout") || (!since.IsZero() && t.ProcessedAt.Before(since)) {
				continue // payout, payout_failure, payout_cancellation: read from payouts.json
			}
			fee, err := decimalCents(t.Fee)
			if err != nil {
				continue
			}
			a := act(t.ProcessedAt, t.Currency)
			if t.Type == "dispute" || t.Type == "adjustment" || t.Type == "reserve" {
				// Chargebacks, corrections and reserves: not in the orders, so adjustments here.
				if amt, err := decimalCents(t.Amount); err == nil {
					a.Adjustments += amt
				}
			}
			a.Fees += fee
			a.Deductions["payment processing fees"] += fee
			if t.PayoutID != nil {
				net, _ := decimalCents(t.Net)
				if payoutMonth[*t.PayoutID] == nil {
					payoutMonth[*t.PayoutID] = map[string]int64{}
				}
				payoutMonth[*t.PayoutID][Month(t.ProcessedAt).Label] += abs(net)
			}
		}
	}
	for _, a := range acts {
		a.Earned = ptr(*a.Gross - a.Fees)
		a.Net = ptr(*a.Earned + a.Adjustments - a.Withholding)
		a.Evidence.Excerpt = excerpt(fmt.Sprintf("orders and refunds of %s, payments balance transactions (fees)", a.Period.Label))
		led.Activity = append(led.Activity, *a)
	}
	sort.Slice(led.Activity, func(i, j int) bool { return led.Activity[i].Period.Label < led.Activity[j].Period.Label })
	next = c.base + "/shopify_payments/payouts.json?limit=250"
	for next != "" {
		var page struct {
			Payouts []sfPayout `json:"payouts"`
		}
		var err error
		if next, err = c.get(ctx, next, &page); err != nil {
			return nil, err
		}
		for _, po := range page.Payouts {
			amount, err := decimalCents(po.Amount)
			day, derr := time.Parse("2006-01-02", po.Date)
			if err != nil || derr != nil {
				led.Problems = append(led.Problems, fmt.Sprintf("storefront payout %d unreadable", po.ID))
				continue
			}
			// The payout's earning period is the month most of its transactions were processed
			// in; without them, the month before its date.
			period := Month(day.AddDate(0, 0, -1))
			best := int64(-1)
			for label, v := range payoutMonth[po.ID] {
				if v > best || (v == best && label < period.Label) {
					best = v
					t, _ := time.Parse("2006-01", label)
					period = Month(t)
				}
			}
			p := Payout{Stream: key, Name: name, Period: period, Currency: strings.ToUpper(po.Currency), AmountCents: amount, API: true,
				Evidence: Evidence{Kind: EvidenceAPI, Ref: fmt.Sprintf("storefront:payout/%d", po.ID), SourceID: c.src.ID, ObservedAt: now,
					Excerpt: excerpt(fmt.Sprintf("payout %d of %s %s on %s, status %s", po.ID, po.Amount, po.Currency, po.Date, po.Status))}}
			switch po.Status {
			case "paid":
				p.Settled, p.SettledAt = true, day
			case "scheduled", "in_transit":
				p.DueAt = day
			default:
				continue
			}
			if !since.IsZero() && day.Before(since) {
				continue
			}
			led.Payouts = append(led.Payouts, p)
		}
	}
	return led, nil
}
