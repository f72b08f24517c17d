package corpus

import (
	"fmt"
	"strings"
)

// junk: spam in many styles. Some a provider has filed in Junk, some a filter has marked, some
// came through unmarked, as real spam does.
func (g *gen) junk() Message {
	d := g.date()
	h := &header{}
	var subject, text, kind string
	var files []string
	html := false
	n := g.r.Uint32()
	rand := fmt.Sprintf("%x", n)
	if len(rand) < 5 { // a small number: pad it, for the slices below (longer ones are as before)
		rand = fmt.Sprintf("%05x", n)
	}
	fake := g.pick([]string{"mail-" + rand + ".xyz", "promo" + rand[:4] + ".top", "secure-" + rand[:5] + ".info", rand + ".click", "newsletter" + rand[:3] + ".ru"})
	switch c := g.r.IntN(11); c {
	case 0:
		p := g.person([]string{"gmail.com", "yahoo.com", "outlook.com"})
		h.add("From", "\"Barrister "+p.name+"\" <"+p.addr+">")
		h.add("Reply-To", "claims.office"+fmt.Sprint(g.r.IntN(99))+"@"+g.pick([]string{"gmail.com", "yahoo.com", "proton.me"}))
		subject = g.pick([]string{"URGENT RESPONSE NEEDED", "Dear Friend", "Compensation Fund Release", "Inheritance notification"})
		text = "Dear Friend,\n\nI am Barrister " + p.name + ", the personal attorney to the late engineer who died with his family. He left the sum of USD 10.5 million in a bank. You are the next of kin. Reply with your full name and phone number for the wire transfer.\n"
		kind = "advance-fee"
	case 1:
		b := banks[g.r.IntN(len(banks))]
		look := strings.Replace(b.domain, ".example", "-secure-login."+g.pick([]string{"com", "net", "info"}), 1)
		h.add("From", encodeWord(b.name, "utf-8", false)+" <security@"+look+">")
		subject = g.pick([]string{"Your account has been suspended", "Unusual activity detected - verify now", "Action required: confirm your identity within 24 hours", "Final notice: your card is locked"})
		text = "Dear valued customer,\n\nWe detected unusual activity on your account. Your account has been suspended. Click here to verify your account immediately or it will be closed.\n"
		html = true
		kind = "phish-bank"
		h.add("Authentication-Results", "mx.example.com; dkim=fail header.d="+look+"; spf=softfail smtp.mailfrom="+look+"; dmarc=fail")
	case 2:
		h.add("From", "\"Pharmacy Online\" <sales@"+fake+">")
		subject = g.pick([]string{"V1agra 80% 0FF no prescription", "Cheap meds shipped discreetly", "Lose 20 lbs in 2 weeks - miracle formula"})
		text = "Best prices on cialis and v1agra. No prescription needed. Order now: http://" + fake + "/p\n"
		kind = "pharma"
	case 3:
		h.add("From", "\"Crypto Profits\" <info@"+fake+">")
		subject = g.pick([]string{"Turn $250 into $10,000 with bitcoin", "Passive income: guaranteed returns", "Double your crypto in 7 days!!!"})
		text = "Our crypto trading robot earns $3,000 a day. Guaranteed income, risk-free. Join now before only 5 spots left.\n"
		html = true
		kind = "crypto"
	case 4:
		h.add("From", "\"Prize Department\" <winner@"+fake+">")
		subject = g.pick([]string{"Congratulations! You have won an iPhone 15", "You've been selected for a $500 gift card", "CLAIM YOUR PRIZE NOW"})
		text = "Congratulations! You are our lucky winner. Claim your reward now, limited time.\n"
		html = true
		kind = "prize"
	case 5:
		carrier := g.pick([]string{"DHL", "USPS", "Royal Mail", "Correos"})
		h.add("From", carrier+" Delivery <noreply@"+fake+">")
		subject = g.pick([]string{"Your package is on hold: customs fee required", "Delivery attempt failed - reschedule", "We could not deliver your parcel"})
		text = "Your package is held at our depot. A customs fee of $1.99 is required. Pay here to release your delivery: http://" + fake + "/track\n"
		kind = "fake-delivery"
	case 6:
		p := g.person([]string{"gmail.com", "outlook.com"})
		g.fromField(h, p, "utf-8")
		subject = g.pick([]string{"Quick question about your website", "Partnership opportunity", "Re: SEO proposal"})
		text = "Hi,\n\nI was checking your website and noticed it is not ranking on the first page of Google. I can get you to the top in 30 days. Shall I send you a price list?\n\nRegards,\n" + p.name + "\n"
		kind = "seo-cold-pitch" // reads like a person: the hard case
	case 7:
		h.add("From", "\"Accounts Payable\" <ap@"+fake+">")
		n := g.r.IntN(99999)
		subject = fmt.Sprintf("Invoice #%05d overdue - payment required", n)
		text = "Please see the attached invoice and make the payment today to avoid late fees.\n"
		files = append(files, fmt.Sprintf("INV_%05d.html", n))
		kind = "fake-invoice"
		if g.chance(60) {
			h.add("Authentication-Results", "mx.example.com; spf=fail smtp.mailfrom="+fake)
		}
	case 8:
		// Undeclared 8-bit Cyrillic spam, as it arrives from some senders.
		h.add("From", "\"Реклама\" <info@"+fake+">")
		h.addRaw("Subject", koi8("Бесплатный заработок в интернете"))
		text = "Заработок от 5000 рублей в день без вложений. Подробнее на сайте.\n"
		kind = "cyrillic-8bit"
	case 9:
		// Snowshoe spam dressed as a newsletter, with bulk headers.
		h.add("From", "\"Health Insider\" <news@"+fake+">")
		subject = g.pick([]string{"Doctors hate this one weird trick", "This fruit burns belly fat overnight", "Hot singles in your area"})
		text = "You won't believe this. Click to watch the video. Unsubscribe here.\n"
		h.add("List-Unsubscribe", "<http://"+fake+"/unsub>")
		h.add("Precedence", "bulk")
		html = true
		kind = "snowshoe"
	default:
		h.add("From", "\"Adult Dating\" <"+rand+"@"+fake+">")
		subject = g.pick([]string{"Lonely women near you want to chat", "See who viewed your profile"})
		text = "Adult content. Meet singles tonight. xxx\n"
		html = true
		kind = "adult"
	}
	folder := ""
	switch x := g.r.IntN(100); {
	case x < 50:
		folder = "Junk"
	case x < 75:
		h.add("X-Spam-Flag", "YES")
		h.add("X-Spam-Status", fmt.Sprintf("Yes, score=%d.%d required=5.0 tests=BAYES_99,HTML_MESSAGE", 6+g.r.IntN(20), g.r.IntN(10)))
	default:
		if g.chance(30) {
			h.add("X-Spam-Status", fmt.Sprintf("No, score=%d.%d required=5.0", g.r.IntN(4), g.r.IntN(10)))
		}
	}
	dom := h.senderDomain()
	to := Owner
	if g.chance(30) {
		to = "undisclosed-recipients:;"
	}
	g.common(h, d, dom, to)
	if subject != "" {
		h.add("Subject", encodeWord(subject, "utf-8", g.chance(50)))
	}
	var body part
	switch {
	case kind == "cyrillic-8bit":
		body = part{ctype: "text/plain", cte: "8bit", body: koi8(text)}
	case html:
		body = textPart("html", "<html><body><p>"+htmlEscape(text)+"</p><img src=\"http://"+fake+"/i.gif\" width=1 height=1></body></html>", "utf-8", g.pick([]string{"base64", "quoted-printable"}))
	default:
		body = textPart("plain", text, g.pick([]string{"utf-8", "windows-1252"}), "quoted-printable")
	}
	return g.msg(h, g.withAttachments(body, files...), Junk, kind, folder, d)
}

func koi8(s string) string {
	return encodeKOI8(s)
}

// notification: automated notices that are not transactional or marketing: CI results,
// monitoring alerts, calendar reminders, social pings, mailer-daemon bounces, cron output.
func (g *gen) notification() Message {
	d := g.date()
	h := &header{}
	var subject, text, kind string
	switch c := g.r.IntN(7); c {
	case 0:
		repo := g.pick([]string{"acme/app", "sam/dotfiles", "openfoo/foo"})
		h.add("From", "\"GitHub\" <notifications@github.com>")
		subject = fmt.Sprintf("[%s] Run failed: CI - main (%x)", repo, g.r.Uint32())
		h.add("X-GitHub-Reason", "ci_activity")
		h.add("List-ID", repo+" <"+strings.ReplaceAll(repo, "/", ".")+".github.com>")
		text = "The workflow run failed. View the logs on GitHub.\n"
		kind = "ci"
	case 1:
		h.add("From", "\"Grafana Alerts\" <alerts@monitoring.example.com>")
		subject = g.pick([]string{"[FIRING:1] HighCPU on web-3", "[RESOLVED] DiskFull on db-1", "Uptime check failed: api.example.com"})
		text = "Alert details: value=97%\nDashboard: https://monitoring.example.com/d/abc\n"
		h.add("Auto-Submitted", "auto-generated")
		kind = "alert"
	case 2:
		h.add("From", "\"Google Calendar\" <calendar-notification@google.com>")
		subject = g.pick([]string{"Reminder: Dentist @ Tue 10am", "Notification: Team sync @ Mon 9:30am"})
		text = "This is a reminder for the following event.\n"
		kind = "calendar"
	case 3:
		h.add("From", g.pick([]string{"\"LinkedIn\" <notifications-noreply@linkedin.com>", "\"Facebook\" <notification@facebookmail.com>", "\"Strava\" <no-reply@strava.com>"}))
		subject = g.pick([]string{"Priya Sharma mentioned you in a comment", "You appeared in 12 searches this week", "Ana gave you kudos", "You have 3 new notifications"})
		text = "See what's new. View notification.\n"
		h.add("List-Unsubscribe", "<https://social.example/unsub>")
		kind = "social"
	case 4:
		h.add("From", "Mail Delivery Subsystem <mailer-daemon@googlemail.com>")
		subject = "Delivery Status Notification (Failure)"
		text = "Address not found. Your message wasn't delivered because the address couldn't be found.\n"
		h.add("Auto-Submitted", "auto-replied")
		kind = "bounce"
	case 5:
		h.add("From", "Cron Daemon <root@backup.home.example>")
		subject = "Cron <root@backup> /usr/local/bin/nightly-backup"
		text = "backup finished: 1204 files, 3.2 GB\n"
		kind = "cron"
	default:
		h.add("From", "\"Slack\" <feedback@slack.example>")
		subject = g.pick([]string{"[Slack] Notifications from the Acme workspace", "You have unread messages in #general"})
		text = "You have 4 unread messages.\n"
		kind = "chat-digest"
	}
	dom := h.senderDomain()
	g.common(h, d, dom, Owner)
	h.add("Subject", subject)
	return g.msg(h, textPart("plain", text, "utf-8", "7bit"), Notification, kind, "", d)
}
