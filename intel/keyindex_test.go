package intel

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"svc.dev/svc/internal/corpus"
	"svc.dev/svc/mail"
)

// allKres are the package's keyword expressions, by name.
func allKres() map[string]kre {
	return map[string]kre{"charge": reCharge, "recurring": reRecurring, "order": reOrder, "bank": reBank, "split": reSplit,
		"promo": rePromo, "trialStart": reTrialStart, "trialNotice": reTrialNotice, "cancel": reCancel, "autoUpgrade": reAutoUpgrade,
		"selfChange": reSelfChange, "priceChange": rePriceChange, "priceDrop": rePriceDrop, "teaser": reTeaser, "teaserThen": reTeaserThen,
		"creditGrant": reCreditGrant, "creditLeft": reCreditLeft, "creditsOut": reCreditsOut, "overage": reOverage, "fee": reFee,
		"tax": reTax, "subtotal": reSubtotal, "creditLine": reCreditLine, "total": reTotal, "final": reFinal, "planLine": rePlanLine,
		"seatsAdded": reSeatsAdded, "trialDays": reTrialDays, "afterTrial": reAfterTrial, "servicePer": reServicePer, "endWord": reEndWord,
		"scam": reScam, "validUntil": reValidUntil, "failed": reFailed, "refund": reRefund, "notYours": reNotYours, "yours": reYours,
		"activity": reActivity}
}

// The keyword index gives every expression the answer kre.in gives (the same lines searched),
// and the answer a search of the whole text gives: on the general mail corpus's texts and on
// texts drawn from the expressions' own words.
func TestKeyIndexAgrees(t *testing.T) {
	check := func(t interface{ Fatalf(string, ...any) }, low string) {
		var x keyIndex
		x.index(low)
		for name, k := range allKres() {
			in, has, whole := k.in(low, low), x.has(k), k.MatchString(low)
			if in != has || has != whole {
				t.Fatalf("%s on %q: in %v, index %v, whole text %v", name, low, in, has, whole)
			}
		}
	}
	for _, m := range corpus.Generate(5, 400, time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)) {
		d, err := mail.ReadDocument(bytes.NewReader(m.Raw), nil)
		if err != nil {
			continue
		}
		check(t, strings.ToLower(d.Subject+"\n"+d.Body()))
	}
	var words []string
	for _, k := range allKres() {
		words = append(words, k.keys...)
	}
	words = append(words, "has been", "your", "we have", "the", "is now", "\n", " ", ". ", "12", "$9.99", "charged", "trial has started")
	rapid.Check(t, func(rt *rapid.T) {
		parts := rapid.SliceOfN(rapid.SampledFrom(words), 1, 30).Draw(rt, "parts")
		var b strings.Builder
		for _, p := range parts {
			b.WriteString(p)
			if rapid.Bool().Draw(rt, "space") {
				b.WriteByte(' ')
			}
		}
		check(rt, b.String())
	})
}
