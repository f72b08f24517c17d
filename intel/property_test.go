package intel

import (
	"fmt"
	"testing"
	"time"
	"unicode/utf8"

	"pgregory.net/rapid"

	"svc.dev/svc/id"
)

// genObservation draws an observation of any shape: bills with any mix of lines, notices of
// every kind, trial mail.
func genObservation(t *rapid.T, i int, base time.Time) *Observation {
	cents := func(label string) *int64 {
		if rapid.Bool().Draw(t, label+"?") {
			return ptr(rapid.Int64Range(-50000, 500000).Draw(t, label))
		}
		return nil
	}
	o := &Observation{
		Ref:        fmt.Sprintf("<m%d@x.example>", i),
		Date:       base.AddDate(0, rapid.IntRange(-24, 1).Draw(t, "month"), rapid.IntRange(0, 27).Draw(t, "day")),
		ServiceKey: "x.example", Service: "X", Domain: "x.example",
		Charge:     rapid.Bool().Draw(t, "charge"),
		Recurring:  rapid.Bool().Draw(t, "recurring"),
		OneTime:    rapid.Bool().Draw(t, "onetime"),
		CreditNote: rapid.IntRange(0, 9).Draw(t, "cn") == 0,
		Total:      cents("total"), Subtotal: cents("subtotal"), Tax: cents("tax"), Credits: cents("credits"),
		Overage: cents("overage"), Base: cents("base"),
		Period:    rapid.SampledFrom([]BillingPeriod{"", Weekly, Monthly, Quarterly, Annual, Usage}).Draw(t, "period"),
		Seats:     rapid.IntRange(0, 50).Draw(t, "seats"),
		SeatPrice: cents("seatprice"),
		OldPrice:  cents("old"), NewPrice: cents("new"),
		PriceDrop:   rapid.Bool().Draw(t, "drop"),
		TeaserPrice: cents("teaser"), RegularPrice: cents("regular"),
		CreditGrant: cents("grant"), CreditsOut: rapid.Bool().Draw(t, "out"),
		AutoUpgrade: rapid.IntRange(0, 5).Draw(t, "auto") == 0,
		SelfChange:  rapid.IntRange(0, 5).Draw(t, "self") == 0,
		TrialStart:  rapid.IntRange(0, 5).Draw(t, "trial") == 0,
		Excerpts:    map[string]string{"total": rapid.StringN(0, 400, -1).Draw(t, "excerpt")},
	}
	o.TrialNotice = o.TrialStart
	if o.Total != nil && rapid.Bool().Draw(t, "fees") {
		o.Fees = []Fee{{Label: "Service fee", Cents: rapid.Int64Range(0, 1000).Draw(t, "fee")}}
	}
	if rapid.Bool().Draw(t, "expiry") {
		o.CreditExpiry = base.AddDate(0, 2, 0)
		o.TeaserEnd = base.AddDate(0, 1, 0)
	}
	return o
}

// Nothing estimated is ever labelled otherwise: whatever the mail, a meter that shows a
// projection (projected cost, threshold, threshold date) or any derived evidence is ESTIMATED;
// a meter from mail alone is never CONFIRMED; confidence is in [0, 1], ids are well formed,
// excerpts at most 300 characters. The same holds after the user's actions.
func TestEvidenceLevelHonest(t *testing.T) {
	base := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	asOf := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	rapid.Check(t, func(t *rapid.T) {
		s := &service{key: "x.example", name: "X", domain: "x.example"}
		n := rapid.IntRange(1, 14).Draw(t, "n")
		for i := 0; i < n; i++ {
			o := genObservation(t, i, base)
			o.Excerpts["total"] = cut(o.Excerpts["total"], MaxExcerpt)
			s.obs = append(s.obs, o)
		}
		sortObs(s.obs)
		m, ok := meterOf(s, "ns", asOf)
		if ok {
			checkMeter(t, m)
			for _, a := range []Action{Watch, Explain, SetLimit, Ignore} {
				m2, err := Act(m, a, ptr(int64(5000)), asOf)
				if err != nil {
					t.Fatalf("%s: %v", a, err)
				}
				checkMeter(t, m2)
			}
		}
		if tr, ok := trialOf(s, "ns", Monthly, asOf); ok {
			if tr.EvidenceLevel != Detected || tr.Confidence < 0 || tr.Confidence > 1 || !id.Valid("trl", tr.ID) {
				t.Fatalf("trial %+v", tr)
			}
		}
	})
}

func checkMeter(t *rapid.T, m Meter) {
	projected := m.ProjectedPeriodCostCents != nil || m.ProjectedThresholdAt != nil || m.NextThresholdCents != nil
	derived := false
	for _, e := range m.Evidence {
		if e.Kind == KindDerived {
			derived = true
		}
		if utf8.RuneCountInString(e.Excerpt) > MaxExcerpt || e.Ref == "" {
			t.Fatalf("evidence %+v", e)
		}
	}
	if (projected || derived) && m.EvidenceLevel != Estimated {
		t.Fatalf("projection labelled %s: %+v", m.EvidenceLevel, m)
	}
	if m.EvidenceLevel == Confirmed {
		t.Fatalf("mail evidence labelled CONFIRMED")
	}
	if !projected && !derived && m.EvidenceLevel != Detected {
		t.Fatalf("mail-only meter labelled %s", m.EvidenceLevel)
	}
	if m.Confidence < 0 || m.Confidence > 1 {
		t.Fatalf("confidence %v", m.Confidence)
	}
	if !id.Valid("mtr", m.ID) {
		t.Fatalf("id %q", m.ID)
	}
	for _, c := range []*int64{m.CurrentPeriodCostCents, m.PreviousPeriodCostCents, m.ProjectedPeriodCostCents, m.ObservedOverageCents, m.NextThresholdCents} {
		if c != nil && *c < 0 {
			t.Fatalf("negative figure in %+v", m)
		}
	}
}

func sortObs(obs []*Observation) {
	for i := 1; i < len(obs); i++ {
		for j := i; j > 0 && obs[j].Date.Before(obs[j-1].Date); j-- {
			obs[j], obs[j-1] = obs[j-1], obs[j]
		}
	}
}
