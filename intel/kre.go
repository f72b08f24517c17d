package intel

import (
	"regexp"
	"strings"
)

// kre is a regular expression with the literal words (lowercase) one of which every match
// contains: only the lines holding one of them are searched, and a text without any is not
// searched at all. Most mail is not billing, and running the expressions over whole texts (a
// newsletter's 8 KiB, a dozen times) was the scan's main cost. Its expressions never cross a
// line break (no \s, no anchors, every negated class excludes \n: TestKreOneLine checks), so
// a match lies within the line of one of its words.
type kre struct {
	*regexp.Regexp
	keys []string
	set  keySet // the keys' ids in the keyword index
}

// mk compiles a case-insensitive expression written in lowercase: it is matched against
// lowercased text without (?i), which spares the expression engine its case folding.
func mk(expr string, keys ...string) kre {
	return kre{regexp.MustCompile(strings.TrimPrefix(expr, "(?i)")), keys, keySetOf(keys...)}
}

// in reports whether s, whose lowercase is low, matches.
func (k kre) in(s, low string) bool {
	for _, w := range k.keys {
		for off := 0; off < len(low); {
			i := strings.Index(low[off:], w)
			if i < 0 {
				break
			}
			i += off
			a := strings.LastIndexByte(low[:i], '\n') + 1
			b := strings.IndexByte(low[i:], '\n')
			if b < 0 {
				b = len(low)
			} else {
				b += i
			}
			if k.MatchString(low[a:b]) {
				return true
			}
			off = b + 1 // the rest of this line was just searched
		}
	}
	return false
}

// index returns where the first match in low starts, or -1; a match that starts after before
// (when before >= 0) is not looked for. Only the lines holding one of k's words are searched,
// in order for each word, so the first line of each that matches is the earliest.
func (k kre) index(low string, before int) int {
	best := -1
	if before >= 0 {
		best = before + 1 // a bound, not a match: only earlier ones are of interest
	}
	found := false
	for _, w := range k.keys {
		for off := 0; off < len(low); {
			i := strings.Index(low[off:], w)
			if i < 0 {
				break
			}
			i += off
			a := strings.LastIndexByte(low[:i], '\n') + 1
			if best >= 0 && a >= best {
				break // a match on this line or a later one is not earlier
			}
			b := strings.IndexByte(low[i:], '\n')
			if b < 0 {
				b = len(low)
			} else {
				b += i
			}
			if loc := k.FindStringIndex(low[a:b]); loc != nil {
				if best < 0 || a+loc[0] < best {
					best, found = a+loc[0], true
				}
				break
			}
			off = b + 1
		}
	}
	if !found {
		return -1
	}
	return best
}

func containsAny(low string, keys []string) bool {
	for _, w := range keys {
		if strings.Contains(low, w) {
			return true
		}
	}
	return false
}

// noticeWords are the words of plan, seat and credit notices that state no sum.
var noticeWords = []string{"upgrad", "moved", "switched", "changed", "bumped", "seat", "licen", "member", "credit", "plan"}

// wordFacts are the words of the facts a line can state without a digit.
var wordFacts = []string{"upgrad", "moved", "switched", "changed", "bumped", "seat", "user", "licen", "member", "credit", "trial", "plan", "tier", "total", "amount", "subtotal", "due"}

// billingNotice reports whether a message that is not a bill still says something about
// billing: a price change, a teaser, credits, a plan change, seats.
func (o *Observation) billingNotice() bool {
	return o.OldPrice != nil || o.NewPrice != nil || o.TeaserPrice != nil || o.CreditGrant != nil || o.CreditsOut ||
		!o.CreditExpiry.IsZero() || o.CreditRemaining != nil || o.AutoUpgrade || o.SelfChange || o.SeatsAdded
}
