package intel

import (
	"strings"
	"unicode"

	"golang.org/x/net/publicsuffix"

	"svc.dev/svc/mail"
)

// processors send receipts on behalf of many services: their domain does not name the service,
// the display name (or Reply-To) does.
var processors = map[string]bool{
	"stripe.com": true, "paddle.com": true, "paddle.net": true, "chargebee.com": true, "recurly.com": true,
	"fastspring.com": true, "gumroad.com": true, "lemonsqueezy.com": true, "braintreegateway.com": true,
	"2checkout.com": true, "paypal.com": true, "squareup.com": true, "zuora.com": true, "chargify.com": true,
}

// freemailDomains are personal mail providers: mail from them is from a person, not a service.
var freemailDomains = map[string]bool{
	"gmail.com": true, "googlemail.com": true, "yahoo.com": true, "yahoo.co.uk": true, "hotmail.com": true,
	"outlook.com": true, "live.com": true, "msn.com": true, "icloud.com": true, "me.com": true, "mac.com": true,
	"aol.com": true, "proton.me": true, "protonmail.com": true, "gmx.de": true, "gmx.net": true, "web.de": true,
	"mail.com": true, "zoho.com": true, "yandex.ru": true, "fastmail.com": true, "hey.com": true, "t-online.de": true,
	"orange.fr": true, "free.fr": true, "libero.it": true, "qq.com": true, "163.com": true,
}

func isFreemail(d string) bool { return freemailDomains[d] }

// domainOf returns the registrable domain (eTLD+1, by the public suffix list) of an address.
func domainOf(addr string) string {
	_, host, ok := strings.Cut(strings.ToLower(strings.TrimSpace(addr)), "@")
	if !ok {
		return ""
	}
	host = strings.TrimSuffix(strings.Trim(host, "<>[] "), ".")
	if host == "" || !strings.Contains(host, ".") {
		return ""
	}
	d, err := publicsuffix.EffectiveTLDPlusOne(host)
	if err != nil {
		return ""
	}
	return d
}

// serviceOf names the service a message is from: its key (the registrable domain, or the
// display name for mail sent through a payment processor), a display name, and the domain.
func serviceOf(from mail.Address, dom string, replyTo []mail.Address) (key, name, domain string) {
	domain = dom
	if processors[dom] {
		domain = ""
		for _, r := range replyTo {
			if d := domainOf(r.Addr); d != "" && !processors[d] && !isFreemail(d) {
				domain = d
				break
			}
		}
	}
	name = displayName(from.Name)
	if name == "" && domain != "" {
		name = nameOfDomain(domain)
	}
	switch {
	case domain != "":
		key = domain
	case name != "":
		key = "name:" + strings.ToLower(name)
	default:
		key, name = dom, nameOfDomain(dom)
	}
	if name == "" {
		name = nameOfDomain(key)
	}
	return key, name, domain
}

// nameWords are the words senders add to a service's name in From.
var nameWords = []string{"billing", "team", "support", "receipts", "receipt", "invoices", "invoice", "payments", "payment",
	"accounts", "account", "notifications", "notification", "no-reply", "noreply", "customer service", "customer care",
	"subscriptions", "subscription", "orders", "hq", "inc.", "inc", "llc", "ltd", "gmbh", "via stripe", "via paddle", "from"}

// displayName cleans a From display name into a service's name: "Acme Billing" -> "Acme".
func displayName(n string) string {
	n = strings.TrimSpace(strings.Trim(n, `"'`))
	if n == "" || strings.Contains(n, "@") {
		return ""
	}
	for changed := true; changed; {
		changed = false
		low := strings.ToLower(n)
		for _, w := range nameWords {
			if strings.HasSuffix(low, " "+w) {
				n = strings.TrimSpace(n[:len(n)-len(w)-1])
				n = strings.TrimRight(n, " ,-|·:")
				changed = true
				break
			}
		}
	}
	if len(n) > 4 && strings.EqualFold(n[:4], "the ") {
		n = strings.TrimSpace(n[4:])
	}
	if i := strings.IndexAny(n, "|:("); i > 0 {
		n = strings.TrimSpace(n[:i])
	}
	return n
}

// nameOfDomain makes a display name from a domain: "photon-hosting.example" -> "Photon Hosting".
func nameOfDomain(d string) string {
	d = strings.TrimPrefix(d, "name:")
	label, _, _ := strings.Cut(d, ".")
	words := strings.FieldsFunc(label, func(r rune) bool { return r == '-' || r == '_' })
	for i, w := range words {
		r := []rune(w)
		r[0] = unicode.ToUpper(r[0])
		words[i] = string(r)
	}
	return strings.Join(words, " ")
}
