package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"strconv"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
)

// portalPageTTL is how long a portal page URL served without a payment processor stays valid,
// like a processor's portal session.
const portalPageTTL = 15 * time.Minute

// portalOrg is the organization a portal request is about: the key's own; for a session, the
// one named, or the user's only one.
func portalOrg(c *Caller, orgID *string) (string, error) {
	if c.Key != nil || orgID != nil {
		return usageOrg(c, orgID)
	}
	switch len(c.User.OrgIDs) {
	case 0:
		return "", newProblem(http.StatusNotFound, codeNotFound, "You belong to no developer organization; there is nothing to bill.")
	case 1:
		return c.User.OrgIDs[0], nil
	}
	return "", invalid("org_id", "is required when you belong to several organizations")
}

// createPortalSession opens the billing portal (spec #13): a customer-portal session at the
// payment processor when one is configured, else svc's own portal page (a signed URL that
// expires like a portal session).
func (s *Server) createPortalSession(ctx context.Context, req *svcv1.CreatePortalSessionRequest) (*svcv1.PortalSession, error) {
	c := callerFrom(ctx)
	if err := billingAccess(c, true); err != nil {
		return nil, err
	}
	orgID, err := portalOrg(c, req.OrgId)
	if err != nil {
		return nil, err
	}
	base := s.publicBase(httpRequestFrom(ctx))
	if s.biller == nil {
		until := s.cfg.Now().Add(portalPageTTL).Unix()
		q := url.Values{"org": {orgID}, "expires": {strconv.FormatInt(until, 10)}, "sig": {s.portalSig(orgID, until)}}
		return &svcv1.PortalSession{Url: base + "/v1/billing/portal/page?" + q.Encode()}, nil
	}
	cus, err := s.accounts.Customer(ctx, orgID)
	if err != nil {
		return nil, err
	}
	u, err := s.biller.PortalURL(ctx, cus, base+"/")
	if err != nil {
		s.log.ErrorContext(ctx, "billing portal", "org_id", orgID, "err", err)
		return nil, newProblem(http.StatusBadGateway, codeInternal, "The payment processor did not open a portal session; try again.")
	}
	return &svcv1.PortalSession{Url: u}, nil
}

func (s *Server) portalSig(orgID string, expires int64) string {
	m := hmac.New(sha256.New, s.exportKey)
	m.Write([]byte("svc/billing-portal/v1\x00" + orgID + "\x00" + strconv.FormatInt(expires, 10)))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// portalMonths is how many past months the portal page lists.
const portalMonths = 12

// portalView is what the portal page shows.
type portalView struct {
	Org          string
	RateCard     string
	Month        platform.Bill
	CeilingCents int64
	Past         []platform.Bill
}

// servePortalPage renders svc's own billing portal for a signed, unexpired URL: the plan, this
// month's usage and rated lines, the ceiling, and past months. Static HTML: every value is
// escaped by html/template, no script runs (the Content-Security-Policy allows none).
func (s *Server) servePortalPage(w http.ResponseWriter, r *http.Request) {
	if !s.rateHeaders(w, r) {
		return
	}
	rid := requestIDFrom(r.Context())
	q := r.URL.Query()
	orgID := q.Get("org")
	expires, err := strconv.ParseInt(q.Get("expires"), 10, 64)
	if err != nil || !hmac.Equal([]byte(q.Get("sig")), []byte(s.portalSig(orgID, expires))) || !s.cfg.Now().Before(time.Unix(expires, 0)) {
		writeProblem(w, rid, newProblem(http.StatusForbidden, codeForbidden, "The portal link is not valid or has expired; open the portal again."))
		return
	}
	ctx := r.Context()
	org, err := s.store.Org(ctx, orgID)
	if err != nil {
		writeProblem(w, rid, toProblem(err))
		return
	}
	now := s.cfg.Now()
	v := portalView{Org: org.Name, RateCard: platform.RateCardVersion, CeilingCents: s.ceilingCents(ctx, orgID)}
	if v.Month, err = s.bill(ctx, orgID, "", platform.Month(now)); err != nil {
		writeProblem(w, rid, toProblem(err))
		return
	}
	first := time.Date(now.UTC().Year(), now.UTC().Month(), 1, 0, 0, 0, 0, time.UTC)
	for i := 1; i <= portalMonths; i++ {
		m := platform.Month(first.AddDate(0, -i, 0))
		b, err := s.bill(ctx, orgID, "", m)
		if err != nil {
			writeProblem(w, rid, toProblem(err))
			return
		}
		if b.OverageCents > 0 || hasUsage(b) {
			v.Past = append(v.Past, b)
		}
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	if err := portalTemplate.Execute(w, v); err != nil {
		s.log.Error("portal page", "err", err)
	}
}

func hasUsage(b platform.Bill) bool {
	for _, l := range b.Lines {
		if l.Quantity > 0 {
			return true
		}
	}
	return false
}

func usd(cents int64) string { return fmt.Sprintf("$%d.%02d", cents/100, cents%100) }

var portalTemplate = template.Must(template.New("portal").Funcs(template.FuncMap{"usd": usd, "qty": platform.FormatQuantity}).Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Billing · {{.Org}}</title>
<style>body{font:15px/1.5 system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;color:#222}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1.5rem}th,td{padding:.3rem .5rem;border-bottom:1px solid #ddd;text-align:right}
th:first-child,td:first-child{text-align:left}.muted{color:#666}</style></head>
<body>
<h1>Billing for {{.Org}}</h1>
<p>Plan: developer, rate card <code>{{.RateCard}}</code>, base price {{usd .Month.BaseCents}} a month. No payment processor is configured on this server: this page shows what is metered and rated; nothing is charged.</p>
<h2>This month ({{.Month.Month}})</h2>
<table><thead><tr><th>Meter</th><th>Used</th><th>Included</th><th>Overage</th><th>Amount</th></tr></thead><tbody>
{{range .Month.Lines}}<tr><td>{{.Meter}} <span class="muted">({{.Unit}})</span></td><td>{{qty .Quantity}}</td><td>{{qty .Included}}</td><td>{{qty .Overage}}</td><td>{{usd .Cents}}</td></tr>
{{end}}<tr><td>Base price</td><td></td><td></td><td></td><td>{{usd .Month.BaseCents}}</td></tr>
<tr><th>Total so far</th><th></th><th></th><th></th><th>{{usd .Month.TotalCents}}</th></tr></tbody></table>
<p>Monthly spending ceiling: {{usd .CeilingCents}}{{if gt .Month.TotalCents .CeilingCents}} (reached){{end}}.</p>
<h2>Past months</h2>
{{if .Past}}<table><thead><tr><th>Month</th><th>Base</th><th>Overage</th><th>Total</th></tr></thead><tbody>
{{range .Past}}<tr><td>{{.Month}}</td><td>{{usd .BaseCents}}</td><td>{{usd .OverageCents}}</td><td>{{usd .TotalCents}}</td></tr>
{{end}}</tbody></table>{{else}}<p class="muted">No usage in the last 12 months.</p>{{end}}
</body></html>
`))

// CloseMonths turns the rated lines of the last closed months into invoice items at the
// payment processor (platform.Meter.CloseMonths); without a processor it does nothing. The
// background loop runs it hourly; it returns how many items it created.
func (s *Server) CloseMonths(ctx context.Context) (int, error) {
	if s.biller == nil {
		return 0, nil
	}
	return s.meter.CloseMonths(ctx, s.biller, s.accounts.Customer)
}
