package creator_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"svc.dev/svc/creator"
)

func parse(t *testing.T, name, csv string) *creator.Ledger {
	t.Helper()
	l, err := creator.ParseStatement(strings.NewReader(csv), creator.StatementOptions{Path: name})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return l
}

// Common statement shapes: aliases, separators, preambles, number formats, period forms.
func TestStatementShapes(t *testing.T) {
	for _, tc := range []struct {
		name, csv                       string
		gross, fees, adj, wh, net, line int64
		label, cur                      string
	}{
		{"fanclub.csv", "Period,Gross,Fees,Adjustments,Withholding,Net\n2026-03,1234.56,-98.76,-1.00,0,1134.80\n", 123456, 9876, -100, 0, 113480, 2, "2026-03", "USD"},
		{"x/shop.csv", "Shop statement\n\nStatement Month,Gross Sales,Platform Fee,Refunds,Tax Withheld,Net Payout\n\"March 2026\",\"$1,234.56\",($98.76),($10.00),$0.00,\"$1,125.80\"\n", 123456, 9876, -1000, 0, 112580, 4, "2026-03", "USD"},
		{"eu.csv", "Month;Gross;Fees;Adjustments;Net;Currency\n03/2026;1.234,56;98,76;0,00;1.135,80;EUR\n", 123456, 9876, 0, 0, 113580, 2, "2026-03", "EUR"},
		{"tab.tsv", "Start Date\tEnd Date\tGross Revenue\tService Fees\tAdjustments\tOther\tNet Earnings\n2026-03-01\t2026-03-31\t1234.56\t98.76\t\t\t1135.80\n", 123456, 9876, 0, 0, 113580, 2, "2026-03", "USD"},
		{"us.csv", "Period Start,Period End,Gross,Fees,Net\n03/01/2026,03/31/2026,100.00,10.00,90.00\n", 10000, 1000, 0, 0, 9000, 2, "2026-03", "USD"},
		{"crlf.csv", "\ufeffPeriod,Gross,Fees,Net\r\n\r\n2026-03,100.00,10.00,90.00\r\n", 10000, 1000, 0, 0, 9000, 3, "2026-03", "USD"},
		{"words.csv", "Reporting Period,Revenue,Fee,Withholding Tax,Amount Payable\nMar 2026,€ 200.00,20.00-,18.00,162.00\n", 20000, 2000, 0, 1800, 16200, 2, "2026-03", "EUR"},
	} {
		l := parse(t, tc.name, tc.csv)
		if len(l.Activity) != 1 {
			t.Fatalf("%s: %d rows", tc.name, len(l.Activity))
		}
		a := l.Activity[0]
		if *a.Gross != tc.gross || a.Fees != tc.fees || a.Adjustments != tc.adj || a.Withholding != tc.wh || *a.Net != tc.net ||
			a.Period.Label != tc.label || a.Currency != tc.cur {
			t.Errorf("%s: gross %d fees %d adj %d wh %d net %d period %s %s", tc.name, *a.Gross, a.Fees, a.Adjustments, a.Withholding, *a.Net, a.Period.Label, a.Currency)
		}
		if want := tc.name + "#L" + strconv.FormatInt(tc.line, 10); a.Evidence.Ref != want {
			t.Errorf("%s: ref %q, want %q (physical line, header = line 1)", tc.name, a.Evidence.Ref, want)
		}
	}
}

func TestStatementModels(t *testing.T) {
	l := parse(t, "multi.csv", "Platform,Period,Units,List Sales,Royalty,Net\nBookshelf,2026-03,100,1299.00,909.30,909.30\n"+
		"\n")
	if a := l.Activity[0]; a.Model != creator.ModelRoyalty || *a.Earned != 90930 || a.Stream != "bookshelf" {
		t.Fatalf("royalty: %+v", a)
	}
	l = parse(t, "streamly.csv", "Month,Streams,Earnings,Net\n2026-03,250000,1000.00,1000.00\n")
	if a := l.Activity[0]; a.Model != creator.ModelPerUnit || *a.Units != 250000 || a.Stream != "streamly" {
		t.Fatalf("per unit: %+v", a)
	}
	l = parse(t, "linkpay.csv", "Period,Conversions,Commission,Net\n2026-03,40,480.00,480.00\nTotal,40,480.00,480.00\n")
	if a := l.Activity[0]; a.Model != creator.ModelAffiliate || *a.Conversions != 40 || len(l.Activity) != 1 {
		t.Fatalf("affiliate (totals row skipped): %+v", l.Activity)
	}
}

// A bad upload is refused with every bad row's line and reason.
func TestStatementBadRows(t *testing.T) {
	for _, tc := range []struct{ name, csv, want string }{
		{"missing.csv", "Gross,Fees,Net\n100,10,90\n", "line 1: no header naming a period"},
		{"negative.csv", "Period,Gross,Net\n2026-03,-100.00,0\n", "line 2: negative gross"},
		{"dup.csv", "Period,Gross,Net\n2026-03,100,90\n2026-04,100,90\nMarch 2026,100,90\n", "line 4: period 2026-03 of Dup duplicated (also on line 2)"},
		{"twocur.csv", "Period,Gross,Net,Currency\n2026-03,€100,90,USD\n", "line 2: amounts in EUR but the currency column says USD"},
		{"garbage.csv", "Period,Gross,Net\n2026-03,abc,90\nnot a month,1,1\n", "line 2: gross \"abc\""},
		{"decimals.csv", "Period,Gross,Net\n2026-03,1.234,1\n", "more than two decimals"},
		{"range.csv", "Start Date,End Date,Gross\n2026-03-01,2026-04-15,100\n", "not one calendar month"},
	} {
		_, err := creator.ParseStatement(strings.NewReader(tc.csv), creator.StatementOptions{Path: tc.name})
		var se *creator.StatementError
		if !errors.As(err, &se) || !errors.Is(err, creator.ErrBadStatement) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	// Another currency than the source's statements so far.
	_, err := creator.ParseStatement(strings.NewReader("Period,Gross,Net,Currency\n2026-03,100,90,EUR\n"),
		creator.StatementOptions{Path: "fanclub.csv", Known: map[string]string{"fanclub": "USD"}})
	if err == nil || !strings.Contains(err.Error(), "line 2: currency EUR differs from the USD") {
		t.Fatalf("other currency: %v", err)
	}
}

// A bad upload changes nothing already reconciled; a good correction updates the item.
func TestUploadRefusedChangesNothing(t *testing.T) {
	ctx := context.Background()
	st := creator.NewMemStore()
	svc := &creator.Service{Now: func() time.Time { return time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC) }}
	src, err := svc.CreateSource(ctx, st, creator.CreateRequest{Kind: creator.KindStatement, Label: "Statements"})
	if err != nil {
		t.Fatal(err)
	}
	good := "Period,Gross,Fees,Net\n2026-01,1000.00,80.00,920.00\n2026-02,1000.00,80.00,920.00\n2026-03,1000.00,80.00,920.00\n"
	if err := svc.UploadStatement(ctx, st, src.ID, "fanclub.csv", []byte(good)); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Reconcile(ctx, st, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := svc.Items(ctx, st, creator.ItemFilter{})
	if len(before) != 3 {
		t.Fatalf("%d items", len(before))
	}
	for _, bad := range []string{
		"Period,Gross,Fees,Net\n2026-03,1000.00,80.00,920.00\n2026-04,-5,0,0\n",                  // negative gross
		"Period,Gross,Fees,Net,Currency\n2026-04,1000.00,80.00,920.00,EUR\n",                     // another currency
		"Period,Gross,Fees,Net\n2026-04,1000.00,80.00,920.00\nApril 2026,1000.00,80.00,920.00\n", // duplicated period
		"Gross,Fees,Net\n1000.00,80.00,920.00\n",                                                 // missing column
	} {
		err := svc.UploadStatement(ctx, st, src.ID, "fanclub-april.csv", []byte(bad))
		if !errors.Is(err, creator.ErrBadStatement) {
			t.Fatalf("bad upload accepted: %v", err)
		}
	}
	if ups, _ := st.Uploads(ctx, src.ID); len(ups) != 1 {
		t.Fatalf("%d uploads kept, want 1", len(ups))
	}
	if _, err := svc.Reconcile(ctx, st, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	after, _ := svc.Items(ctx, st, creator.ItemFilter{})
	if dump(after) != dump(before) {
		t.Fatalf("items changed after refused uploads:\n%s\n%s", dump(before), dump(after))
	}
	// A correction of March is accepted and the item's figures move.
	if err := svc.UploadStatement(ctx, st, src.ID, "fanclub.csv", []byte(strings.Replace(good, "2026-03,1000.00,80.00,920.00", "2026-03,1100.00,88.00,1012.00", 1))); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Reconcile(ctx, st, time.Time{}, nil); err != nil {
		t.Fatal(err)
	}
	its, _ := svc.Items(ctx, st, creator.ItemFilter{State: creator.StateUpdated})
	if len(its) != 1 || its[0].Period.Label != "2026-03" || *its[0].ReportedCents != 101200 {
		t.Fatalf("corrected March: %s", dump(its))
	}
}

func TestTerms(t *testing.T) {
	ts, err := creator.ParseTerms(strings.NewReader("Platform,Effective,Fee Rate,Rate per 1000,Commission,Withholding Rate,Payout Day\nFanclub,,8.5%,,,0%,15\nStreamly,2026-04,,$3.875,,,\nLinkpay,,,,$12.00,,\n"),
		creator.StatementOptions{Path: "terms.csv"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, c := range ts {
		got[c.Stream+"/"+string(c.Field)+"/"+c.Effective] = c.Value
	}
	want := map[string]int64{"fanclub/fee_bps/": 850, "fanclub/withholding_bps/": 0, "fanclub/payout_day/": 15,
		"streamly/unit_rate/2026-04": 38750, "linkpay/commission_cents/": 1200}
	if dump(got) != dump(want) {
		t.Fatalf("terms %v, want %v", got, want)
	}
}
