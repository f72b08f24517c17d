package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3filter"

	"svc.dev/svc/internal/stripemock"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/billing/stripe"
	"svc.dev/svc/server"

	"svc.dev/svc/storage/bolt"
)

// The OpenAPI check of every response decodes bodies by media type; the portal page is HTML.
func init() { openapi3filter.RegisterBodyDecoder("text/html", openapi3filter.FileBodyDecoder) }

func portalURL(t *testing.T, e *env, body string, hdr []string) *url.URL {
	t.Helper()
	r := e.do("POST", "/v1/billing/portal", body, hdr...)
	if r.status != 200 {
		t.Fatalf("portal: %d %s", r.status, r.body)
	}
	u, err := url.Parse(r.json(t)["url"].(string))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// Without a payment processor, svc serves the portal page itself: static, escaped HTML.
func TestBillingPortalPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	month := platform.Month(e.clock.Now())
	last := platform.Month(e.clock.Now().AddDate(0, -1, 0))
	if err := server.DBOf(e.srv).AddUsage(ctx, []bolt.UsageDelta{
		{Scope: "org:" + e.creds.OrgID, Month: month, Meter: platform.MeterPlans, Quantity: 150},
		{Scope: "org:" + e.creds.OrgID, Month: last, Meter: platform.MeterExecutions, Quantity: 45},
	}); err != nil {
		t.Fatal(err)
	}
	u := portalURL(t, e, "", e.session())
	if u.Path != "/v1/billing/portal/page" {
		t.Fatalf("portal URL %s", u)
	}
	page := e.do("GET", u.RequestURI(), "")
	if page.status != 200 || !strings.HasPrefix(page.header.Get("Content-Type"), "text/html") ||
		!strings.Contains(page.header.Get("Content-Security-Policy"), "default-src 'none'") {
		t.Fatalf("page: %d %v", page.status, page.header)
	}
	// This month's 150 plans: 50 beyond the 100 included at 10 cents; last month's 45
	// executions: 20 beyond 25 at 50 cents.
	for _, want := range []string{"Dev Org", platform.RateCardVersion, month, "150", "$5.00", "$19.00", "$24.00", "$100.00", last, "$10.00", "$29.00"} {
		if !strings.Contains(string(page.body), want) {
			t.Errorf("the page does not show %q", want)
		}
	}
	// A live key opens its own organization's portal (a test key is refused: issue 21).
	if k := portalURL(t, e, "", e.liveKey()); k.Query().Get("org") != e.creds.OrgID {
		t.Fatalf("key's portal: %s", k)
	}
	// User content is never active: an organization named like markup is shown as text.
	r := e.do("POST", "/v1/developer/orgs", `{"name":"<script>alert(1)</script><img src=x onerror=alert(2)>"}`, e.session()...)
	orgID := r.json(t)["id"].(string)
	checkProblem(t, e.do("POST", "/v1/billing/portal", "", e.session()...), 400, "validation_failed") // two organizations now
	evil := e.do("GET", portalURL(t, e, `{"org_id":"`+orgID+`"}`, e.session()).RequestURI(), "")
	if strings.Contains(string(evil.body), "<script>") || strings.Contains(string(evil.body), "<img") ||
		!strings.Contains(string(evil.body), "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatalf("unescaped user content:\n%s", evil.body)
	}
	// Another user's organization is not found; links are authenticated and expire.
	other := e.signUp(t, "billing-other@example.com")
	checkProblem(t, e.do("POST", "/v1/billing/portal", `{"org_id":"`+e.creds.OrgID+`"}`, other...), 404, "not_found")
	checkProblem(t, e.do("POST", "/v1/billing/portal", "", other...), 404, "not_found")
	q := u.Query()
	q.Set("org", orgID)
	checkProblem(t, e.do("GET", u.Path+"?"+q.Encode(), ""), 403, "forbidden")
	e.clock.Advance(16 * time.Minute)
	checkProblem(t, e.do("GET", u.RequestURI(), ""), 403, "forbidden")
	checkProblem(t, e.do("POST", "/v1/billing/portal", `{"org_id":"nope"}`, e.session()...), 400, "validation_failed")
}

// countingTransport counts the requests to each path of the processor.
type countingTransport struct {
	mu    sync.Mutex
	paths map[string]int
}

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.paths[r.Method+" "+r.URL.Path]++
	c.mu.Unlock()
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingTransport) count(k string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paths[k]
}

// With Stripe (its mock), the portal is a Stripe session, the customer is made once per
// organization, and each closed month's rated lines become invoice items once.
func TestBillingWithStripe(t *testing.T) {
	base := stripemock.Start(t)
	ct := &countingTransport{paths: map[string]int{}}
	proc := stripe.New("sk_test_svc", &stripe.Options{URL: base, HTTPClient: &http.Client{Transport: ct, Timeout: 10 * time.Second}})
	e := newEnv(t, func(c *server.Config) { c.Billing = proc })
	ctx := context.Background()

	u := portalURL(t, e, "", e.session())
	if u.Host == "" || strings.Contains(u.Path, "/v1/billing/portal/page") {
		t.Fatalf("not a processor's portal: %s", u)
	}
	portalURL(t, e, "", e.liveKey())
	portalURL(t, e, "", with(e.session(), "Idempotency-Key", "p1"))
	if n := ct.count("POST /v1/customers"); n != 1 {
		t.Fatalf("%d customers created for one organization", n)
	}
	cus, err := server.DBOf(e.srv).Billing().Customer(ctx, e.creds.OrgID)
	if err != nil || !strings.HasPrefix(cus, "cus_") {
		t.Fatalf("recorded customer %q: %v", cus, err)
	}

	// Last month: 150 plans and 45 executions; closing it makes the base, plans and
	// executions items, once however often it runs.
	last := platform.Month(e.clock.Now().AddDate(0, -1, 0))
	server.DBOf(e.srv).AddUsage(ctx, []bolt.UsageDelta{
		{Scope: "org:" + e.creds.OrgID, Month: last, Meter: platform.MeterPlans, Quantity: 150},
		{Scope: "org:" + e.creds.OrgID, Month: last, Meter: platform.MeterExecutions, Quantity: 45},
	})
	n, err := e.srv.CloseMonths(ctx)
	if err != nil || n != 3 {
		t.Fatalf("close: %d items, %v", n, err)
	}
	for range 2 {
		if n, err := e.srv.CloseMonths(ctx); err != nil || n != 0 {
			t.Fatalf("closed again: %d, %v", n, err)
		}
	}
	if got := ct.count("POST /v1/invoiceitems"); got != 3 {
		t.Fatalf("%d invoice items sent", got)
	}
	for _, meter := range []string{"base", platform.MeterPlans, platform.MeterExecutions} {
		if id, err := server.DBOf(e.srv).Billing().InvoiceItem(ctx, e.creds.OrgID, last, meter); err != nil || !strings.HasPrefix(id, "ii_") {
			t.Errorf("%s: %q %v", meter, id, err)
		}
	}
	// This month is not closed yet.
	if _, err := server.DBOf(e.srv).Billing().InvoiceItem(ctx, e.creds.OrgID, platform.Month(e.clock.Now()), "base"); err == nil {
		t.Error("the current month was invoiced")
	}
	var body map[string]any
	json.Unmarshal(e.do("GET", "/v1/usage?month="+last, "", e.liveKey()...).body, &body) // usage is live-mode only
	if body["total_cents"] != float64(1900+500+1000) {
		t.Fatalf("usage of %s: %v", last, body)
	}
}

// The portal shows an organization's live spend in full: a test key is refused, and so is a
// live key without the billable_execute scope (issue 21, 1), behind the one check the usage
// and the ceiling use.
func TestBillingPortalNeedsALiveBillingKey(t *testing.T) {
	e := newEnv(t)
	checkProblem(t, e.do("POST", "/v1/billing/portal", "", e.key()...), 403, "forbidden")
	app := e.creds.ApplicationID
	r := e.do("POST", "/v1/developer/applications/"+app+"/keys", `{"mode":"live","scopes":["discover"]}`, e.session()...)
	secret, _ := r.json(t)["secret"].(string)
	if r.status != 201 || secret == "" {
		t.Fatalf("create a discover key: %d %s", r.status, r.body)
	}
	checkProblem(t, e.do("POST", "/v1/billing/portal", "", "Authorization", "Bearer "+secret), 403, "forbidden")
	if r := e.do("POST", "/v1/billing/portal", "", e.session()...); r.status != 200 {
		t.Fatalf("the owner's session: %d %s", r.status, r.body)
	}
}
