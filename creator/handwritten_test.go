package creator_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/creator"
)

// testdata/handwritten is a creator written by hand, in phrasings and shapes the synthetic
// generator does not use: a pipe-separated per-view statement with "Month Ending" dates, a
// semicolon statement with two fee columns and decimal commas, .eml files (HTML deposits,
// "Funds are on the way" notices, "were paid to your account"), a sponsor thread with a
// person's name, a newsletter. Planted: Tubeview paid $2.20 per 1,000 views in May against a
// published $2.50; Patreonish raised its platform fee from 8% to 10% in June unannounced and
// paid April 14 days late; invoice BB-117 is unpaid. Nothing else is an anomaly.
func TestHandwrittenCreator(t *testing.T) {
	res, err := creator.Scan(context.Background(), creator.ScanInput{Statements: "testdata/handwritten/statements",
		Mail: []string{"testdata/handwritten/mail"}, AsOf: time.Date(2026, 8, 20, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("problems: %v", res.Problems)
	}
	stream := map[string]string{}
	for _, s := range res.Sources {
		stream[s.ID] = s.Stream
	}
	var got []string
	for _, a := range res.Anomalies {
		got = append(got, string(a.Kind)+" "+stream[a.CreatorSourceID]+" "+a.Period)
	}
	sort.Strings(got)
	want := []string{"fee_change patreonish 2026-06", "late_payout patreonish 2026-04", "rate_deviation tubeview 2026-05", "sponsor_overdue brightbrew BB-117"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("anomalies:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	items := map[string]*creator.Item{}
	for _, it := range res.Items {
		items[stream[it.CreatorSourceID]+" "+it.Period.Label+it.Invoice] = it
	}
	for key, want := range map[string][3]int64{ // expected, settled, variance
		"tubeview 2026-05":         {220000, 193600, -26400},
		"patreonish 2026-06":       {491146, 480121, -11025},
		"patreonish 2026-04":       {485702, 485702, 0},
		"brightbrew 2026-03BB-104": {350000, 350000, 0},
	} {
		it := items[key]
		if it == nil || it.ExpectedCents == nil || it.SettledCents == nil || it.VarianceCents == nil ||
			*it.ExpectedCents != want[0] || *it.SettledCents != want[1] || *it.VarianceCents != want[2] {
			t.Errorf("%s: %s", key, dump(it))
		}
	}
	if it := items["tubeview 2026-05"]; it.EvidenceLevel != creator.Detected || !strings.HasSuffix(it.Evidence[0].Ref, "tubeview-earnings.txt#L6") {
		t.Errorf("tubeview May: %s %v", it.EvidenceLevel, it.Evidence)
	}
	if it := items["patreonish 2026-06"]; it.EvidenceLevel != creator.Estimated || it.State != creator.StateReview {
		t.Errorf("patreonish June rests on inferred fees: %s %s", it.EvidenceLevel, it.State)
	}
}

// testdata/handwritten2 was written after the fixes the first one prompted and scanned once
// before this test existed: KDPress (royalty report per month with a title line, an announced
// cut to 60% from June, no April statement), Affilink (a contracts file, a distributor-style
// file with a Network column, $12 instead of $15 per referral in July, a new "Network Levy" in
// August, no March payment), Musicbox (EUR, semicolons, payouts converted to USD, June at
// 1.0221 against about 1.08). Its first scan found exactly the five planted anomalies.
func TestHandwrittenCreator2(t *testing.T) {
	res, err := creator.Scan(context.Background(), creator.ScanInput{Statements: "testdata/handwritten2/statements",
		Mail: []string{"testdata/handwritten2/mail"}, AsOf: time.Date(2026, 9, 20, 0, 0, 0, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) > 0 {
		t.Fatalf("problems: %v", res.Problems)
	}
	stream := map[string]string{}
	for _, s := range res.Sources {
		stream[s.ID] = s.Stream
	}
	var got []string
	for _, a := range res.Anomalies {
		got = append(got, string(a.Kind)+" "+stream[a.CreatorSourceID]+" "+a.Period)
	}
	sort.Strings(got)
	want := []string{"conversion_commission_divergence affilink 2026-07", "currency_effect musicbox 2026-06",
		"missing_payout_period affilink 2026-03", "new_deduction affilink 2026-08", "statement_gap kdpress 2026-04"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("anomalies:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, it := range res.Items {
		if stream[it.CreatorSourceID] == "kdpress" && it.Period.Label == "2026-06" && (it.VarianceCents == nil || *it.VarianceCents != 0) {
			t.Errorf("the announced royalty cut is expected: %s", dump(it))
		}
		if stream[it.CreatorSourceID] == "musicbox" && it.Period.Label == "2026-06" && (it.Conversion == nil || it.Conversion.Rate != "1.0221" || it.Conversion.AmountCents != 94033) {
			t.Errorf("conversion: %s", dump(it))
		}
	}
}
