package intelcorpus

import (
	"fmt"
	"time"

	"svc.dev/svc/internal/corpus"
)

// noise writes n messages that are not the user's billing: about half from the general mail
// corpus (personal and work mail, lists, newsletters, spam, orders, bank mail; its unlabelled
// subscription invoices and renewal notices are left out, since they are billing), half written
// here to look like billing without being it.
func (g *gen) noise(n int) {
	general := n / 2
	for _, m := range corpus.Generate(g.r.Uint64(), general+general/10, g.asOf) {
		if general == 0 {
			break
		}
		if m.Kind == "invoice" || m.Kind == "renewal" {
			continue
		}
		g.c.Messages = append(g.c.Messages, Message{Raw: m.Raw, Date: m.Date, Kind: "noise-" + m.Kind})
		general--
	}
	for i := 0; i < n-n/2; i++ {
		g.lookalikeNoise()
	}
}

func (g *gen) noiseDate() time.Time {
	return g.asOf.Add(-time.Duration(g.r.Int64N(int64(400 * 24 * time.Hour))))
}

func (g *gen) raw(from, subject, text string, d time.Time, extra []field, kind string, html bool) {
	h := append([]field{{"From", from}, {"To", corpus.Owner}, {"Subject", encodeWord(subject)}, {"Date", rfc1123(d)}, {"Message-ID", g.msgID(fromDomain(from[:len(from)-1]))}}, extra...)
	var body part
	if html {
		body = multipart("alternative", fmt.Sprintf("=_n%x", g.r.Uint64()), textPart("plain", text, "utf-8", "quoted-printable"), textPart("html", "<html><body>"+htmlOf(text)+"</body></html>", "utf-8", "quoted-printable"))
	} else {
		body = textPart("plain", text, "utf-8", g.pick("quoted-printable", "8bit", "base64"))
	}
	g.c.Messages = append(g.c.Messages, Message{Raw: render(h, body, g.chance(30)), Date: d, Kind: kind})
}

// lookalikeNoise writes one message that quotes prices, trials or bills without being the
// user's billing.
func (g *gen) lookalikeNoise() {
	d := g.noiseDate()
	money := g.moneyStyle()
	brand := g.pick(syl1...) + g.pick(syl2...)
	dom := fmt.Sprintf("%s.%s", lower(brand), g.pick(tlds...))
	p := g.price(199, 9999)
	unsub := []field{{"List-Unsubscribe", "<https://" + dom + "/unsub>"}, {"Precedence", "bulk"}}
	switch g.r.IntN(9) {
	case 0: // promotion with prices and a trial offer
		g.raw(brand+" <news@"+dom+">", g.pick("Start your free trial today", "Pro is now "+money(p)+"/mo", "Last chance: 40% off annual plans", "Try "+brand+" free for 30 days"),
			g.pick(
				fmt.Sprintf("Start your free trial today! After 14 days it's only %s/month. Cancel anytime.", money(p)),
				fmt.Sprintf("Limited-time offer: get the annual plan for %s per year (save 40%%). Upgrade now.", money(p*10)),
				fmt.Sprintf("Try %s free for 30 days, then just %s a month. Claim your offer before it ends.", brand, money(p)),
				fmt.Sprintf("Our lowest price ever: %s/mo for the first 3 months, then %s/mo. Sign up today!", money(p/3), money(p)))+"\n\nUnsubscribe | Privacy", d, unsub, "noise-promo", g.chance(60))
	case 1: // spam offering trials
		extra := []field{}
		if g.chance(60) {
			extra = append(extra, field{"X-Spam-Flag", "YES"}, field{"X-Spam-Status", "Yes, score=9.1"})
		}
		g.raw(g.pick("Best Deals", "Health Tips", "Winner Notice", "Account Team")+" <"+g.pick("promo", "info", "offers")+"@"+lower(g.pick(syl1...))+"-"+fmt.Sprint(g.r.IntN(999))+".biz>",
			g.pick("Your FREE trial is waiting!", "Claim your free trial now", "Congratulations! You've been selected", "Your free trial has started - confirm your card"),
			g.pick(
				fmt.Sprintf("Get your free trial of our miracle supplement. Only pay shipping %s. Then %s per month, cancel anytime!", money(495), money(p)),
				fmt.Sprintf("Your free trial has started! Confirm your card to avoid interruption. Your card will be charged %s after the trial.", money(p)),
				"Low monthly prices on everything. Click here to claim your free trial."), d, extra, "noise-spam", false)
	case 2: // mailing-list thread quoting prices
		list := g.pick("devops", "selfhosted", "photography", "freelancers")
		g.raw(g.pick("Alex Kim", "Priya Shah", "Tom Berger", "Ana Lopes")+" <"+g.pick("alex", "priya", "tom", "ana")+"@"+g.pick("example.org", "uni.example", "fastmail.com")+">",
			"Re: ["+list+"] "+g.pick("Anyone else's hosting bill jump?", "What do you pay for backups?", "Cheapest CI these days?"),
			g.pick(
				fmt.Sprintf("We pay %s per month for %s and last month the overage charges doubled our bill to %s. Their price increase from %s to %s was announced in March.", money(p), brand, money(p*2), money(p), money(p*12/10)),
				fmt.Sprintf("I moved off %s after my free trial ended; they wanted %s/month. Invoice total was %s with tax.", brand, money(p), money(p*108/100)),
				fmt.Sprintf("Our seat count went from 5 to 12 and the bill went up to %s. Renewal was %s a year.", money(p*12), money(p*100)))+"\n\n> earlier message quoted here\n-- \n"+list+" mailing list",
			d, []field{{"List-Id", list + " <" + list + ".lists.example.org>"}, {"List-Post", "<mailto:" + list + "@lists.example.org>"}, {"In-Reply-To", "<thread-" + fmt.Sprint(g.r.IntN(1e6)) + "@lists.example.org>"}}, "noise-list", false)
	case 3: // bank and card mail
		bank := g.pick("First Harbor Bank", "Crest Card", "Union Savings")
		g.raw(bank+" <alerts@"+lower(bank[:5])+"bank.example>", g.pick("Transaction alert", "Your statement is ready", "A purchase was made with your card"),
			g.pick(
				fmt.Sprintf("Your card ending in %04d was used for a purchase of %s at %s.", g.r.IntN(10000), money(p), upper(brand)),
				fmt.Sprintf("Statement balance: %s\nMinimum payment due: %s\nPayment due date: %s", money(p*20), money(p), d.AddDate(0, 0, 20).Format("Jan 2, 2006")),
				fmt.Sprintf("New transaction: %s subscription %s on your account ending in %04d.", upper(brand), money(p), g.r.IntN(10000))), d, nil, "noise-bank", g.chance(50))
	case 4: // friends splitting costs
		if g.chance(50) {
			g.raw(g.pick("Jamie", "Chris", "Mo")+" <"+g.pick("jamie", "chris", "mo")+fmt.Sprint(g.r.IntN(99))+"@gmail.com>", g.pick("Netflix split", "Spotify family plan", "Internet bill this month"),
				fmt.Sprintf("Hey! Your share of the %s subscription this month is %s. Just send it when you can.", brand, money(p/4)), d, nil, "noise-split", false)
		} else {
			g.raw("Splitwise <notifications@splitwise.example>", "Alex added \""+brand+" family plan\"",
				fmt.Sprintf("Alex added \"%s family plan\" (%s). You owe Alex %s. Settle up in the app.", brand, money(p), money(p/3)), d, nil, "noise-split", true)
		}
	case 5: // order confirmation from a shop
		no := 100000 + g.r.IntN(900000)
		g.raw(brand+" Shop <orders@"+dom+">", fmt.Sprintf("Order confirmation #%d", no),
			fmt.Sprintf("Thanks for your order!\nOrder number: %d\nSubtotal\t%s\nShipping\t%s\nOrder total\t%s\nYour order has shipped. Tracking number: 1Z%X", no, money(p), money(499), money(p+499), g.r.Uint32()), d, nil, "noise-order", g.chance(60))
	case 6: // upgrade marketing from a service the user never paid
		g.raw(brand+" <hello@"+dom+">", g.pick("Upgrade to Pro", "You're on the free plan", "Unlock "+brand+" Premium"),
			fmt.Sprintf("You're on the Free plan. Upgrade to Pro for %s per month and get unlimited projects. Special offer: 20%% off today.", money(p)), d, unsub, "noise-upsell", true)
	case 7: // newsletter with prices in an article
		g.raw("The Weekly Byte <newsletter@weeklybyte.example>", g.pick("This week: streaming prices go up again", "Are SaaS prices out of control?", "Our picks for cheap cloud storage"),
			fmt.Sprintf("Streaming services keep raising prices: one went from %s to %s per month this year. We compare plans starting at %s.\n\nUnsubscribe", money(p), money(p*13/10), money(p/2)), d, unsub, "noise-newsletter", true)
	default: // a person sending an invoice for work done once
		g.raw(g.pick("Maria Gomez", "Ben Ortiz")+" <"+g.pick("maria", "ben")+"@"+g.pick("gmail.com", "outlook.com")+">", g.pick("Invoice for the kitchen work", "Receipt for the deposit"),
			fmt.Sprintf("Hi Sam,\n\nattached is the invoice for last week. Amount due: %s.\n\nThanks!", money(p*10)), d, nil, "noise-person-invoice", false)
	}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 32
		}
	}
	return string(b)
}
