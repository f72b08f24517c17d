package intel

import (
	"strings"
	"testing"

	"svc.dev/svc/mail"
)

func obsOf(t *testing.T, from, subject, body string) *Observation {
	t.Helper()
	raw := "From: " + from + "\nSubject: " + subject + "\nDate: Mon, 2 Nov 2026 10:00:00 +0000\nMessage-ID: <m1@x>\n\n" + body
	d, err := mail.ReadDocument(strings.NewReader(raw), nil)
	if err != nil {
		t.Fatal(err)
	}
	return extract(d, "ref", "", isFreemail)
}

func TestExtractSelfChange(t *testing.T) {
	o := obsOf(t, "Orbiify Billing <account@orbiify.dev>", "Welcome to Pro", "Hi Sam,\n\nThanks for upgrading! You've switched to the Pro plan. Your new price is 15.19 USD per month.\n")
	if o == nil || !o.SelfChange {
		t.Fatalf("%+v", o)
	}
}

func TestExtractTrialEndsIn(t *testing.T) {
	o := obsOf(t, "Fitly <hello@fitly.example>", "Your free trial ends in 3 days", "Your trial ends in 3 days. After your trial you will be billed $9.99/month.\n")
	if o == nil || !o.TrialNotice || o.TrialEnd.Format("2006-01-02") != "2026-11-05" || o.PriceAfterTrial == nil || *o.PriceAfterTrial != 999 || o.TrialCadence != Monthly {
		t.Fatalf("%+v", o)
	}
}
