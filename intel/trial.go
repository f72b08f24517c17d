package intel

import (
	"fmt"
	"time"
)

// Thresholds of WorthIt.
const (
	// WorthItMinActivity is how many notices of use during a trial make it likely worth it.
	WorthItMinActivity = 2
)

// trialOf builds the trial of a service, or reports false when its mail shows none.
func trialOf(s *service, namespace string, period BillingPeriod, asOf time.Time) (Trial, bool) {
	var start *Observation
	var notices []*Observation
	for _, o := range s.obs {
		if o.Date.After(asOf) || !o.TrialNotice {
			continue
		}
		notices = append(notices, o)
		if start == nil && o.TrialStart {
			start = o
		}
	}
	if len(notices) == 0 {
		return Trial{}, false
	}
	first := notices[0]
	if start == nil {
		start = first
	}
	t := Trial{
		Service:       s.name,
		ServiceDomain: s.domain,
		Status:        TrialPending,
		Decision:      Undecided,
		EvidenceLevel: Detected,
		LastUpdated:   asOf.UTC(),
	}
	var began time.Time
	if start.TrialStart {
		began = start.Date
	}
	var end time.Time
	for _, o := range notices {
		if t.LengthDays == 0 && o.TrialDays > 0 {
			t.LengthDays = o.TrialDays
		}
		if end.IsZero() && !o.TrialEnd.IsZero() {
			end = o.TrialEnd
		}
		if t.PriceAfterTrialCents == nil && o.PriceAfterTrial != nil {
			t.PriceAfterTrialCents = ptr(*o.PriceAfterTrial)
			t.Cadence = o.TrialCadence
		}
		if o.Unsubscribe.URL != "" || o.Unsubscribe.Mailto != "" || o.Unsubscribe.Manage != "" {
			t.Unsubscribe = o.Unsubscribe
			t.Unsubscribe.SourceID, t.Unsubscribe.Object = o.SourceID, o.SourceRef
		}
	}
	if t.Unsubscribe.Object == "" { // no way to unsubscribe was offered: the latest notice is what a stop plan names
		last := notices[len(notices)-1]
		t.Unsubscribe.SourceID, t.Unsubscribe.Object, t.Unsubscribe.Ref = last.SourceID, last.SourceRef, last.Ref
	}
	switch {
	case began.IsZero() && !end.IsZero() && t.LengthDays > 0:
		began = end.AddDate(0, 0, -t.LengthDays)
	case began.IsZero():
		began = first.Date
	}
	if end.IsZero() && t.LengthDays > 0 {
		end = began.AddDate(0, 0, t.LengthDays)
	}
	if t.LengthDays == 0 && !end.IsZero() && end.After(began) {
		t.LengthDays = int(end.Sub(truncDay(began)).Hours()/24 + 0.5)
	}
	t.StartedAt = ptr(began.UTC())
	if !end.IsZero() {
		t.EndsAt = ptr(end.UTC())
	}
	t.ID = derivedID("trl", namespace, s.key+"\x00"+began.UTC().Format("2006-01-02"))
	for _, o := range notices {
		t.Evidence = append(t.Evidence, evidenceOf(o, "trial", "trial_end", "price_after_trial"))
		if len(t.Evidence) >= 3 {
			break
		}
	}
	// Outcome: a cancellation after the start, else a first charge after the start.
	var cancel, charge *Observation
	for _, o := range s.obs {
		if o.Date.After(asOf) || o.Date.Before(truncDay(began)) {
			continue
		}
		if o.Cancelled && cancel == nil {
			cancel = o
		}
		if o.Charge && !o.CreditNote && o.Total != nil && *o.Total > 0 && charge == nil {
			charge = o
		}
	}
	switch {
	case cancel != nil && (charge == nil || cancel.Date.Before(charge.Date)):
		t.Status = TrialCancelled
		t.Evidence = append(t.Evidence, evidenceOf(cancel, "cancel"))
	case charge != nil:
		t.Status = TrialConverted
		t.Evidence = append(t.Evidence, evidenceOf(charge, "total"))
		if t.PriceAfterTrialCents == nil {
			t.PriceAfterTrialCents = ptr(*charge.Total)
		}
	}
	if t.Cadence == "" {
		t.Cadence = period
	}
	if t.Cadence == "" {
		t.Cadence = Unknown
	}
	t.Confidence = 0.7
	if start.TrialStart {
		t.Confidence += 0.1
	}
	if t.EndsAt != nil {
		t.Confidence += 0.05
	}
	if t.Status != TrialPending {
		t.Confidence += 0.1
	}
	t.WorthIt = worthIt(t, s.activity, began, end, asOf)
	return t, true
}

func truncDay(t time.Time) time.Time { return t.UTC().Truncate(24 * time.Hour) }

// worthIt judges a trial from what mail shows: notices of use during the trial, the price after
// it, and what became of it.
func worthIt(t Trial, activity []time.Time, began, end, asOf time.Time) WorthIt {
	if end.IsZero() {
		end = began.AddDate(0, 0, 30)
	}
	used := 0
	for _, a := range activity {
		if !a.Before(truncDay(began)) && a.Before(end.Add(24*time.Hour)) {
			used++
		}
	}
	var w WorthIt
	price := "unknown"
	if t.PriceAfterTrialCents != nil {
		price = money(*t.PriceAfterTrialCents)
		if t.Cadence != "" && t.Cadence != Unknown {
			price += " " + string(t.Cadence)
		}
	}
	switch {
	case t.Status == TrialCancelled:
		w.Verdict = LikelyNotWorthIt
		w.Reasons = append(w.Reasons, "the trial was cancelled")
	case used >= WorthItMinActivity:
		w.Verdict = LikelyWorthIt
		w.Reasons = append(w.Reasons, fmt.Sprintf("%d notices of use from the service during the trial", used))
	case t.PriceAfterTrialCents == nil:
		w.Verdict = Undetermined
		w.Reasons = append(w.Reasons, "the price after the trial is not in the mail")
	case *t.PriceAfterTrialCents == 0:
		w.Verdict = LikelyWorthIt
		w.Reasons = append(w.Reasons, "it stays free after the trial")
	default:
		w.Verdict = LikelyNotWorthIt
		if used == 0 {
			w.Reasons = append(w.Reasons, "no sign of use in the mail during the trial")
		} else {
			w.Reasons = append(w.Reasons, fmt.Sprintf("only %d notice of use during the trial", used))
		}
	}
	if t.PriceAfterTrialCents != nil && *t.PriceAfterTrialCents > 0 {
		w.Reasons = append(w.Reasons, "costs "+price+" after the trial")
	}
	switch {
	case t.Status == TrialPending && t.EndsAt != nil && t.EndsAt.After(asOf):
		w.Reasons = append(w.Reasons, fmt.Sprintf("ends in %d days", int(t.EndsAt.Sub(asOf).Hours()/24)))
	case t.Status == TrialPending && t.EndsAt != nil:
		w.Reasons = append(w.Reasons, "ended on "+t.EndsAt.Format("January 2, 2006")+" with no charge or cancellation in the mail")
	}
	return w
}
