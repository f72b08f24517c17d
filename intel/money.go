package intel

import (
	"regexp"
	"strings"
)

// amount is a sum of money found in text, in exact integer cents (minor units).
type amount struct {
	cents    int64
	currency string // ISO code ("USD"); "" when the text names none
	start    int    // byte offsets of the match in its line
	end      int
}

// Money in the renderings people's mail uses: "$1,234.56", "USD 12.00", "12.00 USD", "US$12.00",
// "12,00 US$", "€12,00", "1.234,56 €", "-$5.00", "$-5.00", "($5.00)", "$5.00 CR", "12 dollars".
var (
	curPre  = `US\$|USD|CA\$|CAD|C\$|AU\$|AUD|A\$|NZ\$|NZD|HK\$|S\$|\$|€|EUR|£|GBP|CHF|Fr\.`
	curPost = `USD|US\$|US dollars|dollars|CAD|AUD|EUR|euros?|€|GBP|£|CHF|\$`
	num     = `\d{1,3}(?:[,.\x{00a0}\x{202f}' ]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?`
	moneyRe = regexp.MustCompile(`(\()?([-−–]\s?)?(?:(` + curPre + `)\s?([-−])?\s?(` + num + `)|(` + num + `)\s?(` + curPost + `)\b?)(\))?(\s?CR\b)?`)
)

var currencyOf = map[string]string{
	"$": "USD", "us$": "USD", "usd": "USD", "us dollars": "USD", "dollars": "USD",
	"ca$": "CAD", "c$": "CAD", "cad": "CAD", "au$": "AUD", "a$": "AUD", "aud": "AUD",
	"nz$": "NZD", "nzd": "NZD", "hk$": "HKD", "s$": "SGD",
	"€": "EUR", "eur": "EUR", "euro": "EUR", "euros": "EUR",
	"£": "GBP", "gbp": "GBP", "chf": "CHF", "fr.": "CHF",
}

// hasMoneyHint is a cheap test run before the expression: a currency sign or code and a digit.
func hasMoneyHint(s string) bool {
	if !strings.ContainsAny(s, "0123456789") {
		return false
	}
	return strings.ContainsAny(s, "$€£") || strings.Contains(s, "USD") || strings.Contains(s, "EUR") ||
		strings.Contains(s, "GBP") || strings.Contains(s, "CAD") || strings.Contains(s, "AUD") ||
		strings.Contains(s, "CHF") || strings.Contains(s, "dollar") || strings.Contains(s, "euro")
}

// findMoney returns the sums of money in a line, in order.
func findMoney(line string) []amount {
	if !hasMoneyHint(line) {
		return nil
	}
	var out []amount
	for _, m := range moneyRe.FindAllStringSubmatchIndex(line, -1) {
		g := func(i int) string {
			if m[2*i] < 0 {
				return ""
			}
			return line[m[2*i]:m[2*i+1]]
		}
		cur, n := g(3), g(5)
		if n == "" {
			cur, n = g(7), g(6)
		}
		if n == "" || cur == "" {
			continue
		}
		// A number glued to letters before it ("A1 $", "v2 USD") is not an amount.
		s := m[0]
		if s > 0 && isWordByte(line[s-1]) && g(3) == "" {
			continue
		}
		cents, ok := parseCents(n)
		if !ok {
			continue
		}
		neg := g(2) != "" || g(4) != "" || (g(1) != "" && g(8) != "") || g(9) != ""
		if neg {
			cents = -cents
		}
		out = append(out, amount{cents: cents, currency: currencyOf[strings.ToLower(cur)], start: m[0], end: m[1]})
	}
	return out
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// parseCents reads a number written with any of the usual separators: the last '.' or ','
// followed by one or two digits is the decimal mark; every other separator groups thousands.
func parseCents(s string) (int64, bool) {
	dec := -1
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] == '.' || s[i] == ',' {
			if d := len(s) - i - 1; d == 1 || d == 2 {
				dec = i
			}
			break
		}
	}
	var whole, frac int64
	fracDigits := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			if dec >= 0 && i > dec {
				frac = frac*10 + int64(c-'0')
				fracDigits++
			} else {
				whole = whole*10 + int64(c-'0')
				if whole > 1e13 {
					return 0, false
				}
			}
		}
	}
	if fracDigits == 1 {
		frac *= 10
	}
	return whole*100 + frac, true
}
