package intelcorpus

import (
	"fmt"
	"strings"
	"time"
)

func (g *gen) pick2(xs ...int) int { return xs[g.r.IntN(len(xs))] }

func num(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// trial writes a trial: its start, reminders, use, and its outcome.
func (g *gen) trial(s *svc, lab *ServiceLabel, sc, df string, totals *[]int64) {
	days := g.pick2(7, 14, 14, 30, 30, 21)
	price := g.price(499, 2999)
	period := g.pick("monthly", "monthly", "annual", "weekly")
	if period == "annual" {
		price *= 10
	}
	var start time.Time
	switch sc {
	case "trial_pending":
		start = g.asOf.Add(-time.Duration(1+g.r.IntN(days-1)) * 24 * time.Hour)
	default:
		start = g.asOf.AddDate(0, -1-g.r.IntN(8), 0)
	}
	end := start.AddDate(0, 0, days)
	w := periodWordsOut[period][g.r.IntN(len(periodWordsOut[period]))]
	g.notice(s, start, g.pick("Welcome to your free trial", "Your "+s.name+" trial has started", "Thanks for trying "+s.name),
		g.pick(
			fmt.Sprintf("Your %d-day free trial has started. After your trial, you'll be charged %s %s unless you cancel.", days, s.money(price), w),
			fmt.Sprintf("Good news: your free trial is now active and runs through %s. Once your trial ends, we'll bill %s %s.", end.Format(df), s.money(price), w),
			fmt.Sprintf("You've started a %d-day trial of %s. At the end of your trial you will be billed %s %s unless you cancel before %s.", days, s.plan, s.money(price), w, end.Format(df)),
			fmt.Sprintf("Welcome to your free trial! It runs until %s. When your trial ends, your plan renews at %s %s.", end.Format(df), s.money(price), w),
			fmt.Sprintf("Thanks for starting a %d-day trial of %s %s. Your trial ends on %s; then it's %s %s.", days, s.name, s.plan, end.Format(df), s.money(price), w)))
	if g.chance(60) && end.AddDate(0, 0, -3).Before(g.asOf) {
		g.notice(s, end.AddDate(0, 0, -3), g.pick("Your trial ends in 3 days", "Your free trial is ending soon", "Reminder: trial ending"),
			fmt.Sprintf("Your free trial ends on %s. After your trial you will be billed %s %s.", end.Format(df), s.money(price), w))
	}
	used := g.r.IntN(5)
	for k := 0; k < used; k++ {
		d := g.dateBetween(start, minTime(end, g.asOf))
		g.send(s, d, g.pick("Your weekly summary", "Your export is ready", "New activity in your workspace", "Backup complete"),
			g.pick("You created 3 new projects this week.", "Your export is ready to download.", "New comment on your board from Alex.", "Your backup completed successfully."), "activity", false, nil)
	}
	tl := TrialLabel{Key: lab.Key, PriceAfter: price, EndsAt: end}
	switch sc {
	case "trial_converted":
		tl.Outcome = "converted"
		lab.Period = period
		n := 0
		for d := end; d.Before(g.asOf); n++ {
			rows, total := g.taxed(s, price, []line{{s.plan + " plan", price}}, 0)
			g.renderBill(s, bill{date: d, lines: rows, total: total, periodStart: d, periodE: periodEnd(d, period)}, period, df)
			*totals = append(*totals, total)
			switch period {
			case "weekly":
				d = d.AddDate(0, 0, 7)
			case "annual":
				d = d.AddDate(1, 0, 0)
			default:
				d = d.AddDate(0, 1, 0)
			}
		}
		if n == 0 {
			lab.Meter = false
		}
	case "trial_cancelled":
		tl.Outcome = "cancelled"
		lab.Meter = false
		g.notice(s, g.dateBetween(start, end), g.pick("Your subscription has been cancelled", "Sorry to see you go", "Cancellation confirmed"),
			g.pick("Your subscription has been cancelled. You won't be charged.", "We've cancelled your trial as requested. You will not be billed.", "Your cancellation is complete; your trial has ended."))
	default:
		tl.Outcome = "pending"
		lab.Meter = false
	}
	g.c.Trials = append(g.c.Trials, tl)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
