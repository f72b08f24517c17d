package intel

import (
	"strings"
	"testing"
	"time"
)

func TestFindMoney(t *testing.T) {
	for _, tc := range []struct {
		in    string
		cents int64
		cur   string
	}{
		{"Total: $1,234.56", 123456, "USD"},
		{"USD 12.00", 1200, "USD"},
		{"12.00 USD", 1200, "USD"},
		{"US$12.00", 1200, "USD"},
		{"12,00 US$", 1200, "USD"},
		{"Gesamt 1.234,56 €", 123456, "EUR"},
		{"€12,00", 1200, "EUR"},
		{"£7.5", 750, "GBP"},
		{"$12", 1200, "USD"},
		{"Credit: -$5.00", -500, "USD"},
		{"Credit: $-5.00", -500, "USD"},
		{"Credit (US$5.00)", -500, "USD"},
		{"Adjustment $5.00 CR", -500, "USD"},
		{"Refund − $15.00", -1500, "USD"},
		{"a fee of 3 dollars", 300, "USD"},
		{"USD 1 234.50", 123450, "USD"},
		{"$ 9.99/mo", 999, "USD"},
		{"CA$20.00", 2000, "CAD"},
	} {
		got := findMoney(tc.in)
		if len(got) != 1 || got[0].cents != tc.cents || got[0].currency != tc.cur {
			t.Errorf("%q: %+v, want %d %s", tc.in, got, tc.cents, tc.cur)
		}
	}
	for _, s := range []string{"call 555-1234", "order 12345", "v2.0 released", "2026-11-30"} {
		if got := findMoney(s); len(got) != 0 {
			t.Errorf("%q: %+v, want none", s, got)
		}
	}
}

func TestFindDates(t *testing.T) {
	ref := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{"Service period: Nov 1 – Nov 30, 2026", []string{"2026-11-01", "2026-11-30"}},
		{"Period Dec 15 - Jan 14, 2027", []string{"2026-12-15", "2027-01-14"}},
		{"renews on 3 January 2027", []string{"2027-01-03"}},
		{"from 2026-10-01 to 2026-10-31", []string{"2026-10-01", "2026-10-31"}},
		{"due 12/05/2026", []string{"2026-12-05"}},
		{"fällig am 30.11.2026", []string{"2026-11-30"}},
		{"your trial ends December 3rd", []string{"2026-12-03"}},
		{"on March 3", []string{"2027-03-03"}},
	} {
		var got []string
		for _, d := range findDates(tc.in, ref) {
			got = append(got, d.t.Format("2006-01-02"))
		}
		if strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%q: %v, want %v", tc.in, got, tc.want)
		}
	}
}
