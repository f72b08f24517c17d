package corpus

import (
	"fmt"
	"strings"
	"time"
)

var (
	topics = []string{"dinner on friday", "the trip to Lisbon", "moving day", "mum's birthday", "the apartment", "book club", "the kids' school play",
		"our hike", "the wedding photos", "car insurance", "Christmas plans", "the garden", "your new job", "the recipe", "weekend plans", "Oma's 80th"}
	workTopics = []string{"Q3 roadmap", "budget review", "the Henderson account", "offsite agenda", "hiring plan", "design review", "incident follow-up",
		"contract renewal with Northwind", "migration timeline", "performance reviews", "the board deck", "invoice from the printer"}
	lines = []string{
		"Are you around this weekend? It would be great to catch up.",
		"I just got back and wanted to send you the photos before I forget.",
		"Thanks so much for yesterday, it was lovely to see everyone.",
		"Could you have a look at this and tell me what you think?",
		"Sorry for the slow reply, things have been hectic here.",
		"I talked to Dad and he is fine with the plan.",
		"Let me know if Saturday works, otherwise Sunday is fine too.",
		"¿Qué tal? Te mando las fotos de la cena, ¡fue genial!",
		"Je t'envoie le document dont on a parlé, dis-moi ce que tu en penses.",
		"Hast du am Wochenende Zeit? Wir könnten zusammen grillen.",
		"Привет! Как дела? Напиши, когда будешь свободен.",
		"お疲れさまです。明日の件、よろしくお願いします。",
	}
)

func (g *gen) body(n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(g.pick(lines))
		b.WriteString("\n\n")
	}
	return b.String()
}

// quote is a reply's quoted previous message, as clients write it.
func (g *gen) quote(who string, d time.Time) string {
	return fmt.Sprintf("\nOn %s, %s wrote:\n> %s\n> %s\n", d.Add(-time.Duration(g.r.IntN(72))*time.Hour).Format("Mon, Jan 2, 2006 at 3:04 PM"), who, g.pick(lines), g.pick(lines))
}

// personal: friends and family writing to the owner, new threads and replies; some of these
// threads the owner answers (sent).
func (g *gen) personal() Message {
	p := g.person(personal)
	d := g.date()
	cs := g.charset()
	h := &header{}
	g.fromField(h, p, cs)
	g.common(h, d, domainOf(p.addr), g.ownerTo())
	topic := g.pick(topics)
	kind := "personal-new"
	subject := strings.ToUpper(topic[:1]) + topic[1:]
	text := "Hi Sam,\n\n" + g.body(1+g.r.IntN(3)) + "Love,\n" + strings.Fields(p.name)[0] + "\n"
	if g.chance(55) {
		kind = "personal-reply"
		subject = g.pick([]string{"Re: ", "RE: ", "Re: Re: ", "AW: ", "Fwd: "}) + subject
		root := g.msgID(domainOf(p.addr))
		h.add("In-Reply-To", root)
		h.add("References", root)
		text += g.quote("Sam Rivera <"+Owner+">", d)
		g.threads = append(g.threads, thread{subject: subject, root: root, with: p.addr, withName: p.name})
	}
	if g.chance(20) {
		h.add("Cc", g.person(personal).addr)
	}
	switch {
	case g.chance(3):
		h.addRaw("Subject", latin1(subject)) // an old client writing Latin-1 unencoded
	default:
		h.add("Subject", encodeWord(subject, cs, g.chance(30)))
	}
	h.add("X-Mailer", g.pick([]string{"Apple Mail (2.3731.500.231)", "Microsoft Outlook 16.0", "Mozilla Thunderbird", "iPhone Mail (20A362)", "Gmail"}))
	var files []string
	if g.chance(20) {
		files = append(files, fmt.Sprintf("IMG_%04d.jpg", g.r.IntN(9999)))
		kind += "-photo"
	}
	return g.msg(h, g.withAttachments(g.clientBody(text, cs), files...), Conversation, kind, "", d)
}

func (g *gen) ownerTo() string {
	switch g.r.IntN(5) {
	case 0:
		return Owner
	case 1:
		return "Sam Rivera <" + Owner + ">"
	case 2:
		return "\"Rivera, Sam\" <" + Owner + ">"
	case 3:
		return "sam <" + Owner + ">, " + g.person(personal).addr
	}
	return "Sam <" + Owner + ">"
}

// sent: the owner's own messages, in the Sent folder; most answer a thread.
func (g *gen) sent() Message {
	d := g.date()
	h := &header{}
	h.add("From", "Sam Rivera <"+Owner+">")
	var to, subject, kind string
	h2 := &header{}
	if len(g.threads) > 0 && g.chance(75) {
		t := g.threads[g.r.IntN(len(g.threads))]
		to, subject, kind = t.withName+" <"+t.with+">", t.subject, "sent-reply"
		h2.add("In-Reply-To", t.root)
		h2.add("References", t.root)
	} else {
		p := g.person(append(personal, workDoms...))
		to, subject, kind = p.name+" <"+p.addr+">", strings.ToUpper(g.pick(topics)[:1])+g.pick(topics)[1:], "sent-new"
	}
	g.common(h, d, "example.com", to)
	h.fields = append(h.fields, h2.fields...)
	h.add("Subject", encodeWord(subject, "utf-8", false))
	h.add("User-Agent", "Mozilla Thunderbird")
	return g.msg(h, g.clientBody("Hi,\n\n"+g.body(1+g.r.IntN(2))+"Sam\n", "utf-8"), Conversation, kind, "Sent", d)
}

// work: colleagues, often with documents attached; some mention invoices and contracts
// without being one.
func (g *gen) work() Message {
	p := g.person(workDoms)
	d := g.date()
	h := &header{}
	g.fromField(h, p, "utf-8")
	g.common(h, d, domainOf(p.addr), "Sam Rivera <"+Owner+">")
	topic := g.pick(workTopics)
	subject := topic
	if g.chance(50) {
		subject = "RE: " + topic
		r := g.msgID(domainOf(p.addr))
		h.add("In-Reply-To", r)
		h.add("References", r)
	}
	h.add("Subject", subject)
	h.add("Thread-Topic", topic)
	h.add("X-MS-Exchange-Organization-AuthAs", "Internal")
	var files []string
	if g.chance(35) {
		files = append(files, g.pick([]string{"Q3-plan.docx", "notes.pdf", "draft-contract.docx", "agenda.pdf", "invite.ics"}))
	}
	text := "Hi Sam,\n\n" + g.pick([]string{"Please find the latest version attached.", "Can we go over this tomorrow at 10?", "I've added my comments, see below.", "Following up on our call."}) +
		"\n\nBest regards,\n" + p.name + "\n" + domainOf(p.addr) + " | Tel +1 555 0100\n"
	return g.msg(h, g.withAttachments(g.clientBody(text, "utf-8"), files...), Conversation, "work", "", d)
}

// discussionList: mailing lists people write to, of several kinds.
func (g *gen) discussionList() Message {
	p := g.person(append(personal, workDoms...))
	d := g.date()
	h := &header{}
	lists := []struct{ name, host, kind string }{
		{"dev", "lists.apache.example", "mailman"}, {"users", "lists.debian.example", "mailman"}, {"python-ideas", "mail.python.example", "mailman3"},
		{"linux-kernel", "vger.kernel.example", "vger"}, {"nixos-dev", "googlegroups.com", "google-groups"}, {"hiking-club", "groups.io", "groups.io"},
		{"postgres-hackers", "lists.postgresql.example", "pglister"}, {"neighbours", "googlegroups.com", "google-groups"},
	}
	l := lists[g.r.IntN(len(lists))]
	addr := l.name + "@" + l.host
	g.fromField(h, p, "utf-8")
	g.common(h, d, domainOf(p.addr), addr)
	topic := g.pick([]string{"release plan for 2.4", "flaky test in CI", "proposal: drop Python 3.8", "[PATCH v2 3/7] mm: fix accounting", "meeting minutes", "spring hike route", "RFC: new config format", "lost cat on Elm St", "question about the API"})
	subject := topic
	if g.chance(65) {
		subject = "Re: " + topic
		r := g.msgID(domainOf(p.addr))
		h.add("In-Reply-To", r)
		h.add("References", g.msgID(l.host)+" "+r)
	}
	switch l.kind {
	case "mailman", "mailman3":
		h.add("Subject", "["+l.name+"] "+subject)
		h.add("List-Id", fmt.Sprintf("%s discussion <%s.%s>", l.name, l.name, l.host))
		h.add("List-Post", "<mailto:"+addr+">")
		h.add("List-Unsubscribe", fmt.Sprintf("<https://%s/mailman/options/%s>, <mailto:%s-request@%s?subject=unsubscribe>", l.host, l.name, l.name, l.host))
		h.add("List-Archive", "<https://"+l.host+"/pipermail/"+l.name+"/>")
		h.add("Precedence", "list")
		h.add("X-Mailman-Version", "2.1.39")
		if l.kind == "mailman3" {
			h.add("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")
		}
		h.add("Sender", fmt.Sprintf("\"%s\" <%s-bounces@%s>", l.name, l.name, l.host))
	case "vger":
		// vger lists carry no List-Post, and mark themselves bulk.
		h.add("Subject", subject)
		h.add("List-Id", "<"+l.name+".vger.kernel.example>")
		h.add("X-Mailing-List", addr)
		h.add("List-Subscribe", "<mailto:majordomo@vger.kernel.example?body=subscribe%20"+l.name+">")
		h.add("List-Unsubscribe", "<mailto:majordomo@vger.kernel.example?body=unsubscribe%20"+l.name+">")
		h.add("Precedence", "bulk")
		h.add("Cc", g.person(workDoms).addr+", "+g.person(personal).addr)
	case "google-groups":
		h.add("Subject", subject)
		h.add("Mailing-list", "list "+addr+"; contact "+l.name+"+owners@googlegroups.com")
		h.add("List-Id", "<"+l.name+".googlegroups.com>")
		h.add("List-Post", "<https://groups.google.com/group/"+l.name+"/post>, <mailto:"+addr+">")
		h.add("List-Help", "<https://groups.google.com/support/>, <mailto:"+l.name+"+help@googlegroups.com>")
		h.add("List-Unsubscribe", "<mailto:googlegroups-manage+123+unsubscribe@googlegroups.com>, <https://groups.google.com/d/forum/"+l.name+"/unsubscribe>")
		h.add("Precedence", "list")
		h.add("X-Google-Group-Id", fmt.Sprint(g.r.Int64N(1e12)))
	case "groups.io":
		h.add("Subject", "[hiking-club] "+subject)
		h.add("List-Id", "<hiking-club.groups.io>")
		h.add("List-Post", "<mailto:hiking-club@groups.io>")
		h.add("List-Unsubscribe", "<https://groups.io/g/hiking-club/leave/123>")
		h.add("List-Unsubscribe-Post", "List-Unsubscribe=One-Click")
		h.add("Precedence", "bulk")
		h.add("X-Groupsio-Msgnum", fmt.Sprint(g.r.IntN(9000)))
	case "pglister":
		h.add("Subject", subject)
		h.add("List-Id", "<pgsql-hackers.lists.postgresql.example>")
		h.add("List-Archive", "<https://www.postgresql.example/list/pgsql-hackers/>")
		h.add("List-Help", "<https://lists.postgresql.example/>")
		h.add("List-Owner", "<mailto:pgsql-hackers-owner@lists.postgresql.example>")
		h.add("List-Post", "<mailto:pgsql-hackers@lists.postgresql.example>")
		h.add("List-Unsubscribe", "<https://lists.postgresql.example/unsubscribe/>")
		h.add("Precedence", "bulk")
	}
	text := g.body(1+g.r.IntN(4)) + "-- \n" + p.name + "\n"
	if strings.HasPrefix(subject, "Re:") {
		text += g.quote(g.person(personal).name, d)
	}
	if l.kind == "mailman" {
		text += "\n_______________________________________________\n" + l.name + " mailing list\n" + addr + "\nhttps://" + l.host + "/mailman/listinfo/" + l.name + "\n"
	}
	return g.msg(h, textPart("plain", text, "utf-8", g.pick([]string{"8bit", "quoted-printable"})), Conversation, "list-"+l.kind, "", d)
}

// codeHostComment: a person's comment or review relayed by a code host; you can reply to it.
func (g *gen) codeHostComment() Message {
	p := g.person(personal)
	d := g.date()
	h := &header{}
	repo := g.pick([]string{"acme/app", "kubernetes-example/kube", "rust-example/cargo", "sam/dotfiles", "openfoo/foo"})
	n := 1 + g.r.IntN(9000)
	if g.chance(70) {
		login := asciiFold(strings.Fields(p.name)[0]) + fmt.Sprint(g.r.IntN(99))
		h.add("From", encodeWord(p.name, "utf-8", false)+" <notifications@github.com>")
		g.common(h, d, "github.com", repo[strings.IndexByte(repo, '/')+1:]+" <"+repo[strings.IndexByte(repo, '/')+1:]+"@noreply.github.com>")
		h.add("Cc", "Sam Rivera <"+Owner+">, Mention <mention@noreply.github.com>")
		h.add("Reply-To", repo+" <reply+AB"+fmt.Sprintf("%X", g.r.Uint64())+"@reply.github.com>")
		h.add("Subject", fmt.Sprintf("Re: [%s] %s (#%d)", repo, g.pick([]string{"Crash on start with empty config", "Add support for ARM64", "Docs: fix typo in README", "Memory leak in watcher", "Bump dependency to 2.0"}), n))
		h.add("In-Reply-To", fmt.Sprintf("<%s/issues/%d@github.com>", repo, n))
		h.add("References", fmt.Sprintf("<%s/issues/%d@github.com>", repo, n))
		h.add("List-ID", repo+" <"+strings.ReplaceAll(repo, "/", ".")+".github.com>")
		h.add("List-Archive", "https://github.com/"+repo)
		h.add("List-Unsubscribe", "<mailto:unsub+AB@reply.github.com>, <https://github.com/notifications/unsubscribe/AB>")
		h.add("X-GitHub-Sender", login)
		h.add("X-GitHub-Reason", g.pick([]string{"mention", "comment", "author", "review_requested", "subscribed"}))
		h.add("X-GitHub-Recipient", "samrivera")
		h.add("Precedence", "list")
		html := fmt.Sprintf("<p><b>@%s</b> commented on this issue.</p><p>%s</p><p>—<br>Reply to this email directly, <a href=\"https://github.com/%s/issues/%d\">view it on GitHub</a>, or <a href=\"https://github.com/notifications/unsubscribe\">unsubscribe</a>.</p>", login, htmlEscape(g.pick(lines)), repo, n)
		plain := fmt.Sprintf("%s\n\n—\nReply to this email directly, view it on GitHub:\nhttps://github.com/%s/issues/%d\nYou are receiving this because you were mentioned.", g.pick(lines), repo, n)
		body := multipart("alternative", fmt.Sprintf("--==_mimepart_%x", g.r.Uint64()), textPart("plain", plain, "UTF-8", "7bit"), textPart("html", html, "UTF-8", "7bit"))
		return g.msg(h, body, Conversation, "github-comment", "", d)
	}
	h.add("From", encodeWord(p.name, "utf-8", false)+" <gitlab@gitlab.example.com>")
	g.common(h, d, "gitlab.example.com", "Sam Rivera <"+Owner+">")
	h.add("Reply-To", "GitLab <incoming+"+fmt.Sprintf("%x", g.r.Uint64())+"@gitlab.example.com>")
	h.add("Subject", fmt.Sprintf("Re: %s | %s (!%d)", repo, g.pick([]string{"Refactor auth middleware", "Fix flaky integration test", "Add metrics endpoint"}), n))
	h.add("In-Reply-To", fmt.Sprintf("<merge_request_%d@gitlab.example.com>", n))
	h.add("X-GitLab-Project", repo)
	h.add("X-GitLab-MergeRequest-IID", fmt.Sprint(n))
	h.add("X-GitLab-NotificationReason", g.pick([]string{"mentioned", "review_requested", ""}))
	h.add("List-Id", repo+" | "+fmt.Sprint(g.r.IntN(9999))+" <"+fmt.Sprint(g.r.IntN(9999))+".gitlab.example.com>")
	h.add("List-Unsubscribe", "<https://gitlab.example.com/-/sent_notifications/abc/unsubscribe>")
	h.add("Auto-Submitted", "auto-generated")
	h.add("X-Auto-Response-Suppress", "All")
	return g.msg(h, textPart("plain", p.name+" commented:\n\n"+g.pick(lines)+"\n\n-- \nReply to this email directly or view it on GitLab.", "utf-8", "quoted-printable"), Conversation, "gitlab-comment", "", d)
}
