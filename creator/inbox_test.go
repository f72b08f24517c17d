package creator_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"svc.dev/svc/creator"
	"svc.dev/svc/mail"
)

func msg(t *testing.T, from, to, subject, date, id, body string) *mail.Document {
	t.Helper()
	raw := fmt.Sprintf("From: %s\r\nTo: %s\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: <%s>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\n%s\r\n",
		from, to, subject, date, id, strings.ReplaceAll(body, "\n", "\r\n"))
	d, err := mail.ReadDocument(strings.NewReader(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestInboxReadsPayoutsInvoicesAndAnnouncements(t *testing.T) {
	me := "Creator <me@creator.example>"
	docs := []*mail.Document{
		msg(t, "Fanclub Payouts <payouts@fanclub.example>", me, "Your payout is scheduled", "Mon, 10 Feb 2026 09:00:00 +0000", "p1@fanclub.example",
			"Your payout of $1,234.56 for January 2026 earnings has been scheduled. It should arrive on February 15, 2026."),
		msg(t, "Fanclub Payouts <payouts@fanclub.example>", me, "Payment completed", "Mon, 16 Feb 2026 09:00:00 +0000", "p2@fanclub.example",
			"Payment completed.\nPeriod: 2026-01\nAmount paid: $1,234.56\nPaid on: 16 Feb 2026"),
		msg(t, "Streamly <payouts@streamly.example>", me, "You've been paid", "Tue, 10 Mar 2026 09:00:00 +0000", "p3@streamly.example",
			"Your February 2026 earnings of €1.000,00 have been paid on 2026-03-10. Converted amount: $1,085.00 (FX rate 1.0850)."),
		msg(t, "Fanclub Team <news@fanclub.example>", me, "Changes to our terms", "Sun, 1 Mar 2026 09:00:00 +0000", "n1@fanclub.example",
			"Effective April 1, 2026, the platform fee will change from 8% to 10% of gross sales."),
		msg(t, "Linkpay <news@linkpay.example>", me, "Update to our deductions", "Sun, 1 Mar 2026 09:00:00 +0000", "n2@linkpay.example",
			"Important: beginning May 1, 2026, a Digital Services Tax of 3% will be deducted from your earnings."),
		msg(t, me, "Acme Drinks Accounts Payable <ap@acme.example>", "Invoice INV-7", "Mon, 2 Mar 2026 09:00:00 +0000", "i1@creator.example",
			"Please find invoice INV-7.\nAs agreed in our contract: $4,000.00.\nTotal due: $4,000.00\nPayment terms: Net 30 (due April 1, 2026)"),
		msg(t, "Acme Drinks Accounts Payable <ap@acme.example>", me, "Re: Invoice INV-7", "Mon, 30 Mar 2026 09:00:00 +0000", "r1@acme.example",
			"Remittance advice: we have paid invoice INV-7. Payment of $4,000.00 was sent on March 30, 2026."),
		msg(t, "Friend <friend@example.org>", me, "lunch?", "Mon, 30 Mar 2026 09:00:00 +0000", "x@example.org", "Lunch on Friday? I owe you $12.00."),
	}
	l := creator.ReadInbox(docs, creator.InboxOptions{Self: []string{"creator.example"}})
	if len(l.Payouts) != 3 {
		t.Fatalf("payouts: %s", dump(l.Payouts))
	}
	p := l.Payouts[0]
	if p.Stream != "fanclub" || p.Settled || p.AmountCents != 123456 || p.Period.Label != "2026-01" || p.DueAt.Format("2006-01-02") != "2026-02-15" {
		t.Errorf("scheduled: %+v", p)
	}
	if p := l.Payouts[1]; !p.Settled || p.SettledAt.Format("2006-01-02") != "2026-02-16" || p.Evidence.Ref != "p2@fanclub.example" {
		t.Errorf("settled: %+v", p)
	}
	if p := l.Payouts[2]; p.Currency != "EUR" || p.AmountCents != 100000 || p.Conversion == nil || p.Conversion.Rate != "1.0850" ||
		p.Conversion.AmountCents != 108500 || !strings.Contains(p.Conversion.RateSource, "p3@streamly.example") {
		t.Errorf("converted: %s", dump(p))
	}
	terms := map[string]creator.TermChange{}
	for _, c := range l.Terms {
		terms[c.Stream] = c
	}
	if c := terms["fanclub"]; c.Field != creator.TermFeeBPS || c.Value != 1000 || c.Effective != "2026-04" || !c.Announced {
		t.Errorf("fee announcement: %+v", c)
	}
	if c := terms["linkpay"]; c.Field != creator.TermDeductionPrefix+"digital services tax" || c.Value != 300 || c.Effective != "2026-05" {
		t.Errorf("deduction announcement: %+v", c)
	}
	if len(l.Invoices) != 1 || l.Invoices[0].Number != "INV-7" || l.Invoices[0].AmountCents != 400000 || *l.Invoices[0].ContractCents != 400000 ||
		l.Invoices[0].DueAt.Format("2006-01-02") != "2026-04-01" || l.Invoices[0].Sponsor != "acme" {
		t.Errorf("invoice: %s", dump(l.Invoices))
	}
	if len(l.Remittances) != 1 || l.Remittances[0].AmountCents != 400000 || l.Remittances[0].PaidAt.Format("2006-01-02") != "2026-03-30" {
		t.Errorf("remittance: %s", dump(l.Remittances))
	}
}

// Nothing estimated is ever CONFIRMED or DETECTED: for any mix of statement, API and mail
// evidence, with or without published terms, an item with anything estimated is ESTIMATED, and
// an item is CONFIRMED only when all its evidence is API evidence.
func TestNothingEstimatedIsConfirmedOrDetected(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		led := &creator.Ledger{Streams: map[string]*creator.StreamInfo{}}
		nStreams := rapid.IntRange(1, 3).Draw(rt, "streams")
		for s := range nStreams {
			key := fmt.Sprintf("p%d", s)
			api := rapid.Bool().Draw(rt, "api")
			kind := creator.EvidenceStatement
			if api {
				kind = creator.EvidenceAPI
			}
			led.Streams[key] = &creator.StreamInfo{Key: key, Name: key, Kind: creator.KindStatement, SourceID: "crs_" + key}
			if rapid.Bool().Draw(rt, "published") {
				led.Terms = append(led.Terms, creator.TermChange{Stream: key, Field: creator.TermFeeBPS, Value: rapid.Int64Range(0, 3000).Draw(rt, "fee"),
					Evidence: creator.Evidence{Kind: creator.EvidenceContract, Ref: "terms.csv#L2"}})
				if rapid.Bool().Draw(rt, "wh published") {
					led.Terms = append(led.Terms, creator.TermChange{Stream: key, Field: creator.TermWithholdingBPS, Value: 0})
				}
			}
			months := rapid.IntRange(0, 6).Draw(rt, "months")
			for m := range months {
				p := creator.Month(time.Date(2026, time.Month(1+m), 1, 0, 0, 0, 0, time.UTC))
				if rapid.IntRange(0, 4).Draw(rt, "skip") > 0 {
					g := rapid.Int64Range(0, 1_000_000).Draw(rt, "gross")
					f := rapid.Int64Range(0, g).Draw(rt, "fees")
					w := rapid.Int64Range(0, 5000).Draw(rt, "wh")
					net := g - f - w
					led.Activity = append(led.Activity, creator.Activity{Stream: key, Name: key, Period: p, Currency: "USD", Model: creator.ModelFee,
						Gross: &g, Fees: f, Withholding: w, Earned: ptr(g - f), Net: &net, Deductions: map[string]int64{"fees": f, "withholding": w},
						Evidence: creator.Evidence{Kind: kind, Ref: fmt.Sprintf("%s#%d", key, m)}})
				}
				if rapid.Bool().Draw(rt, "paid") {
					pk := creator.EvidenceEmail
					if api && rapid.Bool().Draw(rt, "api payout") {
						pk = creator.EvidenceAPI
					}
					led.Payouts = append(led.Payouts, creator.Payout{Stream: key, Period: p, Currency: "USD", AmountCents: rapid.Int64Range(0, 1_000_000).Draw(rt, "amount"),
						Settled: rapid.Bool().Draw(rt, "settled"), SettledAt: p.End.AddDate(0, 0, 10), DueAt: p.End.AddDate(0, 0, 10),
						Evidence: creator.Evidence{Kind: pk, Ref: fmt.Sprintf("po-%s-%d", key, m)}})
				}
			}
		}
		res := creator.Reconcile(led, creator.Options{AsOf: time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)})
		for _, it := range res.Items {
			if len(it.Estimated) > 0 && it.EvidenceLevel != creator.Estimated {
				rt.Fatalf("item %s estimates %v but is %s", it.ID, it.Estimated, it.EvidenceLevel)
			}
			if it.EvidenceLevel == creator.Confirmed {
				for _, e := range it.Evidence {
					if e.Kind != creator.EvidenceAPI && e.Kind != creator.EvidenceDerived && e.Kind != creator.EvidenceContract {
						rt.Fatalf("CONFIRMED item %s rests on %s evidence", it.ID, e.Kind)
					}
				}
			}
			if it.Confidence < 0 || it.Confidence > 1 {
				rt.Fatalf("confidence %v", it.Confidence)
			}
			if it.VarianceCents != nil && (it.SettledCents == nil || it.ExpectedCents == nil || *it.VarianceCents != *it.SettledCents-*it.ExpectedCents) {
				rt.Fatalf("variance %d without settled - expected", *it.VarianceCents)
			}
		}
	})
}

func ptr[T any](v T) *T { return &v }

// Dismiss and reopen are domain operations; a dismissed anomaly stays dismissed when found
// again; an open one explained by later evidence is resolved, saying how.
func TestAnomalyLifecycle(t *testing.T) {
	ctx := context.Background()
	st := creator.NewMemStore()
	now := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	svc := &creator.Service{Now: func() time.Time { return now }}
	src, _ := svc.CreateSource(ctx, st, creator.CreateRequest{Kind: creator.KindStatement})
	csv := "Period,Gross,Fees,Net\n2026-01,1000.00,80.00,920.00\n2026-02,1000.00,80.00,920.00\n2026-03,1000.00,80.00,920.00\n2026-05,1000.00,80.00,920.00\n2026-06,1000.00,80.00,920.00\n"
	if err := svc.UploadStatement(ctx, st, src.ID, "fanclub.csv", []byte(csv)); err != nil {
		t.Fatal(err)
	}
	rep, err := svc.Reconcile(ctx, st, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Opened) != 1 || rep.Opened[0].Kind != creator.StatementGap || rep.Opened[0].Period != "2026-04" || rep.Opened[0].Language != "missing evidence" {
		t.Fatalf("opened: %s", dump(rep.Opened))
	}
	gap := rep.Opened[0]
	a, err := svc.Dismiss(ctx, st, gap.ID)
	if err != nil || a.Status != creator.StatusDismissed {
		t.Fatalf("dismiss: %v %v", a, err)
	}
	rep, _ = svc.Reconcile(ctx, st, now, nil)
	if a, _ := svc.Anomaly(ctx, st, gap.ID); a.Status != creator.StatusDismissed || len(rep.Opened) != 0 {
		t.Fatalf("after a second reconcile: %s", dump(a))
	}
	if a, err := svc.Reopen(ctx, st, gap.ID); err != nil || a.Status != creator.StatusOpen {
		t.Fatalf("reopen: %v %v", a, err)
	}
	// The April statement arrives: the gap is resolved, and says how.
	if err := svc.UploadStatement(ctx, st, src.ID, "fanclub-april.csv", []byte("Period,Gross,Fees,Net\n2026-04,1000.00,80.00,920.00\n")); err != nil {
		t.Fatal(err)
	}
	rep, _ = svc.Reconcile(ctx, st, now, nil)
	a, _ = svc.Anomaly(ctx, st, gap.ID)
	if a.Status != creator.StatusResolved || !strings.Contains(a.Resolution, "2026-04") || len(rep.Resolved) != 1 {
		t.Fatalf("resolved: %s", dump(a))
	}
	if _, err := svc.Anomaly(ctx, st, "ano_01JD0000000000000000000000"); err != creator.ErrNotFound {
		t.Fatalf("unknown anomaly: %v", err)
	}
}

// An announced change is not an anomaly, and expected follows it; the same change unannounced is.
func TestAnnouncedChangeIsNotAnAnomaly(t *testing.T) {
	stmt := "Period,Gross,Fees,Net\n"
	for m := 1; m <= 6; m++ {
		fee := "80.00"
		net := "920.00"
		if m >= 4 {
			fee, net = "100.00", "900.00"
		}
		stmt += fmt.Sprintf("2026-%02d,1000.00,%s,%s\n", m, fee, net)
	}
	run := func(announce bool) *creator.Result {
		led := parse(t, "fanclub.csv", stmt)
		if announce {
			led.Add(creator.ReadInbox([]*mail.Document{msg(t, "Fanclub <news@fanclub.example>", "me@creator.example", "Changes to our fees", "Sun, 1 Mar 2026 09:00:00 +0000", "a@fanclub.example",
				"Effective April 1, 2026, the platform fee will change from 8% to 10%.")}, creator.InboxOptions{}))
		}
		creator.AssignScanSources(led)
		return creator.Reconcile(led, creator.Options{AsOf: time.Date(2026, 7, 20, 0, 0, 0, 0, time.UTC)})
	}
	quiet := run(false)
	if len(quiet.Anomalies) != 1 || quiet.Anomalies[0].Kind != creator.FeeChange || quiet.Anomalies[0].Period != "2026-04" ||
		!strings.Contains(quiet.Anomalies[0].Detail, "10%") || !strings.Contains(quiet.Anomalies[0].Detail, "8%") {
		t.Fatalf("unannounced: %s", dump(quiet.Anomalies))
	}
	loud := run(true)
	if len(loud.Anomalies) != 0 {
		t.Fatalf("announced change flagged: %s", dump(loud.Anomalies))
	}
	for _, it := range loud.Items {
		if it.Period.Label == "2026-05" && *it.ExpectedCents != 90000 {
			t.Fatalf("expected after the announced change: %d", *it.ExpectedCents)
		}
	}
}

// A statement sent by mail is reported activity (DETECTED), with the message as its evidence.
func TestInboxStatementMail(t *testing.T) {
	d := msg(t, "Vidhub <statements@vidhub.example>", "me@creator.example", "Your March 2026 earnings statement", "Thu, 2 Apr 2026 09:00:00 +0000", "s1@vidhub.example",
		"Your statement for March 2026 is ready.\nGross earnings: $1,500.00\nPlatform fees: $150.00\nAdjustments: -$10.00\nNet payout: $1,340.00")
	l := creator.ReadInbox([]*mail.Document{d}, creator.InboxOptions{})
	if len(l.Activity) != 1 {
		t.Fatalf("activity: %s", dump(l))
	}
	a := l.Activity[0]
	if a.Stream != "vidhub" || a.Period.Label != "2026-03" || *a.Gross != 150000 || a.Fees != 15000 || a.Adjustments != -1000 || *a.Net != 134000 ||
		a.Evidence.Kind != creator.EvidenceEmail || a.Evidence.Ref != "s1@vidhub.example" {
		t.Fatalf("statement mail: %s", dump(a))
	}
}

func TestDeleteSourceWithdrawsItsEvidence(t *testing.T) {
	ctx := context.Background()
	st := creator.NewMemStore()
	now := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	svc := &creator.Service{Now: func() time.Time { return now }}
	src, _ := svc.CreateSource(ctx, st, creator.CreateRequest{Kind: creator.KindStatement})
	csv := "Period,Gross,Fees,Net\n2026-01,1000.00,80.00,920.00\n2026-02,1000.00,80.00,920.00\n2026-04,1000.00,80.00,920.00\n"
	if err := svc.UploadStatement(ctx, st, src.ID, "fanclub.csv", []byte(csv)); err != nil {
		t.Fatal(err)
	}
	if rep, _ := svc.Reconcile(ctx, st, now, nil); len(rep.Opened) != 1 {
		t.Fatalf("want the 2026-03 gap: %s", dump(rep.Opened))
	}
	if err := svc.DeleteSource(ctx, st, src.ID); err != nil {
		t.Fatal(err)
	}
	rep, _ := svc.Reconcile(ctx, st, now, nil)
	if len(rep.Result.Items) != 0 || len(rep.Result.Anomalies) != 0 || len(rep.Resolved) != 0 {
		t.Fatalf("after delete: %s", dump(rep))
	}
	if srcs, _ := svc.Sources(ctx, st); len(srcs) != 0 {
		t.Fatalf("sources %v", srcs)
	}
}
