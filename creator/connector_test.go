package creator_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/creator"
	"svc.dev/svc/id"
	"svc.dev/svc/internal/stripemock"
)

func TestStripeAgainstStripeMock(t *testing.T) {
	base := stripemock.Start(t)
	ctx := context.Background()
	svc := &creator.Service{Deps: creator.Deps{StripeURL: base}}
	st := creator.NewMemStore()

	// A bad credential is a clear problem at creation, and nothing is stored.
	for _, key := range []string{"pk_test_123", "sk_bogus"} {
		_, err := svc.CreateSource(ctx, st, creator.CreateRequest{Kind: creator.KindStripe, Credentials: creator.Credentials{APIKey: key}})
		var ce *creator.CredentialError
		if !errors.As(err, &ce) || !errors.Is(err, creator.ErrBadCredential) || ce.Field != "api_key" {
			t.Fatalf("key %q: got %v, want a credential error on api_key", key, err)
		}
	}
	if srcs, _ := st.Sources(ctx); len(srcs) != 0 {
		t.Fatalf("a refused source was stored: %v", srcs)
	}
	src, err := svc.CreateSource(ctx, st, creator.CreateRequest{Kind: creator.KindStripe, Label: "Stripe", Credentials: creator.Credentials{APIKey: "sk_test_123"}})
	if err != nil {
		t.Fatal(err)
	}
	if !id.Valid("crs", src.ID) || src.Status != "connected" {
		t.Fatalf("source %+v", src)
	}
	if b, _ := json.Marshal(src); strings.Contains(string(b), "sk_test_123") {
		t.Fatalf("the credential is serialized: %s", b)
	}
	rep, err := svc.Reconcile(ctx, st, time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Problems) > 0 {
		t.Fatalf("problems: %v", rep.Problems)
	}
	// stripe-mock answers its fixtures: one charge of 100 and one payout of 1100 (in transit).
	if len(rep.Result.Items) == 0 {
		t.Fatal("no items from stripe-mock")
	}
	var sawSettled, sawGross bool
	for _, it := range rep.Result.Items {
		if it.CreatorSourceID != src.ID {
			t.Errorf("item of %s, want %s", it.CreatorSourceID, src.ID)
		}
		if it.EvidenceLevel == creator.Detected {
			t.Errorf("an item of API evidence only is %s", it.EvidenceLevel)
		}
		for _, e := range it.Evidence {
			if e.Kind != creator.EvidenceAPI && e.Kind != creator.EvidenceDerived {
				t.Errorf("evidence kind %s", e.Kind)
			}
		}
		sawSettled = sawSettled || it.SettledCents != nil && *it.SettledCents == 1100 || it.ScheduledCents != nil && *it.ScheduledCents == 1100
		sawGross = sawGross || it.GrossCents != nil && *it.GrossCents == 100
	}
	if !sawSettled || !sawGross {
		t.Fatalf("want the fixture charge (100) and payout (1100): %s", dump(rep.Result.Items))
	}
}

func dump(v any) string { b, _ := json.MarshalIndent(v, "", " "); return string(b) }

// fakeShop is a local fake of a storefront admin REST API in the Shopify Admin REST API's
// wire format: X-Shopify-Access-Token, /admin/api/<version>/{shop,orders}.json,
// shopify_payments/balance/transactions.json and shopify_payments/payouts.json, prices as
// decimal strings, cursor pagination by page_info in a Link header.
type fakeShop struct {
	token    string
	orders   []map[string]any
	txns     []map[string]any
	payouts  []map[string]any
	mu       sync.Mutex
	requests []string
}

func (f *fakeShop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.URL.RequestURI())
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if r.Header.Get("X-Shopify-Access-Token") != f.token {
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprint(w, `{"errors":"[API] Invalid API key or access token (unrecognized login or wrong password)"}`)
		return
	}
	prefix := "/admin/api/" + creator.StorefrontAPIVersion
	path, ok := strings.CutPrefix(r.URL.Path, prefix)
	if !ok {
		http.NotFound(w, r)
		return
	}
	page := func(key string, all []map[string]any) {
		limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
		if limit <= 0 || limit > 250 {
			limit = 50
		}
		start, _ := strconv.Atoi(strings.TrimPrefix(r.URL.Query().Get("page_info"), "p"))
		end := min(start+limit, len(all))
		if end < len(all) {
			next := fmt.Sprintf("http://%s%s?limit=%d&page_info=p%d", r.Host, r.URL.Path, limit, end)
			w.Header().Set("Link", fmt.Sprintf(`<%s>; rel="next"`, next))
		}
		json.NewEncoder(w).Encode(map[string]any{key: all[start:end]})
	}
	switch path {
	case "/shop.json":
		fmt.Fprint(w, `{"shop":{"id":1,"name":"Merch","domain":"merch.example","currency":"USD"}}`)
	case "/orders.json":
		page("orders", f.orders)
	case "/shopify_payments/balance/transactions.json":
		page("transactions", f.txns)
	case "/shopify_payments/payouts.json":
		page("payouts", f.payouts)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"errors":"Not Found"}`)
	}
}

func TestStorefrontAgainstFake(t *testing.T) {
	f := &fakeShop{token: "shpat_good"}
	// March: 300 orders of $10.00 (paged 250 + 50), one $10.00 refund, $0.59 fees each, a
	// $10.00 chargeback with a $15.00 fee; paid
	// out on April 3. April: one order, payout scheduled.
	var marchFees int64
	for i := range 300 {
		at := time.Date(2026, 3, 1+i%28, 12, 0, 0, 0, time.UTC)
		o := map[string]any{"id": 1000 + i, "name": fmt.Sprintf("#%d", 1000+i), "created_at": at.Format(time.RFC3339), "currency": "USD", "total_price": "10.00", "refunds": []any{}}
		if i == 7 {
			o["refunds"] = []any{map[string]any{"id": 9, "created_at": at.Add(48 * time.Hour).Format(time.RFC3339),
				"transactions": []any{map[string]any{"amount": "10.00", "kind": "refund", "status": "success"}}}}
		}
		f.orders = append(f.orders, o)
		f.txns = append(f.txns, map[string]any{"id": 5000 + i, "type": "charge", "payout_id": 77, "currency": "USD", "amount": "10.00", "fee": "0.59", "net": "9.41", "processed_at": at.Format(time.RFC3339)})
		marchFees += 59
	}
	// A chargeback: in the balance transactions only.
	f.txns = append(f.txns, map[string]any{"id": 6001, "type": "dispute", "payout_id": 77, "currency": "USD", "amount": "-10.00", "fee": "15.00", "net": "-25.00", "processed_at": "2026-03-20T10:00:00Z"},
		map[string]any{"id": 6002, "type": "payout", "payout_id": 77, "currency": "USD", "amount": "-1.00", "fee": "0.00", "net": "-1.00", "processed_at": "2026-04-03T10:00:00Z"})
	marchFees += 1500
	f.orders = append(f.orders, map[string]any{"id": 9999, "created_at": "2026-04-02T10:00:00-04:00", "currency": "USD", "total_price": "25.50", "refunds": []any{}})
	f.payouts = []map[string]any{
		{"id": 77, "status": "paid", "date": "2026-04-03", "currency": "USD", "amount": fmt.Sprintf("%d.%02d", (300000-marchFees-2000)/100, (300000-marchFees-2000)%100)},
		{"id": 78, "status": "scheduled", "date": "2026-05-03", "currency": "USD", "amount": "24.00"},
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	ctx := context.Background()
	svc := &creator.Service{Deps: creator.Deps{StorefrontURL: func(string) string { return srv.URL }}}
	st := creator.NewMemStore()
	_, err := svc.CreateSource(ctx, st, creator.CreateRequest{Kind: creator.KindStorefront, Credentials: creator.Credentials{ShopDomain: "merch.example", AccessToken: "wrong"}})
	if !errors.Is(err, creator.ErrBadCredential) || !strings.Contains(err.Error(), "access_token") {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := svc.CreateSource(ctx, st, creator.CreateRequest{Kind: creator.KindStorefront, Credentials: creator.Credentials{ShopDomain: "not a domain", AccessToken: "x"}}); err == nil {
		t.Fatal("a bad shop domain was accepted")
	}
	src, err := svc.CreateSource(ctx, st, creator.CreateRequest{Kind: creator.KindStorefront, Label: "Merch", Credentials: creator.Credentials{ShopDomain: "merch.example", AccessToken: "shpat_good"}})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := svc.Reconcile(ctx, st, time.Date(2026, 5, 20, 0, 0, 0, 0, time.UTC), nil)
	if err != nil {
		t.Fatal(err)
	}
	byLabel := map[string]*creator.Item{}
	for _, it := range rep.Result.Items {
		byLabel[it.Period.Label] = it
	}
	mar := byLabel["2026-03"]
	if mar == nil || *mar.GrossCents != 300000 || mar.FeesCents != marchFees || mar.AdjustmentsCents != -2000 {
		t.Fatalf("March: %s", dump(mar))
	}
	if *mar.ReportedCents != 300000-marchFees-2000 || *mar.SettledCents != *mar.ReportedCents || mar.EvidenceLevel != creator.Estimated && mar.EvidenceLevel != creator.Confirmed {
		t.Fatalf("March amounts: %s", dump(mar))
	}
	if mar.CreatorSourceID != src.ID {
		t.Fatalf("March belongs to %s", mar.CreatorSourceID)
	}
	apr := byLabel["2026-04"]
	if apr == nil || *apr.GrossCents != 2550 {
		t.Fatalf("April: %s", dump(apr))
	}
	// The pages were followed: 250 + 50 orders in two requests.
	n := 0
	for _, r := range f.requests {
		if strings.Contains(r, "orders.json") {
			n++
		}
	}
	if n != 2 {
		t.Fatalf("%d orders requests, want 2: %v", n, f.requests)
	}
}
