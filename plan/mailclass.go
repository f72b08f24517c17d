package plan

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"svc.dev/svc/mail"
)

// mailKind is what a message is to the person who keeps it.
type mailKind uint8

const (
	mailUnknown       mailKind = iota // no judgement: the general rules decide (notifications, alerts)
	mailConversation                  // people writing to each other, shown by the mailbox: never removable by default
	mailTransactional                 // receipts, orders, statements, security notices: preserve
	mailMarketing                     // bulk marketing and newsletters: promotional
	mailJunk                          // spam: removable
	mailConflict                      // signals disagree: review
	mailUnreadable                    // nothing could be read: review
	mailStranger                      // looks like a person's mail, no evidence the owner knows them: review
)

// verdict is a message's kind and why, before the mailbox's evidence is weighed
// (markConversations).
type verdict struct {
	kind   mailKind
	reason string
	// person is set for unsolicited mail that looks like a person's: its class depends on
	// whether the mailbox shows the owner knows the sender.
	person bool
	// junk and junkWhy are the junk signals of a stranger's mail (mailStranger).
	junk    int
	junkWhy string
}

// Folder and label names providers use for spam and for the owner's sent mail (Maildir++
// folders, IMAP special-use names in a few languages, Gmail labels).
var (
	spamFolders = []string{"spam", "junk", "junk e-mail", "junk email", "bulk mail", "junk mail", "[gmail]/spam", "pourriel", "correo no deseado"}
	sentFolders = []string{"sent", "sent items", "sent mail", "sent messages", "[gmail]/sent mail", "gesendet", "gesendete objekte", "enviados", "envoyés", "elementos enviados", "posta inviata"}
)

// folderIs reports whether a container (a path, a Maildir++ ".Folder.Sub" name or a label) names
// one of the folders.
func folderIs(container string, names []string) bool {
	c := strings.ToLower(strings.TrimSpace(container))
	if slices.Contains(names, c) {
		return true
	}
	last := path.Base(strings.TrimSuffix(c, "/"))
	if i := strings.LastIndexByte(last, '.'); i >= 0 && i < len(last)-1 {
		last = last[i+1:] // Maildir++: ".INBOX.Sent"
	}
	return slices.Contains(names, strings.TrimPrefix(last, "."))
}

func inFolder(o *Object, names []string) string {
	for _, c := range o.Containers {
		if folderIs(c, names) {
			return c
		}
	}
	return ""
}

// Sending platforms by what they mostly send.
var (
	discussionPlatforms = []string{"mailman", "google-groups", "groups.io", "discourse", "yahoo-groups", "mailing-list"}
	codeHostPlatforms   = []string{"github", "gitlab", "gitea", "bugzilla", "jira"}
	marketingPlatforms  = []string{"mailchimp", "klaviyo", "hubspot", "salesforce-marketing-cloud", "campaign", "substack"}
	bulkPlatforms       = []string{"sendgrid", "mailgun", "amazon-ses"} // marketing and transactional alike
)

// Local parts (their first word, split at - + . _) of addresses that belong to a function, not a
// person; and words that mark an automated address anywhere in it.
var (
	roleWords = words("noreply", "no-reply", "donotreply", "do-not-reply", "notification", "notifications", "notify", "alert", "alerts",
		"tracking", "root", "cron", "feedback", "calendar", "info", "news", "newsletter", "newsletters", "hello", "hi", "marketing",
		"promo", "promotions", "offers", "deals", "sales", "team", "support", "help", "billing", "invoice", "invoices", "receipt",
		"receipts", "order", "orders", "shipping", "account", "accounts", "security", "mailer-daemon", "postmaster", "updates",
		"digest", "bounce", "bounces", "service", "customerservice", "care", "rewards", "store", "shop", "admin", "contact",
		"members", "community", "events", "mail", "email", "auto-confirm", "payment", "payments", "statement", "statements")
	roleMarks          = []string{"noreply", "no-reply", "donotreply", "bounce", "notif", "alert", "daemon"}
	transactionalWords = words("billing", "invoice", "invoices", "receipt", "receipts", "order", "orders", "order-update", "shipping",
		"shipment-tracking", "account", "accounts", "account-security", "security", "payment", "payments", "statement", "statements",
		"auto-confirm", "booking", "bookings", "reservation", "reservations", "ticket", "tickets", "eticket", "e-ticket")
	marketingWords = words("news", "newsletter", "newsletters", "marketing", "promo", "offers", "deals", "hello", "hi")
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

// signals adds points and names the signals behind them.
type signals struct {
	score int
	why   []string
}

func (s *signals) add(points int, why string) {
	s.score += points
	if len(s.why) < 4 && !slices.Contains(s.why, why) {
		s.why = append(s.why, why)
	}
}

func (s *signals) String() string { return strings.Join(s.why, ", ") }

// judgeMail decides what a message is from its headers, header facts, folders and the start and
// end of its text. docs/plans.md lists the signals and their order; precision comes first: a
// message is only called junk or marketing when several independent signals agree, and
// conversation or transactional signals, which keep a message, win over removable ones unless
// the spam marks are overwhelming.
func judgeMail(o *Object, scratch *[]string) verdict {
	f := o.Facts
	if why := f[mail.FactUnreadable]; why != "" {
		return verdict{kind: mailUnreadable, reason: "unreadable: " + why + "; listed so you can look at it"}
	}
	from := address(o.From)
	local, domain := localPart(from), domainOf(from)
	subject := strings.ToLower(o.Subject)
	toks := appendTokens((*scratch)[:0], subject)
	n := len(toks)
	toks = appendTokens(toks, strings.ToLower(o.Snippet+" "+f[mail.FactTextTail]))
	*scratch = toks
	subj, text := toks[:n:n], toks[n:]
	platforms := strings.Split(f[mail.FactPlatform], ",")
	listPost := strings.ToLower(strings.TrimSpace(f[mail.FactListPost]))
	acceptsPosts := strings.Contains(listPost, "mailto:") // RFC 2369: posts go to the list by mail
	precedence := f[mail.FactPrecedence]
	auto := f[mail.FactAutoSubmit]
	role := isRole(local)

	// The provider or a spam filter already said spam (decided below, once it is known whether
	// the message came through a list the owner receives).
	said := ""
	if c := inFolder(o, spamFolders); c != "" {
		said = "the provider filed it as spam (" + c + ")"
	} else if v := f[mail.FactSpam]; v != "" {
		said = "a spam filter marked it (" + v + ")"
	}

	var junk, trans, mkt signals
	if a := f[mail.FactAuthFail]; a != "" {
		junk.add(2, "sender authentication failed ("+a+")")
	}
	if precedence == "junk" {
		junk.add(1, "Precedence: junk")
	}
	if spamText.in(subj) {
		junk.add(2, "spam wording in the subject")
	}
	if spamText.in(text) {
		junk.add(1, "spam wording in the text")
	}
	if shouting(o.Subject) {
		junk.add(1, "subject in capitals or with !!!")
	}
	if paddedTag(o.Subject) {
		junk.add(1, "the subject is padded with spaces before a tag")
	}
	if shouting(truncateRunes(o.Snippet, 200)) {
		junk.add(1, "the text starts in capitals")
	}
	if rt := f[mail.FactReplyTo]; rt != "" && domain != "" && domainOf(strings.ToLower(rt)) != domain &&
		slices.Contains(freemail, domainOf(strings.ToLower(rt))) && !slices.Contains(freemail, domain) {
		junk.add(2, "replies go to a free mail address unlike the sender's")
	}
	if name := strings.ToLower(f[mail.FactFromName]); strings.Contains(name, "@") && domain != "" && !strings.Contains(name, domain) {
		junk.add(2, "the display name shows another address")
	}
	if from == "" && o.Subject == "" {
		junk.add(1, "no sender and no subject")
	}

	if transactionalSubject.in(subj) {
		trans.add(2, "the subject names a record (receipt, order, statement, booking, account notice)")
	}
	switch n := transactionalText.count(text, 2); {
	case n >= 2:
		trans.add(2, "the text has order or payment details")
	case n == 1:
		trans.add(1, "the text has order or payment details")
	}
	if a := f[mail.FactAttachments]; a != "" && transactionalFile.MatchString(a) {
		trans.add(2, "a record is attached (invoice, receipt, ticket, contract)")
	}
	if firstWord(local, transactionalWords) {
		trans.add(1, "sent from a records address (billing, orders, security)")
	}

	// A discussion list: one that takes posts by mail, a list manager's headers, or a person
	// posting from their own domain to a list run elsewhere (marketing comes from the domain
	// that runs its list).
	discussion := acceptsPosts || (hasAny(discussionPlatforms, platforms) != "" && listPost != "no") ||
		(o.ListID != "" && !role && domain != "" && hasAny(marketingPlatforms, platforms) == "" && hasAny(bulkPlatforms, platforms) == "" &&
			!strings.Contains(strings.ToLower(o.ListID+" "+o.ListUnsubscribe), registrable(domain)))
	if o.ListUnsubscribe != "" && !discussion {
		mkt.add(2, "List-Unsubscribe without a list to post to")
	}
	if o.ListUnsubscribePost && !discussion {
		mkt.add(1, "one-click unsubscribe")
	}
	if precedence == "bulk" {
		mkt.add(1, "Precedence: bulk")
	}
	if p := hasAny(marketingPlatforms, platforms); p != "" {
		mkt.add(2, "sent through "+p)
	} else if p := hasAny(bulkPlatforms, platforms); p != "" {
		mkt.add(1, "sent through "+p)
	}
	if anyIn(o.Containers, marketingLabels) {
		mkt.add(1, "filed under promotions or newsletters")
	}
	if marketingText.in(subj) {
		mkt.add(1, "marketing wording in the subject")
	}
	if marketingText.in(text) {
		mkt.add(1, "marketing wording in the text")
	}
	if role && firstWord(local, marketingWords) {
		mkt.add(1, "sent from a newsletter or marketing address")
	}

	// Conversation is a fact about the mailbox, not an appearance. The message's own headers
	// can show one thing: that it came through a discussion list the owner receives (List-Id
	// with the list's own headers), or a code-host thread people write in. Whether the owner
	// wrote to the sender or in the thread is settled across the whole plan (markConversations);
	// until then a message that merely looks like a person's is a stranger's.
	conv := ""
	switch p := hasAny(codeHostPlatforms, platforms); {
	case discussion:
		conv = "conversation: a discussion list you receive (" + listLabel(o.ListID, listPost, platforms) + ")"
	case p != "" && f[mail.FactReplyTo] != "" && o.ListID != "":
		conv = "conversation: a " + p + " thread people write in (" + listName(o.ListID) + ")"
	}
	switch {
	case said != "" && conv != "":
		// Spam posted to a list the owner receives: the list is the mailbox's evidence, so it
		// is never removable; the owner decides.
		return verdict{kind: mailConflict, reason: "review: " + said + ", but " + strings.TrimPrefix(conv, "conversation: ")}
	case said != "":
		return verdict{kind: mailJunk, reason: "junk: " + said}
	}
	// Unsolicited: nothing says the owner asked for it (no list, no unsubscribe, no sending
	// platform, not an automated notice). Only such mail is judged on its sender's identity
	// and shape, which bulk senders and lists legitimately vary.
	unsolicited := conv == "" && !discussion && o.ListID == "" && o.ListUnsubscribe == "" && auto == "" &&
		f[mail.FactPlatform] == "" && precedence != "bulk" && precedence != "list"
	if unsolicited && from != "" {
		if rp := strings.ToLower(f[mail.FactReturnPath]); rp != "" && domain != "" && !sameOrg(domainOf(rp), domain) {
			junk.add(1, "the envelope sender (Return-Path) is another domain than From")
		}
		if rt := strings.ToLower(f[mail.FactReplyTo]); rt != "" && domain != "" && !sameOrg(domainOf(rt), domain) {
			junk.add(1, "replies go to another domain than the sender's")
		}
		if f[mail.FactHTMLOnly] != "" {
			junk.add(1, "HTML only, no plain text")
		}
		if len(o.To) == 0 && len(o.Cc) == 0 {
			junk.add(1, "addressed to no one (hidden recipients)")
		}
	}
	person := unsolicited && !role && precedence == "" && from != ""

	switch {
	case conv != "" && junk.score >= 2:
		return verdict{kind: mailConflict, reason: "review: " + strings.TrimPrefix(conv, "conversation: ") + ", but " + junk.String()}
	case conv != "" && trans.score >= 4:
		return verdict{kind: mailTransactional, reason: "transactional: " + trans.String() + " (on a list)"}
	case conv != "":
		return verdict{kind: mailConversation, reason: conv}
	case person && trans.score >= 2 && junk.score < 2:
		return verdict{kind: mailTransactional, reason: "transactional: " + trans.String() + " (from a person)", person: true}
	case person && junk.score >= 2:
		return verdict{kind: mailJunk, reason: "junk: unsolicited, from someone you never wrote to, " + junk.String(), person: true}
	case person:
		return verdict{kind: mailStranger, reason: "review: looks like a person's mail, but you never wrote to the sender or in the thread", person: true,
			junk: junk.score, junkWhy: junk.String()}
	case trans.score >= 2 && junk.score >= 4:
		return verdict{kind: mailJunk, reason: "junk: " + junk.String() + " (posing as a notice)"}
	case trans.score >= 2 && junk.score >= 2:
		return verdict{kind: mailConflict, reason: "review: reads as a receipt or notice but " + junk.String()}
	case trans.score >= 2 && mkt.score >= trans.score+3:
		return verdict{kind: mailConflict, reason: "review: reads as a receipt or notice but also as marketing (" + mkt.String() + ")"}
	case trans.score >= 2:
		return verdict{kind: mailTransactional, reason: "transactional: " + trans.String()}
	case junk.score >= 3:
		return verdict{kind: mailJunk, reason: "junk: " + junk.String()}
	case mkt.score >= 3 && junk.score >= 2:
		return verdict{kind: mailJunk, reason: "junk: bulk mail with " + junk.String()}
	case mkt.score >= 3:
		// List-Unsubscribe alone says bulk, not marketing: every bulk sender must offer it now,
		// notifications included. Marketing takes one more sign.
		return verdict{kind: mailMarketing, reason: "marketing: " + mkt.String()}
	case junk.score >= 2:
		return verdict{kind: mailConflict, reason: "review: some marks of spam (" + junk.String() + ")"}
	case trans.score == 1:
		// A hint of a record is enough to keep a message from being removed for its age.
		return verdict{kind: mailConflict, reason: "review: may be a receipt or account notice (" + trans.String() + ")"}
	}
	return verdict{}
}

// sameOrg reports whether two domains belong to one organisation: equal, or one's registrable
// part the other's.
func sameOrg(a, b string) bool {
	return a == b || registrable(a) == registrable(b)
}

// marketingLabels are provider labels for marketing mail (Gmail's promotions category, folders
// people name). Gmail's updates category is not among them: it holds receipts and notices.
var marketingLabels = []string{"promotions", "category_promotions", "newsletters", "promotional", "marketing"}

// shouting reports a subject mostly in capitals, or with a run of exclamation or dollar marks.
func shouting(s string) bool {
	if strings.Contains(s, "!!!") || strings.Contains(s, "$$") {
		return true
	}
	upper, letters := 0, 0
	for _, r := range s {
		switch {
		case r >= 'A' && r <= 'Z':
			upper++
			letters++
		case r >= 'a' && r <= 'z':
			letters++
		}
	}
	return letters >= 12 && upper*10 >= letters*8
}

// paddedTag reports a subject with a run of five or more spaces before a last word: bulk mailers
// pad a per-recipient tag out of sight ("Your rate is approved          QEEB").
func paddedTag(s string) bool {
	s = strings.TrimRight(s, " \t")
	i := strings.LastIndexAny(s, " \t") // the space before the last word
	j := i
	for j > 0 && (s[j-1] == ' ' || s[j-1] == '\t') {
		j--
	}
	return i >= 0 && i-j+1 >= 5 && strings.TrimSpace(s[:j]) != "" && len(s)-i-1 <= 12
}

// truncateRunes cuts s to at most n bytes at a rune boundary.
func truncateRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// registrable approximates a domain's registrable part: its last two labels ("mail.shop.example"
// -> "shop.example").
func registrable(d string) string {
	parts := strings.Split(d, ".")
	if len(parts) <= 2 {
		return d
	}
	return strings.Join(parts[len(parts)-2:], ".")
}

// listLabel names a list: its List-Id, else the address List-Post gives, else its manager.
func listLabel(listID, listPost string, platforms []string) string {
	if id := strings.TrimSpace(listID); id != "" {
		return listName(id)
	}
	if i := strings.Index(listPost, "mailto:"); i >= 0 {
		a := listPost[i+len("mailto:"):]
		if j := strings.IndexAny(a, ">?,; "); j >= 0 {
			a = a[:j]
		}
		return a
	}
	if p := hasAny(discussionPlatforms, platforms); p != "" {
		return p
	}
	return "a list"
}

// listName returns the list's id from a List-Id value ("Dev talk <dev.lists.example.org>").
func listName(v string) string {
	if i := strings.LastIndexByte(v, '<'); i >= 0 {
		return strings.TrimSuffix(v[i+1:], ">")
	}
	return v
}
