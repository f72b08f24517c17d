package creator

import (
	"fmt"
	"strings"

	"svc.dev/svc/id"
)

// invoices makes one item per sponsor invoice: expected is the contracted amount (else the
// invoiced one), reported the invoiced amount, settled what the remittances paid.
func (r *reconciler) invoices() {
	paid := map[string][]Remittance{}
	for _, rm := range r.l.Remittances {
		paid[rm.Sponsor+"/"+normInvoice(rm.Number)] = append(paid[rm.Sponsor+"/"+normInvoice(rm.Number)], rm)
	}
	seen := map[string]bool{}
	for _, inv := range r.l.Invoices {
		key := inv.Sponsor + "/" + normInvoice(inv.Number)
		if seen[key] {
			continue
		}
		seen[key] = true
		info := r.info(inv.Sponsor)
		p := Month(inv.IssuedAt)
		it := &Item{ID: id.Derive("rev", p.Start, info.SourceID+"/invoice/"+key), CreatorSourceID: info.SourceID, Period: p,
			Currency: inv.Currency, CalculationVersion: CalculationVersion, UpdatedAt: r.opts.AsOf, Invoice: inv.Number}
		it.GrossCents = ptr(inv.AmountCents)
		it.ReportedCents = ptr(inv.AmountCents)
		exp := inv.AmountCents
		if inv.ContractCents != nil {
			exp = *inv.ContractCents
		}
		it.ExpectedCents = &exp
		it.Evidence = append(it.Evidence, inv.Evidence...)
		it.State = StateReported
		var sum int64
		rms := paid[key]
		for _, rm := range rms {
			sum += rm.AmountCents
			it.Evidence = appendEvidence(it.Evidence, rm.Evidence)
		}
		if len(rms) > 0 {
			it.SettledCents = &sum
			v := sum - exp
			it.VarianceCents = &v
			it.State = StateReconciled
			if abs(v) > reconciledTolerance(exp) {
				it.State = StateDiscrepancy
			}
		}
		r.level(it, Detected)
		r.items = append(r.items, it)
		if len(rms) == 0 && r.opts.AsOf.After(inv.DueAt.AddDate(0, 0, sponsorGraceDays)) {
			days := int(r.opts.AsOf.Sub(inv.DueAt).Hours() / 24)
			sev := SeverityReview
			if days > 30 {
				sev = SeverityHigh
			}
			r.add(&Anomaly{Kind: SponsorOverdue, CreatorSourceID: info.SourceID, Severity: sev, Period: inv.Number, ItemID: it.ID,
				Detail: fmt.Sprintf("Invoice %s to %s for %s was due on %s and is %d days overdue: no payment has been seen.",
					inv.Number, inv.Name, money(inv.Currency, inv.AmountCents), inv.DueAt.Format("2006-01-02"), days),
				Evidence: inv.Evidence}, inv.DueAt)
		}
		if len(rms) > 0 {
			last := rms[len(rms)-1].PaidAt
			if last.After(inv.DueAt.AddDate(0, 0, sponsorGraceDays)) {
				a := &Anomaly{Kind: SponsorOverdue, CreatorSourceID: info.SourceID, Severity: SeverityInfo, Period: inv.Number, ItemID: it.ID,
					Detail: fmt.Sprintf("Invoice %s to %s for %s was due on %s and was paid on %s, %d days late.", inv.Number, inv.Name,
						money(inv.Currency, inv.AmountCents), inv.DueAt.Format("2006-01-02"), last.Format("2006-01-02"), int(last.Sub(inv.DueAt).Hours()/24)),
					Evidence: append(append([]Evidence(nil), inv.Evidence...), rms[len(rms)-1].Evidence)}
				r.add(a, inv.DueAt)
				a.Status, a.Resolution, a.ResolvedAt = StatusResolved, fmt.Sprintf("paid on %s (remittance %s)", last.Format("2006-01-02"), rms[len(rms)-1].Evidence.Ref), ptr(last)
			}
		}
	}
}

func normInvoice(n string) string {
	return strings.TrimLeft(strings.ToUpper(strings.NewReplacer("#", "", " ", "").Replace(n)), "0")
}
