package intel

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

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
	check := func(t *testing.T, low string) {
		if got, want := periodInLow(low), periodWhole(low); got != want {
			t.Fatalf("period of %q: %q, searched whole %q", low, got, want)
		}
		var x keyIndex
		x.index(low)
		for name, k := range allKres() {
			in, has, whole := k.in(low, low), x.has(k), k.MatchString(low)
			if in != has || has != whole {
				t.Fatalf("%s on %q: in %v, index %v, whole text %v", name, low, in, has, whole)
			}
		}
	}
	for _, m := range corpus.Generate(5, 200, time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)) {
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
	for _, w := range periodWords {
		words = append(words, w.re.keys...)
	}
	words = append(words, "per ", "every ", "each ", "a ", "three ", "3 ", "ly", "-to-", "you-go", "based", "billing", "by", "/", "-",
		"$5/mo", "9 / mo", "/wk", "/yr", "/ qtr", "mo", "wk", "yr", "qtr", "pay-as-you-go", "12-month plan")
	words = append(words, "has been", "your", "we have", "the", "is now", "\n", " ", ". ", "12", "$9.99", "charged", "trial has started")
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		var b strings.Builder
		for range 1 + r.IntN(30) {
			b.WriteString(words[r.IntN(len(words))])
			if r.IntN(2) == 0 {
				b.WriteByte(' ')
			}
		}
		check(t, b.String())
	}
}

// periodWhole is periodIn as it was: each phrase searched for in the whole text, the one that
// comes first winning.
func periodWhole(low string) BillingPeriod {
	best, pos := BillingPeriod(""), len(low)+1
	for _, w := range periodWords {
		if loc := w.re.FindStringIndex(low); loc != nil && loc[0] < pos {
			best, pos = w.p, loc[0]
		}
	}
	return best
}
