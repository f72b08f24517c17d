package page

import (
	"fmt"
	"html/template"
	"log/slog"
	"net/http"

	"svc.dev/svc/platform"
)

// Portal writes svc's own billing portal page for an organization: the plan, this month's
// usage and rated lines, the ceiling, and past months. Static HTML: every value is escaped by
// html/template, no script runs (the Content-Security-Policy allows none).
func Portal(w http.ResponseWriter, log *slog.Logger, org string, st platform.Statement) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	v := struct {
		Org, RateCard string
		platform.Statement
	}{org, platform.RateCardVersion, st}
	if err := portalTemplate.Execute(w, v); err != nil {
		log.Error("portal page", "err", err)
	}
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
