package intelcorpus

import (
	"fmt"
	"math"
	"strings"
	"time"

	"svc.dev/svc/internal/minipdf"
)

func pdfBytes(lines []string) []byte { return minipdf.Text(lines) }

// schedule returns n billing dates one period apart, the last within one period before asOf.
func (g *gen) schedule(period string, n int) []time.Time {
	last := g.asOf.Add(-time.Duration(1+g.r.IntN(20)) * 24 * time.Hour)
	if period == "weekly" {
		last = g.asOf.Add(-time.Duration(1+g.r.IntN(6)) * 24 * time.Hour)
	}
	last = time.Date(last.Year(), last.Month(), min(last.Day(), 28), 6+g.r.IntN(14), g.r.IntN(60), g.r.IntN(60), 0, time.UTC)
	out := make([]time.Time, n)
	for i := n - 1; i >= 0; i-- {
		k := n - 1 - i
		switch period {
		case "weekly":
			out[i] = last.AddDate(0, 0, -7*k)
		case "quarterly":
			out[i] = last.AddDate(0, -3*k, 0)
		case "annual":
			out[i] = last.AddDate(-k, 0, 0)
		default:
			out[i] = last.AddDate(0, -k, 0)
		}
		out[i] = out[i].Add(time.Duration(g.r.IntN(3*3600)) * time.Second)
	}
	return out
}

func periodEnd(start time.Time, period string) time.Time {
	switch period {
	case "weekly":
		return start.AddDate(0, 0, 6)
	case "quarterly":
		return start.AddDate(0, 3, -1)
	case "annual":
		return start.AddDate(1, 0, -1)
	}
	return start.AddDate(0, 1, -1)
}

// dateFmt is a service's way of writing dates.
func (g *gen) dateFmt() string {
	return g.pick("Jan 2, 2006", "January 2, 2006", "2 January 2006", "2006-01-02", "01/02/2006", "Jan 2 2006", "2 Jan 2006")
}

var periodWordsOut = map[string][]string{
	"monthly":   {"monthly", "per month", "/mo", "billed monthly", "every month"},
	"annual":    {"annual", "per year", "/yr", "billed annually", "yearly"},
	"weekly":    {"weekly", "per week", "/wk", "billed weekly", "every week"},
	"quarterly": {"quarterly", "per quarter", "billed quarterly", "every 3 months"},
	"usage":     {"pay as you go", "usage-based", "metered usage"},
}

// renderBill writes a bill in the service's layout and sends it.
func (g *gen) renderBill(s *svc, b bill, period string, df string) {
	no := fmt.Sprintf("%s-%d", g.pick("INV", "R", "IN", "A"), 10000+g.r.IntN(89999))
	subject := g.pick(
		"Your receipt from "+s.name,
		s.name+" invoice "+no,
		"Payment received - "+s.name,
		"Your "+s.name+" subscription has been renewed",
		"["+s.name+"] Receipt for your payment",
		"Thanks for your payment",
		"Your invoice is ready",
		"Receipt #"+no,
		s.name+": payment confirmation",
	)
	totalLabel := g.pick("Total", "Amount paid", "Total charged", "Amount due", "Total due", "Grand total", "Invoice total", "You paid", "TOTAL", "Charged today", "Payment amount", "Balance due", "Total (USD)")
	var lines []string
	var pdf []string
	lines = append(lines, b.extra...)
	per := ""
	switch g.r.IntN(4) {
	case 0:
		per = fmt.Sprintf("Billing period: %s – %s", b.periodStart.Format(df), b.periodE.Format(df))
	case 1:
		per = fmt.Sprintf("Service period %s to %s", b.periodStart.Format(df), b.periodE.Format(df))
	case 2:
		if w, ok := periodWordsOut[period]; ok {
			per = fmt.Sprintf("%s plan (%s)", s.plan, w[g.r.IntN(len(w))])
		}
	}
	rows := b.lines
	rows = append(rows, line{totalLabel, b.total})
	switch s.layout {
	case 3: // sentences
		verb := g.pick("We charged %s to your card ending in %04d.", "%s was charged to your Visa ending %04d.", "Your payment of %s was successful (card ending %04d).", "We've billed %s to the card ending in %04d.")
		lines = append(lines, "Hi Sam,", fmt.Sprintf(verb, s.money(b.total), g.r.IntN(10000)))
		if per != "" {
			lines = append(lines, per)
		}
		for _, r := range b.lines {
			lines = append(lines, fmt.Sprintf("- %s: %s", r.label, s.money(r.cents)))
		}
	case 4: // PDF invoice
		lines = append(lines, "Hello,", fmt.Sprintf("Your invoice %s from %s is attached as a PDF.", no, s.name), "Thank you for your business.")
		pdf = append(pdf, s.name, "INVOICE "+no, "Date: "+b.date.Format(df))
		if per != "" {
			pdf = append(pdf, per)
		}
		for _, r := range rows {
			pdf = append(pdf, fmt.Sprintf("%s: %s", r.label, s.money(r.cents)))
		}
	default:
		lines = append(lines, g.pick("Hi Sam,", "Hello,", "Thanks for being a customer.", "Here is your receipt."), "Invoice number: "+no, "Date: "+b.date.Format(df))
		if per != "" {
			lines = append(lines, per)
		}
		for _, r := range rows {
			switch s.layout {
			case 0:
				lines = append(lines, fmt.Sprintf("%s: %s", r.label, s.money(r.cents)))
			case 1:
				lines = append(lines, fmt.Sprintf("%s %s %s", r.label, strings.Repeat(".", max(2, 28-len(r.label))), s.money(r.cents)))
			default:
				lines = append(lines, fmt.Sprintf("%s\t%s", r.label, s.money(r.cents)))
			}
		}
	}
	lines = append(lines, b.after...)
	if g.chance(30) {
		next := b.periodE.AddDate(0, 0, 1)
		lines = append(lines, g.pick("Next billing date: ", "Your next payment is due on ", "Renews on ")+next.Format(df))
	}
	lines = append(lines, "", g.pick("Manage your subscription: https://"+s.domain+"/account/billing", "Questions? Reply to this email.", "View your billing history in your account settings.", ""))
	g.send(s, b.date, subject, strings.Join(lines, "\n"), "bill", false, pdfOrNil(s.layout == 4, pdf))
}

func pdfOrNil(ok bool, p []string) []string {
	if !ok {
		return nil
	}
	return p
}

// notice sends a non-bill message from the service.
func (g *gen) notice(s *svc, date time.Time, subject string, paras ...string) {
	text := strings.Join(append([]string{g.pick("Hi Sam,", "Hello,", "Hi there,", "Dear customer,")}, paras...), "\n\n") + "\n\n" + g.pick("— The "+s.name+" team", "Thanks,\n"+s.name, "Cheers,\nThe team at "+s.name)
	g.send(s, date, subject, text, "notice", false, nil)
}

// withTax adds a tax line to some services' bills.
func (g *gen) taxed(s *svc, price int64, lines []line, taxPct int) ([]line, int64) {
	if taxPct == 0 {
		return lines, price
	}
	tax := int64(math.Round(float64(price) * float64(taxPct) / 100))
	out := append([]line{{"Subtotal", price}}, lines...)
	out = append(out, line{g.pick("Tax", "Sales tax", "VAT", "Tax (8.875%)"), tax})
	return out, price + tax
}

func (g *gen) price(lo, hi int64) int64 {
	p := lo + g.r.Int64N(hi-lo)
	switch g.r.IntN(3) {
	case 0:
		return p/100*100 - 1 // x.99
	case 1:
		return p / 100 * 100
	}
	return p
}

// service writes one service in a scenario and its label.
func (g *gen) service(sc string) {
	s := g.newService(sc)
	lab := ServiceLabel{Key: s.key, Name: s.name, Domain: s.domain, Scenario: sc, Trap: "unknown"}
	if s.processor {
		lab.Key = "name:" + strings.ToLower(s.name)
		lab.Domain = s.domain
		s.key = lab.Key
	}
	s.label = &lab
	df := g.dateFmt()
	taxPct := 0
	if g.chance(30) {
		taxPct = g.pick2(5, 8, 10, 20)
	}
	var totals []int64
	// Some services bill an add-on beside the plan, every time: part of the price, not a fee.
	addOn, addOnName := int64(0), ""
	if g.chance(20) {
		addOn, addOnName = g.price(100, 900), g.pick("Extra storage add-on", "Priority support", "Additional mailbox", "HD streaming add-on")
	}
	flat := func(period string, n int, price int64) []time.Time {
		ds := g.schedule(period, n)
		for _, d := range ds {
			items := []line{{s.plan + " plan", price}}
			p := price
			if addOn > 0 {
				items = append(items, line{addOnName, addOn})
				p += addOn
			}
			rows, total := g.taxed(s, p, items, taxPct)
			if taxPct == 0 && addOn == 0 && g.chance(50) {
				rows = []line{{s.plan + " plan (" + period + ")", price}}
			}
			g.renderBill(s, bill{date: d, lines: rows, total: total, periodStart: d, periodE: periodEnd(d, period)}, period, df)
			totals = append(totals, total)
		}
		return ds
	}
	lab.Meter = true
	switch sc {
	case "flat_monthly":
		lab.Period = "monthly"
		flat("monthly", 4+g.r.IntN(9), g.price(499, 4999))
	case "flat_annual":
		lab.Period = "annual"
		p := g.price(2900, 29900)
		ds := flat("annual", 2+g.r.IntN(2), p)
		if g.chance(50) {
			nd := ds[len(ds)-1].AddDate(1, 0, 0)
			g.notice(s, nd.AddDate(0, 0, -14-g.r.IntN(10)), g.pick("Your subscription renews soon", "Upcoming renewal", "Renewal reminder"),
				fmt.Sprintf("Your annual %s plan will renew on %s at %s. No action is needed.", s.plan, nd.Format(df), s.money(p)))
		}
	case "flat_weekly":
		lab.Period = "weekly"
		flat("weekly", 6+g.r.IntN(10), g.price(199, 1499))
	case "flat_quarterly":
		lab.Period = "quarterly"
		flat("quarterly", 3+g.r.IntN(3), g.price(1500, 9000))
	case "metered_overage", "within_allowance":
		lab.Period = "monthly"
		if sc == "metered_overage" {
			lab.Trap = "metered_overage"
		}
		unit := g.pick("GB", "hours", "requests", "minutes", "messages", "builds")
		allow := int64(g.pick2(100, 500, 1000, 5000, 10000))
		rate := int64(g.pick2(2, 5, 10, 25, 50)) // cents a unit
		base := g.price(900, 9900)
		n := 4 + g.r.IntN(8)
		over := 1 + g.r.IntN(3)
		for i, d := range g.schedule("monthly", n) {
			used := allow * int64(50+g.r.IntN(45)) / 100
			if sc == "metered_overage" && i >= n-over {
				used = allow + allow*int64(5+g.r.IntN(80))/100
			}
			rows := []line{{s.plan + " plan", base}}
			extra := []string{g.pick(
				fmt.Sprintf("Usage this period: %s %s of %s %s included", num(used), unit, num(allow), unit),
				fmt.Sprintf("You used %s %s (your plan includes %s %s).", num(used), unit, num(allow), unit),
				fmt.Sprintf("Total usage: %s %s. Included in plan: %s %s.", num(used), unit, num(allow), unit))}
			total := base
			if used > allow {
				oc := (used - allow) * rate
				rows = append(rows, line{g.pick(
					fmt.Sprintf("Overage (%s %s at %s/%s)", num(used-allow), unit, s.money(rate), strings.TrimSuffix(unit, "s")),
					"Additional usage beyond your plan",
					"Usage above included allowance",
					fmt.Sprintf("Over-limit charges, %s extra %s", num(used-allow), unit)), oc})
				total += oc
			} else if g.chance(40) {
				rows = append(rows, line{"Overage", 0})
			}
			rows, total = g.taxed(s, total, rows, taxPct)
			g.renderBill(s, bill{date: d, lines: rows, total: total, periodStart: d, periodE: periodEnd(d, "monthly"), extra: extra}, "monthly", df)
			totals = append(totals, total)
		}
		if sc == "metered_overage" && g.chance(50) {
			g.notice(s, g.asOf.Add(-48*time.Hour), g.pick("You're over your plan's limit", "Usage alert", "Heads up: you've used 100% of your plan"),
				fmt.Sprintf("You have used more than the %s %s included in your plan this month. Additional usage is billed at %s per %s.", num(allow), unit, s.money(rate), strings.TrimSuffix(unit, "s")))
		}
	case "teaser_expiration":
		lab.Period, lab.Trap = "monthly", "teaser_expiration"
		reg := g.price(1299, 5999)
		tease := reg * int64(20+g.r.IntN(30)) / 100
		k := 3 + g.r.IntN(4)
		n := k + g.r.IntN(4)
		if g.chance(40) {
			n = k - 1 // still in the teaser
		}
		ds := g.schedule("monthly", n)
		welcome := ds[0].Add(-time.Hour)
		g.notice(s, welcome, g.pick("Welcome to "+s.name+"!", "Your subscription is active", "You're in!"),
			g.pick(
				fmt.Sprintf("Your introductory price of %s/month applies for the first %d months, then %s/month.", s.money(tease), k, s.money(reg)),
				fmt.Sprintf("You're getting our promotional rate of %s per month for your first %d months. After the promotion, your plan renews at %s per month.", s.money(tease), k, s.money(reg)),
				fmt.Sprintf("Enjoy %s/mo for the first %d months; thereafter the regular price of %s/mo applies.", s.money(tease), k, s.money(reg))))
		endT := ds[0].AddDate(0, k, 0)
		g.notice(s, endT.AddDate(0, 0, -7), g.pick("Your promotional price is ending", "Heads up: your intro offer ends soon", "A change to your price"),
			fmt.Sprintf("Your introductory period ends on %s. From then on, your plan costs %s per month.", endT.Format(df), s.money(reg)))
		for i, d := range ds {
			p := tease
			if i >= k {
				p = reg
			}
			rows, total := g.taxed(s, p, []line{{s.plan + " plan", p}}, taxPct)
			g.renderBill(s, bill{date: d, lines: rows, total: total, periodStart: d, periodE: periodEnd(d, "monthly")}, "monthly", df)
			totals = append(totals, total)
		}
	case "renewal_jump", "price_drop":
		lab.Period = "monthly"
		p := g.price(799, 4999)
		p2 := p * int64(112+g.r.IntN(40)) / 100
		if sc == "price_drop" {
			p2 = p * int64(60+g.r.IntN(30)) / 100
		} else {
			lab.Trap = "renewal_jump"
		}
		n := 4 + g.r.IntN(6)
		ds := g.schedule("monthly", n)
		cut := n - 1 - g.r.IntN(3)
		if g.chance(30) {
			cut = n // announced, not yet in effect
		}
		eff := ds[len(ds)-1].AddDate(0, 1, 0)
		if cut < n {
			eff = ds[cut]
		}
		var txt string
		if sc == "price_drop" {
			txt = g.pick(
				fmt.Sprintf("Good news: we're lowering the price of your %s plan from %s to %s per month, starting %s.", s.plan, s.money(p), s.money(p2), eff.Format(df)),
				fmt.Sprintf("Starting %s, your monthly price goes down to %s (was %s).", eff.Format(df), s.money(p2), s.money(p)))
		} else {
			txt = g.pick(
				fmt.Sprintf("We're updating our prices. Starting %s, your %s plan will cost %s per month instead of %s.", eff.Format(df), s.plan, s.money(p2), s.money(p)),
				fmt.Sprintf("Your plan's price will change from %s to %s per month on %s.", s.money(p), s.money(p2), eff.Format(df)),
				fmt.Sprintf("Price increase: from %s your subscription goes up to %s/month (currently %s).", eff.Format(df), s.money(p2), s.money(p)))
		}
		g.notice(s, eff.AddDate(0, 0, -30), g.pick("An update to your plan's price", "Changes to your subscription price", "Important: pricing update"), txt)
		for i, d := range ds {
			pp := p
			if i >= cut {
				pp = p2
			}
			rows, total := g.taxed(s, pp, []line{{s.plan + " plan", pp}}, taxPct)
			g.renderBill(s, bill{date: d, lines: rows, total: total, periodStart: d, periodE: periodEnd(d, "monthly")}, "monthly", df)
			totals = append(totals, total)
		}
	case "renewal_jump_annual":
		lab.Period, lab.Trap = "annual", "renewal_jump"
		p := g.price(3900, 19900)
		p2 := p * int64(115+g.r.IntN(50)) / 100
		ds := g.schedule("annual", 2+g.r.IntN(2))
		for i, d := range ds {
			pp := p
			if i == len(ds)-1 {
				pp = p2
			}
			rows, total := g.taxed(s, pp, []line{{s.plan + " plan (annual)", pp}}, taxPct)
			g.renderBill(s, bill{date: d, lines: rows, total: total, periodStart: d, periodE: periodEnd(d, "annual")}, "annual", df)
			totals = append(totals, total)
		}
		if g.chance(50) {
			d := ds[len(ds)-1]
			g.notice(s, d.AddDate(0, 0, -15), "Your subscription renews soon",
				fmt.Sprintf("Your annual subscription renews on %s. Your card will be charged %s.", d.Format(df), s.money(p2)))
		}
	case "free_credit_exhaustion":
		lab.Period, lab.Trap = "monthly", "free_credit_exhaustion"
		grant := int64(g.pick2(10000, 20000, 30000, 50000))
		n := 4 + g.r.IntN(6)
		ds := g.schedule("monthly", n)
		exp := ds[0].AddDate(0, 3+g.r.IntN(9), 0)
		g.notice(s, ds[0].AddDate(0, -1, 0), g.pick("Welcome to "+s.name, "Your account is ready", "Your credits are here"),
			g.pick(
				fmt.Sprintf("We've added %s in free credits to your account. Credits expire on %s.", s.money(grant), exp.Format(df)),
				fmt.Sprintf("You have %s of promotional credit to use until %s.", s.money(grant), exp.Format(df)),
				fmt.Sprintf("Your %s starter credits have been applied to your account and are valid through %s.", s.money(grant), exp.Format(df))))
		left := grant
		outSent := false
		useLabel := g.pick("Usage charges", "Compute and storage", "Cloud usage")
		for _, d := range ds {
			use := g.price(2000, 12000)
			rows := []line{{useLabel, use}}
			cr := min(left, use)
			if d.After(exp) {
				cr = 0
			}
			if cr > 0 {
				rows = append(rows, line{g.pick("Credits applied", "Promotional credit applied", "Free credit used"), -cr})
				left -= cr
			}
			total := use - cr
			if cr < use && !outSent {
				outSent = true
				g.notice(s, d.AddDate(0, 0, -3), g.pick("Your free credits have run out", "Your credits are used up", "Credit balance: $0.00"),
					g.pick("Your free credits have run out. From now on, usage is charged to your card on file.", "You've used up all your promotional credits; future usage will be billed.", "Your credits have been exhausted and pay-as-you-go billing has started."))
			}
			g.renderBill(s, bill{date: d, lines: rows, total: total, periodStart: d, periodE: periodEnd(d, "monthly")}, "monthly", df)
			totals = append(totals, total)
		}
	case "seat_growth", "stable_seats":
		lab.Period = "monthly"
		if sc == "seat_growth" {
			lab.Trap = "seat_growth"
		}
		sp := g.price(600, 2500)
		seats := 2 + g.r.IntN(6)
		n := 4 + g.r.IntN(6)
		for i, d := range g.schedule("monthly", n) {
			if sc == "seat_growth" && i > 0 && (g.chance(75) || i == n-1) {
				seats += 1 + g.r.IntN(3)
			}
			label := g.pick(fmt.Sprintf("%d seats x %s", seats, s.money(sp)), fmt.Sprintf("%s plan – %d users @ %s/user", s.plan, seats, s.money(sp)), fmt.Sprintf("Seats (%d × %s per seat)", seats, s.money(sp)))
			rows, total := g.taxed(s, int64(seats)*sp, []line{{label, int64(seats) * sp}}, taxPct)
			g.renderBill(s, bill{date: d, lines: rows, total: total, periodStart: d, periodE: periodEnd(d, "monthly")}, "monthly", df)
			totals = append(totals, total)
		}
	case "auto_upgrade", "self_switch":
		lab.Period = "monthly"
		pa := g.price(500, 2000)
		pb := pa * int64(150+g.r.IntN(150)) / 100
		planB := g.pick("Business", "Pro", "Premium", "Team", "Scale")
		if planB == s.plan {
			planB = "Enterprise"
		}
		n := 4 + g.r.IntN(6)
		ds := g.schedule("monthly", n)
		cut := n - 1 - g.r.IntN(min(3, n-1))
		if sc == "auto_upgrade" {
			lab.Trap = "auto_upgrade"
			g.notice(s, ds[cut].AddDate(0, 0, -5), g.pick("Your plan has been upgraded", "We've moved you to "+planB, "Your account now has more room"),
				g.pick(
					fmt.Sprintf("Because you exceeded the limits of the %s plan, we've automatically upgraded your workspace to the %s plan at %s per month.", s.plan, planB, s.money(pb)),
					fmt.Sprintf("Your account was automatically moved to %s after you went over the %s plan's usage limits. Your new price is %s/month.", planB, s.plan, s.money(pb)),
					fmt.Sprintf("We've upgraded your account to the %s tier since you reached the %s plan's cap.", planB, s.plan)))
		} else {
			g.notice(s, ds[cut].AddDate(0, 0, -2), g.pick("You've upgraded!", "Plan change confirmed", "Welcome to "+planB),
				g.pick(
					fmt.Sprintf("Thanks for upgrading! You've switched to the %s plan. Your new price is %s per month.", planB, s.money(pb)),
					fmt.Sprintf("As you requested, your plan has been changed to %s (%s/month).", planB, s.money(pb)),
					fmt.Sprintf("You upgraded to %s. Your plan change is confirmed and your next bill will be %s.", planB, s.money(pb))))
		}
		for i, d := range ds {
			pp, pl := pa, s.plan
			if i >= cut {
				pp, pl = pb, planB
			}
			rows, total := g.taxed(s, pp, []line{{pl + " plan", pp}}, taxPct)
			g.renderBill(s, bill{date: d, lines: rows, total: total, periodStart: d, periodE: periodEnd(d, "monthly")}, "monthly", df)
			totals = append(totals, total)
		}
	case "surcharge":
		lab.Period, lab.Trap = "monthly", "surcharge"
		p := g.price(1999, 8999)
		fee := g.price(99, 499)
		feeName := g.pick("Regulatory recovery fee", "Service fee", "Payment processing surcharge", "Platform fee", "Administrative fee", "Convenience fee", "Network access fee")
		n := 4 + g.r.IntN(6)
		from := g.r.IntN(n)
		for i, d := range g.schedule("monthly", n) {
			rows := []line{{s.plan + " plan", p}}
			total := p
			if i >= from {
				rows = append(rows, line{feeName, fee})
				total += fee
			}
			rows, total = g.taxed(s, total, rows, taxPct)
			g.renderBill(s, bill{date: d, lines: rows, total: total, periodStart: d, periodE: periodEnd(d, "monthly")}, "monthly", df)
			totals = append(totals, total)
		}
	case "variable_bill":
		lab.Period, lab.Trap = "usage", "variable_bill"
		n := 5 + g.r.IntN(6)
		mean := float64(g.price(2000, 20000))
		unit := g.pick("kWh", "compute hours", "GB transferred", "API calls", "minutes")
		for i, d := range g.schedule("monthly", n) {
			// Usage swings: months above and below the mean by a quarter or more, in any order.
			f := 0.75 - 0.5*g.r.Float64()
			if i%2 == 1 || g.chance(30) {
				f = 1.25 + 0.6*g.r.Float64()
			}
			v := int64(mean * f)
			v = max(v, 100)
			rows := []line{{g.pick("Usage charges", "Pay-as-you-go usage", "Metered usage"), v}}
			extra := []string{fmt.Sprintf("This bill is based on your usage (%s). You pay as you go.", unit)}
			rows, total := g.taxed(s, v, rows, taxPct)
			g.renderBill(s, bill{date: d, lines: rows, total: total, periodStart: d, periodE: periodEnd(d, "monthly"), extra: extra}, "usage", df)
			totals = append(totals, total)
		}
	case "credit_note":
		lab.Period = "monthly"
		p := g.price(999, 4999)
		ds := flat("monthly", 4+g.r.IntN(6), p)
		cn := g.price(200, p)
		d := g.dateBetween(ds[0], ds[len(ds)-1])
		g.send(s, d, g.pick("Credit note CN-"+fmt.Sprint(1000+g.r.IntN(9000)), "A credit for the recent outage", "Your refund has been processed"),
			fmt.Sprintf("Hello,\n\nCredit note for the service interruption on %s.\nCredit amount: %s\nThis credit will be applied to your next invoice.\n", d.Format(df), s.money(-cn)), "notice", false, nil)
	case "upgrade_marketing":
		lab.Period = "monthly"
		p := g.price(499, 2999)
		ds := flat("monthly", 4+g.r.IntN(6), p)
		for k := 0; k < 1+g.r.IntN(3); k++ {
			pb := p * 2
			g.send(s, g.dateBetween(ds[0], g.asOf), g.pick("Unlock more with "+s.name+" Business", "Upgrade today and save 30%", "Ready for more?"),
				g.pick(
					fmt.Sprintf("Upgrade to Business for just %s/month. Limited-time offer: 30%% off your first year!", s.money(pb)),
					fmt.Sprintf("Get more storage, more seats and priority support. Upgrade now for %s per month.", s.money(pb)),
					fmt.Sprintf("Special offer: move to Premium for %s/mo. Don't miss out!", s.money(pb)))+"\n\nUnsubscribe from marketing emails.", "marketing", true, nil)
		}
	case "new_customer_price":
		// A price rise that does not apply to the user.
		lab.Period = "monthly"
		p := g.price(799, 2999)
		ds := flat("monthly", 4+g.r.IntN(6), p)
		g.notice(s, ds[len(ds)-1].AddDate(0, 0, -10), g.pick("Our prices are changing", "Pricing update for new members", "New plans, new prices"),
			g.pick(
				fmt.Sprintf("Starting next month, new subscribers will pay %s per month instead of %s. Existing members keep their current price.", s.money(p*13/10), s.money(p)),
				fmt.Sprintf("We're raising the price of the %s plan from %s to %s for new customers. This change does not affect your subscription.", s.plan, s.money(p), s.money(p*12/10))))
	case "refund":
		lab.Period = "monthly"
		p := g.price(999, 4999)
		ds := flat("monthly", 4+g.r.IntN(6), p)
		r := g.price(100, p)
		d := g.dateBetween(ds[0], ds[len(ds)-1])
		g.send(s, d, g.pick("Your refund has been processed", "Refund confirmation", "We've refunded you"),
			fmt.Sprintf("Hi Sam,\n\nWe've refunded %s to your card for the service interruption.\nRefund amount: %s\nIt can take 5-10 days to appear.\n", s.money(r), s.money(r)), "notice", false, nil)
	case "failed_payment":
		lab.Period = "monthly"
		p := g.price(999, 4999)
		ds := flat("monthly", 4+g.r.IntN(6), p)
		d := ds[len(ds)-1].AddDate(0, 0, -3)
		g.send(s, d, g.pick("Payment failed", "We couldn't process your payment", "Action required: update your card"),
			fmt.Sprintf("Hi Sam,\n\nWe were unable to charge your card for your %s plan. Your payment of %s failed; we will retry in three days. Please update your payment method.\n", s.plan, s.money(p*2)), "notice", false, nil)
	case "one_time":
		lab.Meter = false
		lab.Period = "one_time"
		for k := 0; k < 1+g.r.IntN(3); k++ {
			d := g.asOf.AddDate(0, 0, -g.r.IntN(300))
			amt := g.price(999, 19999)
			no := 100000 + g.r.IntN(900000)
			text := g.pick(
				fmt.Sprintf("Thanks for your order!\nOrder number: %d\n1 x %s\t%s\nShipping\t%s\nOrder total\t%s\nWe'll email you when your order has shipped.", no, g.pick("Desk lamp", "Headphones", "Backpack", "Coffee grinder"), s.money(amt), s.money(0), s.money(amt)),
				fmt.Sprintf("Receipt for your one-time purchase of the %s lifetime license.\nAmount paid: %s\nThis is a one-time payment; you will not be billed again.", s.name, s.money(amt)),
				fmt.Sprintf("Your order #%d is confirmed.\nItems ordered: 2\nTotal: %s\nEstimated delivery: 3-5 business days.", no, s.money(amt)))
			g.send(s, d, g.pick(fmt.Sprintf("Your %s order #%d", s.name, no), "Order confirmation", "Thanks for your purchase"), text, "order", false, nil)
		}
	case "trial_converted", "trial_cancelled", "trial_pending":
		g.trial(s, &lab, sc, df, &totals)
	}
	if n := len(totals); n > 0 && lab.Meter {
		lab.Current = max(totals[n-1], 0)
		if n > 1 {
			lab.Previous, lab.HasPrev = max(totals[n-2], 0), true
		}
	}
	// Some services also send newsletters and activity notices.
	if g.chance(30) && sc != "one_time" {
		g.send(s, g.asOf.AddDate(0, 0, -g.r.IntN(200)), g.pick("What's new at "+s.name, s.name+" product update", "Our "+g.pick("spring", "autumn", "year-end")+" release"),
			"Here is what we shipped this month: faster sync, a new dark mode and better search.\n\nRead more on our blog.\n\nUnsubscribe", "newsletter", true, nil)
	}
	g.c.Services = append(g.c.Services, lab)
}
