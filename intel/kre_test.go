package intel

import (
	"regexp/syntax"
	"strings"
	"testing"
)

// kre.in searches only the lines that hold one of an expression's words: that is right only
// if no expression can match across a line break. This walks each expression's syntax tree:
// no anchors, no class or any-character that admits '\n', no (?s).
func TestKreOneLine(t *testing.T) {
	all := map[string]kre{"charge": reCharge, "recurring": reRecurring, "order": reOrder, "bank": reBank, "split": reSplit,
		"promo": rePromo, "trialStart": reTrialStart, "trialNotice": reTrialNotice, "cancel": reCancel, "autoUpgrade": reAutoUpgrade,
		"selfChange": reSelfChange, "priceChange": rePriceChange, "priceDrop": rePriceDrop, "teaser": reTeaser, "teaserThen": reTeaserThen,
		"creditGrant": reCreditGrant, "creditLeft": reCreditLeft, "creditsOut": reCreditsOut, "overage": reOverage, "fee": reFee,
		"tax": reTax, "subtotal": reSubtotal, "creditLine": reCreditLine, "total": reTotal, "final": reFinal, "planLine": rePlanLine,
		"seatsAdded": reSeatsAdded, "trialDays": reTrialDays, "afterTrial": reAfterTrial, "servicePer": reServicePer, "endWord": reEndWord,
		"scam": reScam, "validUntil": reValidUntil, "failed": reFailed, "refund": reRefund, "notYours": reNotYours, "yours": reYours,
		"activity": reActivity}
	for name, k := range all {
		re, err := syntax.Parse(k.String(), syntax.Perl)
		if err != nil {
			t.Fatal(err)
		}
		if why := crossesLines(re); why != "" {
			t.Errorf("%s: %s", name, why)
		}
		for _, w := range k.keys {
			if w != strings.ToLower(w) {
				t.Errorf("%s: key %q is not lowercase", name, w)
			}
		}
	}
	// And the line search finds what a whole-text search does.
	text := "hello there\nyour subscription has been cancelled\nbye"
	if !reCancel.in(text, text) || reCancel.in("your subscription\nhas been cancelled", "your subscription\nhas been cancelled") {
		t.Error("line search")
	}
}

func crossesLines(re *syntax.Regexp) string {
	switch re.Op {
	case syntax.OpBeginLine, syntax.OpEndLine, syntax.OpBeginText, syntax.OpEndText:
		return "an anchor"
	case syntax.OpAnyChar:
		return "(?s) or any character"
	case syntax.OpCharClass:
		for i := 0; i+1 < len(re.Rune); i += 2 {
			if re.Rune[i] <= '\n' && '\n' <= re.Rune[i+1] {
				return "a class admitting a line break: " + re.String()
			}
		}
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if r == '\n' {
				return "a literal line break"
			}
		}
	}
	for _, s := range re.Sub {
		if why := crossesLines(s); why != "" {
			return why
		}
	}
	return ""
}
