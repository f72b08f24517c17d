package plan

import (
	"slices"
	"strconv"
	"strings"

	"svc.dev/svc/mail"
)

// relayOrgs are the organisations whose servers relay a free mail provider's mail: a message
// From one of these domains that none of them relayed did not come from the provider.
var relayOrgs = map[string][]string{
	"gmail.com":      {"google.com", "gmail.com", "googlemail.com"},
	"googlemail.com": {"google.com", "gmail.com", "googlemail.com"},
	"yahoo.com":      {"yahoo.com", "yahoo.net", "yahoodns.net", "yahoo.co.uk", "yahoo.co.jp"},
	"hotmail.com":    {"hotmail.com", "outlook.com", "msn.com", "live.com", "microsoft.com", "office365.com"},
	"outlook.com":    {"hotmail.com", "outlook.com", "msn.com", "live.com", "microsoft.com", "office365.com"},
	"live.com":       {"hotmail.com", "outlook.com", "msn.com", "live.com", "microsoft.com", "office365.com"},
	"msn.com":        {"hotmail.com", "outlook.com", "msn.com", "live.com", "microsoft.com", "office365.com"},
	"aol.com":        {"aol.com", "aol.net", "yahoo.com", "yahoodns.net"},
	"icloud.com":     {"icloud.com", "apple.com", "me.com", "mac.com"},
}

// routeSignals adds the junk signals of a message's route and shape (mail.origin, mail.relays,
// mail.shape, mail.obfuscated): how it was sent and written, not what it says. They are judged
// only on unsolicited mail (see judgeMail): bulk senders, lists and notification platforms
// legitimately relay and shape mail in every way. Each is one point; obfuscation is two, since
// people and businesses do not hide words from readers.
func routeSignals(o *Object, domain string, junk *signals) {
	f := o.Facts
	origin := f[mail.FactOrigin]
	relays := strings.Split(f[mail.FactRelays], ",")
	org := registrable(domain)
	relayed := domain == "" || f[mail.FactRelays] == "" || slices.Contains(relays, org)
	if orgs, ok := relayOrgs[org]; ok {
		relayed = f[mail.FactRelays] == "" || slices.ContainsFunc(relays, func(r string) bool { return slices.Contains(orgs, r) })
		if !relayed {
			junk.add(1, "a "+org+" sender its provider never relayed")
		}
	}
	switch {
	case origin != "" && !relayed && relayOrgs[org] == nil:
		junk.add(1, "sent from an unnamed or residential host outside the sender's domain ("+origin+")")
	case strings.Contains(origin, "dynamic") && strings.Contains(origin, "ip-literal"):
		junk.add(1, "sent from an unnamed residential host")
	}
	if links, images, words, ok := shape(f[mail.FactShape]); ok && words <= 40 && links+images >= 1 && links+images <= 3 && o.Facts[mail.FactAttachments] == "" {
		junk.add(1, "the body is little more than a link or an image")
	}
	if ob := f[mail.FactObfuscated]; ob != "" {
		points := 1
		if strings.Contains(ob, "mixed-script") || strings.Contains(ob, "spaced-letters") {
			points = 2
		}
		junk.add(points, "obfuscated text ("+ob+")")
	}
}

// shape reads the mail.shape fact ("links=N,images=N,words=N").
func shape(v string) (links, images, words int, ok bool) {
	if v == "" {
		return 0, 0, 0, false
	}
	for _, kv := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(kv, "=")
		n, err := strconv.Atoi(val)
		if err != nil {
			return 0, 0, 0, false
		}
		switch k {
		case "links":
			links = n
		case "images":
			images = n
		case "words":
			words = n
		}
	}
	return links, images, words, true
}
