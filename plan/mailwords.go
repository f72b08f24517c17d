package plan

import (
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

func words(ws ...string) map[string]bool {
	m := make(map[string]bool, len(ws))
	for _, w := range ws {
		m[w] = true
	}
	return m
}

// firstWord is a local part's first word ("no-reply+x" stays "no-reply": hyphens are kept when
// the whole hyphenated word is known).
func firstWord(local string, set map[string]bool) bool {
	if set[local] {
		return true
	}
	if i := strings.IndexAny(local, "+._"); i >= 0 && set[local[:i]] {
		return true
	}
	if i := strings.IndexByte(local, '-'); i >= 0 && set[local[:i]] {
		return true
	}
	return false
}

func isRole(local string) bool {
	if local == "" {
		return false
	}
	if firstWord(local, roleWords) {
		return true
	}
	for _, m := range roleMarks {
		if strings.Contains(local, m) {
			return true
		}
	}
	return false
}

var (
	transactionalSubject = phrases("receipt", "invoice", "statement", "order confirmation", "order confirmed", "order #", "order number", "order no",
		"your order", "your purchase", "your booking", "your reservation", "your receipt", "your invoice", "your statement", "your payment",
		"your refund", "your trip", "your flight", "your ticket", "your delivery", "your package", "your shipment", "your subscription",
		"your password", "your account", "has shipped", "been shipped", "shipped:", "out for delivery", "been delivered", "delivered:",
		"delivery update", "delivery notification", "tracking number", "tracking #", "tracking information", "shipment notification",
		"shipment update", "payment received", "payment confirmation", "payment confirmed", "payment failed", "payment due",
		"payment declined", "payment successful", "payment reminder", "payment of", "refund", "booking confirmation", "booking confirmed",
		"booking reference", "reservation confirmed", "reservation confirmation", "itinerary", "boarding pass", "e-ticket", "eticket",
		"check-in is open", "check in now", "ticket #", "[ticket", "[case", "case #", "request #", "password reset", "password changed",
		"reset your password", "verification code", "security alert", "security code", "security notice", "new sign-in", "new sign in",
		"sign-in attempt", "sign-in alert", "login alert", "login attempt", "two-factor", "2fa", "one-time code", "one-time passcode",
		"one-time password", "verify your email", "confirm your email", "confirm your account", "confirm your address",
		"account statement", "account update", "account created", "account closed", "account activity", "changes to your account",
		"contract", "agreement", "signature requested", "signature request", "please sign", "please docusign", "completed: ",
		"renewal notice", "renewal confirmation", "renewal reminder", "will renew", "has been renewed", "auto-renew", "autorenew",
		"free trial ends", "trial ends", "trial expires", "tax form", "tax document", "tax return", "1099", "w-2", "was charged",
		"was made", "was received",
		"rechnung*", "factura", "facture", "recibo", "quittung*", "bestell*", "auftragsbest*", "commande", "pedido", "versandbest*",
		"sendung*", "lieferung*", "envío", "expédition", "zahlung*", "paiement", "pago", "extracto*", "kontoauszug*", "relevé",
		"reserva", "buchung")
	transactionalText = phrases("order total", "amount due", "amount paid", "amount charged", "total paid", "total charged", "total due",
		"subtotal", "transaction id", "transaction number", "transaction reference", "invoice number", "invoice no", "invoice #",
		"invoice date", "order number", "order #", "order no", "tracking number", "tracking #", "account ending in", "card ending in",
		"ending in ", "if you didn't request", "if you did not request", "if you didn't make", "if you did not make",
		"if this wasn't you", "if this was not you", "your verification code", "your security code", "your one-time code",
		"expires in", "booking reference", "confirmation number", "confirmation code", "confirmation #", "payment method",
		"billing period")
	transactionalFile = regexp.MustCompile(`(?i)(invoice|receipt|statement|rechnung|factura|facture|recibo|quittung|ticket|boarding|itinerary|contract|agreement|order)`)

	marketingText = phrases("% off", "sale", "shop now", "limited time", "limited-time", "free shipping", "deal", "deals", "newsletter",
		"view in browser", "view this email in your browser", "view in your browser", "view online", "unsubscribe", "this week",
		"webinar", "new arrivals", "don't miss", "dont miss", "exclusive", "offer ends", "coupon", "promo code", "use code", "buy now",
		"save up to", "last chance", "black friday", "cyber monday", "members only", "member deals", "sign up today", "upgrade now",
		"upgrade today", "special offer", "manage preferences", "email preferences", "manage your preferences")

	spamText = phrases("you won", "you've won", "you have won", "been selected", "winner", "claim your", "lottery", "inheritance",
		"beneficiary", "next of kin", "bitcoin", "crypto investment", "crypto profit", "crypto trading", "cryptocurrency investment",
		"viagra", "v1agra", "cialis", "weight loss", " lbs in", "pounds in", "100% free", "act now", "urgent response", "urgent reply",
		"urgent attention", "dear friend", "dear sir/madam", "dear beneficiary", "dear winner", "dear user", "dear valued customer",
		"wire transfer", "risk-free", "risk free", "make money", "work from home", "earn $", "$$$", "hot singles", "lonely women",
		"lonely girls", "casino", "guaranteed income", "guaranteed returns", "miracle", "no prescription", "million dollars",
		"million usd", "usd 10", "account has been suspended", "account suspended", "account is suspended", "account locked",
		"account has been locked", "account disabled", "verify your account now", "verify your account immediately",
		"verify your account within", "verify your identity", "unusual activity detected", "final notice", "final warning",
		"cheap meds", "cheap pills", "cheap rolex", "replica", "barrister", "diplomat", "compensation fund", "gift card",
		"lucky winner", "you are our lucky", "click here now", "click here immediately", "click below", "limited spots",
		"spots left", "congratulations! you", "congratulations, you", "irs notice", "customs fee", "delivery attempt failed",
		"package is on hold", "package was held", "investment opportunity", "double your", "passive income", "adult content",
		"xxx", "earns $", "per day without", "без вложений", "заработок",
		// Bulk mailers' own words: removal instructions and the claim not to be spam.
		"click here", "to be removed", "be removed from", "removal instructions", "remove me", "this is not spam",
		"this is not a spam", "not unsolicited", "opt-out", "mortgage rate", "lowest rate", "refinance", "debt free",
		"credit card debt", "enlarge", "herbal", "no obligation")
	freemail = []string{"gmail.com", "yahoo.com", "hotmail.com", "outlook.com", "aol.com", "mail.ru", "yandex.ru", "proton.me", "protonmail.com", "gmx.com", "icloud.com", "live.com", "qq.com", "163.com"}
)

// phraseSet matches phrases against a text's tokens: one pass over the words with a map
// lookup each, far cheaper than searching the text for every phrase (or one large regular
// expression), which dominated planning time. Words are runs of letters, digits, apostrophes and
// hyphens; any other printable character is a token of its own ("order #" is "order", "#"). A
// phrase ending in "*" matches its last word as a prefix ("bestell*" matches "bestellung").
type phraseSet struct {
	byFirst map[string][][]string // phrases by their first token
	prefix  [][]string            // single-word prefix phrases
	n       int
}

func phrases(ps ...string) *phraseSet {
	s := &phraseSet{byFirst: map[string][][]string{}, n: len(ps)}
	for _, p := range ps {
		if w, ok := strings.CutSuffix(p, "*"); ok && !strings.ContainsAny(w, " ") {
			s.prefix = append(s.prefix, []string{w})
			continue
		}
		toks := tokenize(p)
		if len(toks) > 0 {
			s.byFirst[toks[0]] = append(s.byFirst[toks[0]], toks)
		}
	}
	return s
}

func wordRune(r rune) bool {
	return r == '\'' || r == '-' || r == '’' || unicode.IsLetter(r) || unicode.IsDigit(r)
}

// tokenize splits lower-case text into tokens.
func tokenize(s string) []string { return appendTokens(nil, s) }

// appendTokens appends the tokens of lower-case text to toks.
func appendTokens(toks []string, s string) []string {
	start := -1
	for i, r := range s {
		switch {
		case wordRune(r):
			if start < 0 {
				start = i
			}
			continue
		case start >= 0:
			toks = append(toks, s[start:i])
			start = -1
		}
		if !unicode.IsSpace(r) && r >= 0x20 {
			toks = append(toks, s[i:i+utf8.RuneLen(r)])
		}
	}
	if start >= 0 {
		toks = append(toks, s[start:])
	}
	return toks
}

// count returns how many distinct phrases occur in the tokens, up to limit.
func (ps *phraseSet) count(toks []string, limit int) int {
	var found [8]*[]string
	n := 0
	seen := func(p *[]string) bool {
		for _, f := range found[:min(n, len(found))] {
			if f == p {
				return true
			}
		}
		return false
	}
	for i, t := range toks {
		for j := range ps.byFirst[t] {
			p := &ps.byFirst[t][j]
			if i+len(*p) <= len(toks) && slices.Equal(toks[i:i+len(*p)], *p) && !seen(p) {
				if n < len(found) {
					found[n] = p
				}
				if n++; n >= limit {
					return n
				}
			}
		}
		for j := range ps.prefix {
			p := &ps.prefix[j]
			if strings.HasPrefix(t, (*p)[0]) && !seen(p) {
				if n < len(found) {
					found[n] = p
				}
				if n++; n >= limit {
					return n
				}
			}
		}
	}
	return n
}

// in reports whether any phrase occurs in the tokens.
func (ps *phraseSet) in(toks []string) bool { return ps.count(toks, 1) > 0 }

func localPart(addr string) string {
	if i := strings.LastIndexByte(addr, '@'); i >= 0 {
		return addr[:i]
	}
	return addr
}

func hasAny(set []string, xs []string) string {
	for _, x := range xs {
		if slices.Contains(set, x) {
			return x
		}
	}
	return ""
}
