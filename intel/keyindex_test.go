package intel

import (
	"bytes"
	"math/rand/v2"
	"regexp/syntax"
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
			for line := range strings.SplitSeq(low, "\n") {
				ks := keysOf(line)
				if got, want := ks.meets(&k.set) && k.MatchString(line), k.in(line, line); got != want {
					t.Fatalf("%s on the line %q: by its keywords %v, kre.in %v", name, line, got, want)
				}
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

// Every string a kre matches holds one of its keys (else the lines searched would miss it):
// checked on strings drawn from each expression itself, every branch of every alternation in
// turn, class characters and repetition counts at random.
func TestKreKeysCoverMatches(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	check := func(name string, k kre) {
		re, err := syntax.Parse(k.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		re = re.Simplify()
		for range 3000 {
			var b strings.Builder
			drawMatch(re, r, &b)
			s := b.String()
			if k.MatchString(s) && !containsAny(s, k.keys) {
				t.Errorf("%s matches %q, which holds none of its keys %q", name, s, k.keys)
				return
			}
		}
	}
	for name, k := range allKres() {
		check(name, k)
	}
	for _, w := range periodWords {
		check(string(w.p), w.re)
	}
}

// drawMatch writes a string the expression may match (word boundaries are not drawn, so the
// caller checks that it does).
func drawMatch(re *syntax.Regexp, r *rand.Rand, b *strings.Builder) {
	switch re.Op {
	case syntax.OpLiteral:
		for _, c := range re.Rune {
			b.WriteRune(c)
		}
	case syntax.OpCharClass:
		if len(re.Rune) == 0 {
			return
		}
		i := r.IntN(len(re.Rune)/2) * 2
		lo, hi := re.Rune[i], min(re.Rune[i+1], re.Rune[i]+30)
		b.WriteRune(lo + rune(r.IntN(int(hi-lo)+1)))
	case syntax.OpAnyCharNotNL, syntax.OpAnyChar:
		b.WriteByte("ab .1"[r.IntN(5)])
	case syntax.OpCapture, syntax.OpConcat:
		for _, s := range re.Sub {
			drawMatch(s, r, b)
		}
	case syntax.OpAlternate:
		drawMatch(re.Sub[r.IntN(len(re.Sub))], r, b)
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := 0, 3
		switch re.Op {
		case syntax.OpPlus:
			lo = 1
		case syntax.OpQuest:
			hi = 1
		case syntax.OpRepeat:
			lo, hi = re.Min, re.Max
			if hi < 0 || hi > lo+3 {
				hi = lo + 3
			}
		}
		for range lo + r.IntN(hi-lo+1) {
			drawMatch(re.Sub[0], r, b)
		}
	}
}
