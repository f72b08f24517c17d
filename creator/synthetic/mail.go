package synthetic

import (
	"bytes"
	"fmt"
	"html"
	"mime/quotedprintable"
	"strings"
	"time"
)

func (g *gen) termsFile() {
	var b strings.Builder
	b.WriteString("Platform,Fee Rate,Royalty Rate,Rate per 1000,Commission per Conversion,Withholding Rate,Payout Day\n")
	n := 0
	for _, p := range g.ps {
		if !p.published {
			continue
		}
		cells := []string{p.name, "", "", "", "", fmt.Sprintf("%d%%", p.wh/100), fmt.Sprint(p.payDay)}
		switch p.model {
		case fee, shop:
			cells[1] = fmt.Sprintf("%d.%02d%%", p.rate/100, p.rate%100)
		case royalty:
			cells[2] = fmt.Sprintf("%d%%", p.rate/100)
		case perUnit:
			cells[3] = fmt.Sprintf("%d.%04d", p.rate/10000, p.rate%10000)
		case affiliate:
			cells[4] = fmt.Sprintf("$%d.%02d", p.rate/100, p.rate%100)
		}
		b.WriteString(strings.Join(cells, ",") + "\n")
		n++
	}
	if n > 0 {
		g.w.Files["terms.csv"] = []byte(b.String())
	}
}

// ---- mail ----

func (g *gen) message(from, fromName, to, toName, subject, body string, date time.Time, extra ...string) {
	g.msgN++
	id := fmt.Sprintf("<%d.%d.%s@%s>", g.w.Seed, g.msgN, date.Format("20060102"), strings.SplitN(from, "@", 2)[1])
	var b strings.Builder
	fmt.Fprintf(&b, "From: %s <%s>\r\nTo: %s <%s>\r\nSubject: %s\r\nDate: %s\r\nMessage-ID: %s\r\nMIME-Version: 1.0\r\n",
		fromName, from, toName, to, subject, date.Add(time.Duration(g.between(8, 18))*time.Hour).Format(time.RFC1123Z), id)
	for _, e := range extra {
		b.WriteString(e + "\r\n")
	}
	crlf := func(s string) string { return strings.ReplaceAll(s, "\n", "\r\n") }
	htmlBody := "<html><body><p>" + strings.ReplaceAll(html.EscapeString(body), "\n", "<br>\n") + "</p></body></html>"
	switch g.pick(5) {
	case 0: // HTML only
		b.WriteString("Content-Type: text/html; charset=utf-8\r\n\r\n" + crlf(htmlBody) + "\r\n")
	case 1: // multipart/alternative, the text quoted-printable
		var qp bytes.Buffer
		w := quotedprintable.NewWriter(&qp)
		w.Write([]byte(crlf(body)))
		w.Close()
		bd := fmt.Sprintf("alt-%d-%d", g.w.Seed, g.msgN)
		fmt.Fprintf(&b, "Content-Type: multipart/alternative; boundary=%q\r\n\r\n--%s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Transfer-Encoding: quoted-printable\r\n\r\n%s\r\n--%s\r\nContent-Type: text/html; charset=utf-8\r\n\r\n%s\r\n--%s--\r\n",
			bd, bd, qp.String(), bd, crlf(htmlBody), bd)
	default:
		b.WriteString("Content-Type: text/plain; charset=utf-8\r\n\r\n" + crlf(body) + "\r\n")
	}
	g.w.Mail = append(g.w.Mail, []byte(b.String()))
}

// noise is mail from the platforms that mentions money and payouts without being revenue
// evidence: community newsletters and reminders. It must not become a payout.
func (g *gen) noise() {
	for _, p := range g.ps {
		m := g.months[g.pick(len(g.months)-1)]
		switch g.pick(3) {
		case 0:
			g.message("news@"+p.domain, p.name, g.w.Self, "Creator", "Community update", fmt.Sprintf("Creators on %s earned over $2,000,000 in payouts in %s! Read how top creators grow their income.", p.name, m.Format("January 2006")), m.AddDate(0, 1, 3))
		case 1:
			g.message("news@"+p.domain, p.name, g.w.Self, "Creator", "Reminder", "Reminder: keep the payout details on file current to avoid payment delays.", m.AddDate(0, 1, 5))
		default:
			g.message("news@"+p.domain, p.name, g.w.Self, "Creator", "Grow with "+p.name, "Top sellers made $15,000 last month. Upgrade to Pro for $9.99 and join them.", m.AddDate(0, 0, 20))
		}
	}
}

func usd(c int64) string { return dollars.format(c, false) }

func (g *gen) amount(p *platform, c int64) string {
	if p.currency == "EUR" {
		if g.chance(0.5) {
			return "€" + plain.format(c, false)
		}
		return "EUR " + dollars.format(c, false)[1:]
	}
	return usd(c)
}

func dateWords(t time.Time, v int) string {
	switch v % 3 {
	case 0:
		return t.Format("January 2, 2006")
	case 1:
		return t.Format("2 Jan 2006")
	}
	return t.Format("2006-01-02")
}

func (g *gen) payoutMail(p *platform, rows []row) {
	from := "payouts@" + p.domain
	name := p.name + " Payouts"
	for _, r := range rows {
		if p.missing[r.i] {
			continue
		}
		period := g.months[r.i]
		due := period.AddDate(0, 1, p.payDay-1)
		pl := period.Format("January 2006")
		if g.chance(0.3) {
			pl = period.Format("2006-01")
		}
		v := g.pick(3)
		if p.scheduledMail {
			body := []string{
				fmt.Sprintf("Hi,\n\nYour payout of %s for %s earnings has been scheduled. It should arrive in your bank account on %s.\n\nThe %s team", g.amount(p, r.net), pl, dateWords(due, v), p.name),
				fmt.Sprintf("Good news! We've initiated a transfer of %s covering your %s earnings.\nExpected arrival: %s\n", g.amount(p, r.net), pl, dateWords(due, v+1)),
				fmt.Sprintf("Payment notice\n\nEarning period: %s\nAmount: %s\nScheduled payout date: %s\n", pl, g.amount(p, r.net), dateWords(due, v+2)),
			}[v]
			subj := []string{"Your payout is scheduled", "Your " + p.name + " payout is on its way", "Payout notice for " + pl}[v]
			g.message(from, name, g.w.Self, "Creator", subj, body, due.AddDate(0, 0, -4))
		}
		arrived := g.arrival(p, r.i)
		if !arrived.Before(g.w.AsOf) {
			continue // not yet arrived when the world is observed
		}
		conv := ""
		if p.currency == "EUR" {
			usdC := int64(float64(r.net)*r.appliedFX + 0.5)
			rate := fmt.Sprintf("%.4f", r.appliedFX)
			// The converted amount follows from the rate as written.
			var rn, rd int64
			fmt.Sscanf(strings.Replace(rate, ".", "", 1), "%d", &rn)
			rd = 10000
			usdC = divRound(r.net*rn, rd)
			conv = []string{
				fmt.Sprintf(" It was converted to %s at an exchange rate of %s.", usd(usdC), rate),
				fmt.Sprintf(" Converted amount: %s (FX rate %s).", usd(usdC), rate),
			}[g.pick(2)]
		}
		body := []string{
			fmt.Sprintf("Hello,\n\nYour payout of %s for %s was deposited to your bank account on %s.%s\n\nThanks for creating with %s.", g.amount(p, r.net), pl, dateWords(arrived, v), conv, p.name),
			fmt.Sprintf("Payment completed.\n\nPeriod: %s\nAmount paid: %s\nPaid on: %s\n%s", pl, g.amount(p, r.net), dateWords(arrived, v+1), conv),
			fmt.Sprintf("Your %s earnings of %s have been paid. The money landed in your account on %s.%s", pl, g.amount(p, r.net), dateWords(arrived, v+2), conv),
		}[g.pick(3)]
		subj := []string{"Your payout has been deposited", "Payment completed", "You've been paid"}[g.pick(3)]
		if p.currency == "USD" && r.net > 20000 && g.chance(0.08) {
			// Paid in two parts on the same day: the settlement is their sum.
			first := r.net / 3
			for k, part := range []int64{first, r.net - first} {
				g.message(from, name, g.w.Self, "Creator", fmt.Sprintf("Payment completed (%d of 2)", k+1),
					fmt.Sprintf("Payment completed.\n\nPeriod: %s\nAmount paid: %s (part %d of 2)\nPaid on: %s\n", pl, usd(part), k+1, dateWords(arrived, v)), arrived)
			}
			continue
		}
		g.message(from, name, g.w.Self, "Creator", subj, body, arrived)
	}
}

func (g *gen) announcements(p *platform) {
	from := "news@" + p.domain
	for i, v := range p.announced {
		eff := g.months[i]
		sent := eff.AddDate(0, 0, -int(g.between(14, 30)))
		var body string
		switch p.model {
		case fee, shop:
			body = []string{
				fmt.Sprintf("We're writing to let you know about changes to our fees. Effective %s, the platform fee will change from %s to %s of gross sales.", eff.Format("January 2, 2006"), pctS(p.termsIn(i-1)), pctS(v)),
				fmt.Sprintf("Starting with the %s period, our service fee will be %s.", eff.Format("January 2006"), pctS(v)),
			}[g.pick(2)]
		case royalty:
			body = fmt.Sprintf("An update to our royalty terms: beginning %s, the royalty rate on list sales will be %s.", eff.Format("January 2, 2006"), pctS(v))
		case perUnit:
			body = fmt.Sprintf("Effective %s, our rate per 1,000 streams changes to $%d.%02d.", eff.Format("January 2, 2006"), v/10000, v%10000/100)
		case affiliate:
			body = fmt.Sprintf("Program update: starting %s, the commission per conversion will be %s.", eff.Format("January 2006"), usd(v))
		}
		g.message(from, p.name+" Team", g.w.Self, "Creator", "Changes to our terms", body, sent)
	}
	if p.newDed >= 0 && p.dedAnnounced {
		eff := g.months[p.newDed]
		body := fmt.Sprintf("Important: beginning %s, a %s of %s will be deducted from your earnings as required by new regulation.", eff.Format("January 2, 2006"), p.newDedName, pctS(p.newDedBPS))
		g.message(from, p.name+" Team", g.w.Self, "Creator", "Update to our deductions", body, eff.AddDate(0, 0, -20))
	}
}

func pctS(b int64) string {
	if b%100 == 0 {
		return fmt.Sprintf("%d%%", b/100)
	}
	return strings.TrimRight(fmt.Sprintf("%d.%02d", b/100, b%100), "0") + "%"
}

// ---- sponsor ----

func (g *gen) sponsor() {
	sp := sponsors[g.pick(len(sponsors))]
	key := strings.Split(sp.domain, ".")[0]
	overdue := -1
	if g.chance(0.7) {
		overdue = 1 + g.pick(3)
	}
	months := []int{1, 3, 5, 7, 9}
	for n, i := range months {
		issued := g.months[i].AddDate(0, 0, int(g.between(2, 20)))
		num := fmt.Sprintf("INV-2026-%03d", 10+n)
		amount := g.between(20, 60) * 10000
		days := []int{15, 30, 45}[g.pick(3)]
		due := issued.AddDate(0, 0, days)
		contract := g.chance(0.5)
		body := fmt.Sprintf("Hi %s team,\n\nPlease find invoice %s for the sponsored video published this month.\n", sp.name, num)
		if contract {
			body += fmt.Sprintf("As agreed in our contract: %s.\n", usd(amount))
		}
		body += fmt.Sprintf("Total due: %s\nPayment terms: Net %d (due %s)\n\nThanks!\n", usd(amount), days, due.Format("January 2, 2006"))
		g.message(g.w.Self, "Creator", "ap@"+sp.domain, sp.name+" Accounts Payable", "Invoice "+num, body, issued)
		c := Cents{Expected: ptr(amount), Reported: ptr(amount)}
		unpaid := false
		switch {
		case n == len(months)-1 && due.AddDate(0, 0, 7).After(g.w.AsOf):
			unpaid = true // not due yet: a negative
			g.w.Truth.Negatives = append(g.w.Truth.Negatives, Label{Kind: "sponsor_overdue", Stream: key, Period: num, Note: "not yet due"})
		case n == overdue && due.AddDate(0, 0, 8).Before(g.w.AsOf):
			unpaid = true
			g.w.Truth.Anomalies = append(g.w.Truth.Anomalies, Label{Kind: "sponsor_overdue", Stream: key, Period: num})
		}
		if !unpaid {
			paid := due.AddDate(0, 0, -int(g.between(0, 10)))
			rbody := []string{
				fmt.Sprintf("Hello,\n\nRemittance advice: we have paid invoice %s. Payment of %s was sent on %s.\n\n%s Accounts Payable", num, usd(amount), paid.Format("January 2, 2006"), sp.name),
				fmt.Sprintf("Hi! Just confirming payment of %s for invoice %s, processed %s.", usd(amount), num, paid.Format("2006-01-02")),
			}[g.pick(2)]
			g.message("ap@"+sp.domain, sp.name+" Accounts Payable", g.w.Self, "Creator", "Re: Invoice "+num, rbody, paid)
			c.Settled = ptr(amount)
			c.Variance = ptr(int64(0))
		}
		g.w.Truth.Items[key+"/invoice:"+num] = c
	}
}
