package plan

import (
	"slices"
	"strings"
	"unicode/utf8"

	"svc.dev/svc/mail"
)

// signals adds points and names the signals behind them.
type signals struct {
	score int
	why   []string
}

func (s *signals) add(points int, why string) {
	s.score += points
	if len(s.why) < 6 && !slices.Contains(s.why, why) {
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
	var x judgeExtra
	v := judgeMailVerdict(o, scratch, &x)
	v.judged, v.said, v.trans, v.unsolicited, v.nSubj = true, x.said, x.trans, x.unsolicited, x.nSubj
	v.list = x.conv
	return v
}

// judgeExtra is what judgeMailVerdict learns on the way that the per-mailbox model needs.
type judgeExtra struct {
	said, conv  bool
	trans       int
	unsolicited bool
	nSubj       int
}

// judgeMailVerdict is judgeMail; it notes in x what it learned for the model.
func judgeMailVerdict(o *Object, scratch *[]string, x *judgeExtra) verdict {
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
	x.nSubj = n
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

	x.said = said != ""
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

	x.trans = trans.score
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
	x.conv = conv != ""
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
		routeSignals(o, domain, &junk)
	}
	person := unsolicited && !role && precedence == "" && from != ""
	x.unsolicited = unsolicited

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
