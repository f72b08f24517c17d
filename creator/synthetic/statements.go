package synthetic

import (
	"fmt"
	"strings"
	"time"
)

type moneyFmt int

const (
	plain    moneyFmt = iota // 1234.56, -12.00
	dollars                  // $1,234.56, ($12.00)
	european                 // 1.234,56
	symbolEU                 // €1.234,56
)

func (f moneyFmt) format(c int64, neg bool) string {
	if neg && c > 0 {
		c = -c
	}
	sign := c < 0
	if sign {
		c = -c
	}
	whole, frac := c/100, c%100
	ws := fmt.Sprintf("%d", whole)
	group := func(sep string) string {
		s := ws
		for i := len(s) - 3; i > 0; i -= 3 {
			s = s[:i] + sep + s[i:]
		}
		return s
	}
	switch f {
	case dollars:
		s := fmt.Sprintf("$%s.%02d", group(","), frac)
		if sign {
			return "(" + s + ")"
		}
		return s
	case european:
		s := fmt.Sprintf("%s,%02d", group("."), frac)
		if sign {
			return "-" + s
		}
		return s
	case symbolEU:
		s := fmt.Sprintf("€%s,%02d", group("."), frac)
		if sign {
			return "-" + s
		}
		return s
	}
	s := fmt.Sprintf("%d.%02d", whole, frac)
	if sign {
		return "-" + s
	}
	return s
}

type shape struct {
	sep    string
	period func(t time.Time) []string
	pHead  []string
	money  moneyFmt
}

func (g *gen) shapeFor(p *platform) shape {
	shapes := []shape{
		{",", func(t time.Time) []string { return []string{t.Format("2006-01")} }, []string{"Period"}, plain},
		{",", func(t time.Time) []string { return []string{t.Format("January 2006")} }, []string{"Statement Month"}, dollars},
		{"\t", func(t time.Time) []string {
			return []string{t.Format("2006-01-02"), t.AddDate(0, 1, -1).Format("2006-01-02")}
		}, []string{"Start Date", "End Date"}, plain},
		{",", func(t time.Time) []string {
			return []string{t.Format("01/02/2006"), t.AddDate(0, 1, -1).Format("01/02/2006")}
		}, []string{"Period Start", "Period End"}, dollars},
		{";", func(t time.Time) []string { return []string{t.Format("01/2006")} }, []string{"Month"}, european},
		{",", func(t time.Time) []string { return []string{t.Format("Jan 2006")} }, []string{"Reporting Period"}, plain},
	}
	s := shapes[g.pick(len(shapes))]
	if p.currency == "EUR" && s.money == dollars {
		s.money = plain
	}
	if p.currency == "EUR" && g.chance(0.5) && s.sep == ";" {
		s.money = symbolEU
	}
	if s.money == european || s.money == symbolEU {
		s.sep = ";"
	}
	return s
}

func (g *gen) statements(p *platform, rows []row) {
	sh := g.shapeFor(p)
	var head []string
	head = append(head, sh.pHead...)
	aliases := func(opts ...string) string { return opts[g.pick(len(opts))] }
	type col struct {
		name string
		val  func(r row) string
	}
	m := func(c int64) string { return sh.money.format(c, false) }
	neg := func(c int64) string { return sh.money.format(c, true) }
	var cols []col
	withCur := p.currency == "EUR" && sh.money != symbolEU
	fxCol := p.currency == "EUR" && g.chance(0.5)
	switch p.model {
	case fee, shop:
		cols = append(cols, col{aliases("Gross", "Gross Sales", "Gross Revenue", "Revenue"), func(r row) string { return m(r.gross) }})
		cols = append(cols, col{aliases("Fees", "Platform Fee", "Service Fees", "Processing Fees"), func(r row) string { return neg(r.fees) }})
		if p.model == shop {
			cols = append(cols, col{aliases("Refunds", "Returns", "Refunds and Chargebacks"), func(r row) string { return neg(r.refunds) }})
			cols = append(cols, col{aliases("Adjustments", "Other Adjustments"), func(r row) string { return m(r.adj + r.refunds) }})
		} else {
			cols = append(cols, col{aliases("Adjustments", "Other Adjustments", "Corrections"), func(r row) string { return m(r.adj) }})
		}
	case royalty:
		cols = append(cols, col{aliases("Units", "Units Sold"), func(r row) string { return fmt.Sprint(r.units) }})
		cols = append(cols, col{aliases("List Sales", "Gross Sales", "Sales"), func(r row) string { return m(r.gross) }})
		cols = append(cols, col{aliases("Royalty", "Royalties", "Royalty Earned"), func(r row) string { return m(r.earned) }})
		cols = append(cols, col{aliases("Adjustments", "Corrections"), func(r row) string { return m(r.adj) }})
	case perUnit:
		cols = append(cols, col{aliases("Streams", "Plays", "Views"), func(r row) string { return fmt.Sprint(r.units) }})
		cols = append(cols, col{aliases("Earnings", "Revenue Share", "Creator Earnings"), func(r row) string { return m(r.earned) }})
		cols = append(cols, col{aliases("Adjustments", "Corrections"), func(r row) string { return m(r.adj) }})
	case affiliate:
		cols = append(cols, col{aliases("Conversions", "Referrals"), func(r row) string { return fmt.Sprint(r.conversions) }})
		cols = append(cols, col{aliases("Commission", "Commissions Earned"), func(r row) string { return m(r.earned) }})
		cols = append(cols, col{aliases("Adjustments", "Corrections"), func(r row) string { return m(r.adj) }})
	}
	if p.wh > 0 || g.chance(0.5) {
		cols = append(cols, col{aliases("Withholding", "Tax Withheld", "Withholding Tax"), func(r row) string { return neg(r.wh) }})
	}
	if p.newDed >= 0 {
		cols = append(cols, col{p.newDedName, func(r row) string { return neg(r.ded) }})
	}
	if withCur {
		cols = append(cols, col{"Currency", func(row) string { return "EUR" }})
	}
	if fxCol {
		cols = append(cols, col{aliases("FX Rate", "Exchange Rate"), func(r row) string { return fmt.Sprintf("%.4f", r.fx) }})
	}
	cols = append(cols, col{aliases("Net", "Net Payout", "Net Earnings", "Amount Payable"), func(r row) string { return m(r.net) }})
	for _, c := range cols {
		head = append(head, c.name)
	}
	line := func(fields []string) string {
		for i, f := range fields {
			if strings.Contains(f, sh.sep) || strings.Contains(f, "\"") {
				fields[i] = `"` + strings.ReplaceAll(f, `"`, `""`) + `"`
			}
		}
		return strings.Join(fields, sh.sep) + "\n"
	}
	record := func(r row) string {
		f := sh.period(g.months[r.i])
		for _, c := range cols {
			v := c.val(r)
			if c.name == p.newDedName && r.ded == 0 {
				v = ""
			}
			f = append(f, v)
		}
		return line(f)
	}
	perMonth := g.chance(0.4)
	if !perMonth && g.chance(0.3) {
		// A distributor's file: the platform is named by a column, not by the file name.
		head = append([]string{"Platform"}, head...)
		inner := record
		record = func(r row) string { return p.name + sh.sep + inner(r) }
		var b strings.Builder
		b.WriteString(line(append([]string(nil), head...)))
		for _, r := range rows {
			if !p.gap[r.i] {
				b.WriteString(record(r))
			}
		}
		g.w.Files[fmt.Sprintf("distributor/statement-%d.csv", p.model)] = []byte(b.String())
		return
	}
	preamble := ""
	if !perMonth && g.chance(0.4) {
		preamble = p.name + " creator earnings statement\n\n"
	}
	if perMonth {
		for _, r := range rows {
			if p.gap[r.i] {
				continue
			}
			name := fmt.Sprintf("%s/%s.csv", p.key, g.months[r.i].Format("2006-01"))
			g.w.Files[name] = []byte(line(append([]string(nil), head...)) + record(r))
		}
		return
	}
	var b strings.Builder
	b.WriteString(preamble)
	b.WriteString(line(append([]string(nil), head...)))
	for _, r := range rows {
		if !p.gap[r.i] {
			b.WriteString(record(r))
		}
	}
	name := fmt.Sprintf("%s-2026.csv", p.key)
	if g.chance(0.3) {
		name = fmt.Sprintf("%s_statement_2026.csv", p.key)
	}
	g.w.Files[name] = []byte(b.String())
}

// ---- terms ----
