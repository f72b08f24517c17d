package creator

import (
	"fmt"
	"time"

	"svc.dev/svc/id"
)

// add records an anomaly with its deterministic id.
func (r *reconciler) add(a *Anomaly, at time.Time) {
	a.ID = id.Derive("ano", at, string(a.Kind)+"/"+a.CreatorSourceID+"/"+a.Period+"/"+a.ItemID)
	a.Language = Language[a.Kind]
	if a.Status == "" {
		a.Status = StatusOpen
	}
	a.DetectedAt = r.opts.AsOf
	if len(a.Evidence) > 8 {
		a.Evidence = a.Evidence[:8]
	}
	if a.Evidence == nil {
		a.Evidence = []Evidence{}
	}
	r.anomalies = append(r.anomalies, a)
}

// merge carries a former run's decisions: a dismissed anomaly stays dismissed, an open one that
// is no longer found is resolved (later evidence explained it), an item whose figures changed
// before it reconciled is EVIDENCE_UPDATED.
func (r *reconciler) merge(res *Result) {
	prev := r.opts.Previous
	if prev == nil {
		return
	}
	oldItems := map[string]*Item{}
	for _, it := range prev.Items {
		oldItems[it.ID] = it
	}
	for _, it := range res.Items {
		o := oldItems[it.ID]
		if o == nil {
			continue
		}
		if !sameAmounts(o, it) && it.State != StateReconciled && it.State != StateDiscrepancy && it.State != StateReview {
			it.State = StateUpdated
		}
	}
	now := map[string]*Anomaly{}
	for _, a := range res.Anomalies {
		now[a.ID] = a
	}
	for _, o := range prev.Anomalies {
		a := now[o.ID]
		if a != nil && !o.DetectedAt.IsZero() {
			a.DetectedAt = o.DetectedAt // when it was first found
		}
		switch {
		case a != nil && o.Status == StatusDismissed:
			a.Status, a.DismissedAt = StatusDismissed, o.DismissedAt
		case a != nil && o.Status == StatusResolved && a.Status == StatusOpen && o.Resolution != "":
			// Found again after it was resolved: it is open again.
		case a == nil && o.Status == StatusOpen:
			c := *o
			c.Status, c.ResolvedAt = StatusResolved, ptr(r.opts.AsOf)
			c.Resolution = resolutionOf(&c, res)
			res.Anomalies = append(res.Anomalies, &c)
		case a == nil:
			c := *o
			res.Anomalies = append(res.Anomalies, &c)
		}
	}
}

func sameAmounts(a, b *Item) bool {
	eq := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return eq(a.GrossCents, b.GrossCents) && eq(a.ReportedCents, b.ReportedCents) && eq(a.ScheduledCents, b.ScheduledCents) &&
		eq(a.SettledCents, b.SettledCents) && eq(a.ExpectedCents, b.ExpectedCents) && a.FeesCents == b.FeesCents &&
		a.AdjustmentsCents == b.AdjustmentsCents && a.WithholdingCents == b.WithholdingCents
}

// resolutionOf says how later evidence explained an anomaly that is no longer found.
func resolutionOf(a *Anomaly, res *Result) string {
	var it *Item
	for _, x := range res.Items {
		if x.ID == a.ItemID {
			it = x
		}
	}
	switch a.Kind {
	case MissingPayoutPeriod, LatePayout:
		if it != nil && it.SettledCents != nil {
			return fmt.Sprintf("a settlement of %s for %s has since been observed", money(it.Currency, *it.SettledCents), it.Period.Label)
		}
	case SponsorOverdue:
		if it != nil && it.SettledCents != nil {
			return fmt.Sprintf("a payment of %s for invoice %s has since been received", money(it.Currency, *it.SettledCents), it.Invoice)
		}
	case StatementGap:
		return "the statement for " + a.Period + " has since been uploaded"
	case FeeChange, RoyaltyRateChange, RateDeviation, ConversionDivergence, NewDeduction:
		return "later evidence (an announcement or corrected statement) explains the change"
	}
	return "later evidence no longer shows it"
}

// Dismiss marks an anomaly dismissed by the user; a dismissed anomaly stays dismissed when it
// is found again.
func Dismiss(a *Anomaly, at time.Time) {
	a.Status, a.DismissedAt = StatusDismissed, ptr(at.UTC())
}

// Reopen undoes a dismissal (or reopens a resolved anomaly): it is open again.
func Reopen(a *Anomaly) {
	a.Status, a.DismissedAt, a.ResolvedAt, a.Resolution = StatusOpen, nil, nil, ""
}
