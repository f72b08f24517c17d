// Package synthetic generates a labelled synthetic creator: several platforms of every payment
// model, months of CSV statements in varied shapes, payout and settlement mail in varied
// phrasing, announced term changes, a sponsor paid by invoice, and planted anomalies of every
// kind, with the truth (which anomalies exist, and each item's exact expected, reported, settled
// and variance cents) to measure the creator package against. Announced changes and ordinary
// fluctuations are generated as negatives: they are in the data and not in the labels.
package synthetic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"math/rand/v2"
	"mime/quotedprintable"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// Label is a planted anomaly: its kind, the platform's key and the period label (an invoice
// number for sponsor_overdue).
type Label struct {
	Kind   string `json:"kind"`
	Stream string `json:"stream"`
	Period string `json:"period"`
	Note   string `json:"note,omitempty"`
}

// Cents are an item's true amounts; nil is unknown (no statement, no payout).
type Cents struct {
	Expected *int64 `json:"expected"`
	Reported *int64 `json:"reported"`
	Settled  *int64 `json:"settled"`
	Variance *int64 `json:"variance"`
}

// Truth is what was planted.
type Truth struct {
	Anomalies []Label `json:"anomalies"`
	// Negatives are announced changes and ordinary fluctuations that must not be anomalies.
	Negatives []Label `json:"negatives"`
	// Items are keyed "stream/period" or "sponsor/invoice:<number>".
	Items map[string]Cents `json:"items"`
}

// World is one synthetic creator.
type World struct {
	Seed  uint64
	AsOf  time.Time
	Self  string            // the creator's address
	Files map[string][]byte // statements, by path relative to the statements directory
	Mail  [][]byte          // RFC 5322 messages
	Truth Truth
}

// Write stores the world under dir: statements/, the mail twice (mail.mbox and the Maildir
// maildir/), and truth.json.
func (w *World) Write(dir string) error {
	for p, b := range w.Files {
		full := filepath.Join(dir, "statements", filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, b, 0o644); err != nil {
			return err
		}
	}
	var mbox bytes.Buffer
	for _, m := range w.Mail {
		mbox.WriteString("From synthetic@example.invalid Thu Jan  1 00:00:00 2026\n")
		for _, ln := range strings.SplitAfter(string(m), "\n") {
			if strings.HasPrefix(strings.TrimLeft(ln, ">"), "From ") {
				mbox.WriteString(">")
			}
			mbox.WriteString(ln)
		}
		if !bytes.HasSuffix(m, []byte("\n")) {
			mbox.WriteString("\n")
		}
		mbox.WriteString("\n")
	}
	if err := os.WriteFile(filepath.Join(dir, "mail.mbox"), mbox.Bytes(), 0o644); err != nil {
		return err
	}
	for _, sub := range []string{"cur", "new", "tmp"} {
		if err := os.MkdirAll(filepath.Join(dir, "maildir", sub), 0o755); err != nil {
			return err
		}
	}
	for i, m := range w.Mail {
		name := fmt.Sprintf("%d.%06d.synthetic:2,S", 1767225600+i, i)
		if err := os.WriteFile(filepath.Join(dir, "maildir", "cur", name), m, 0o644); err != nil {
			return err
		}
	}
	tb, err := json.MarshalIndent(w.Truth, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "truth.json"), tb, 0o644)
}

type model int

const (
	fee model = iota
	shop
	perUnit
	royalty
	affiliate
)

type platform struct {
	name, key, domain string
	model             model
	currency          string
	rate              int64 // fee/royalty bps, unit rate (hundredths of a cent per 1,000), commission cents
	wh                int64 // withholding bps of earnings
	payDay            int
	published         bool // in terms.csv
	base              int64
	scheduledMail     bool

	// plants by period index
	rateFrom     map[int]int64 // actual main rate from index on (unannounced)
	announced    map[int]int64 // announced main-rate change from index on
	oneOff       map[int]int64 // a one-period actual rate (rate_deviation, divergence)
	adjSpike     map[int]bool
	refundSpike  map[int]bool
	newDed       int // index a new deduction starts, -1 none
	newDedBPS    int64
	newDedName   string
	dedAnnounced bool
	missing      map[int]bool
	late         map[int]int // days late
	gap          map[int]bool
	fxJump       map[int]float64
	growFrom     int // revenue concentration: ×12 from this index, -1 none
	arrive       map[int]time.Time
}

type gen struct {
	r      *rand.Rand
	w      *World
	months []time.Time
	ps     []*platform
	msgN   int
	fxBase float64
}

var pools = map[model][]string{
	fee:       {"Fanclub", "Patronly", "Backerhub", "Supportly"},
	shop:      {"Shoply", "Merchbox", "Tradepost"},
	perUnit:   {"Streamly", "Tunecast", "Vidwave"},
	royalty:   {"Bookshelf", "Pagewise", "Inkroyal"},
	affiliate: {"Linkpay", "Refertrail", "Affilio"},
}

var sponsors = []struct{ name, domain string }{{"Acme Drinks", "acme.example"}, {"Globex Gear", "globex.example"}, {"Initech Apps", "initech.example"}}

// Months is how many months a world covers, January 2026 on; AsOf is 20 days after the last.
const Months = 12

// Generate makes the world of a seed.
func Generate(seed uint64) *World {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), fxBase: 1.08}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range Months {
		g.months = append(g.months, start.AddDate(0, i, 0))
	}
	g.w = &World{Seed: seed, AsOf: start.AddDate(0, Months, 19), Self: "me@creator.example", Files: map[string][]byte{},
		Truth: Truth{Items: map[string]Cents{}}}
	g.platforms()
	g.plant()
	g.emit()
	g.sponsor()
	g.noise()
	sort.Slice(g.w.Truth.Anomalies, func(i, j int) bool {
		a, b := g.w.Truth.Anomalies[i], g.w.Truth.Anomalies[j]
		return a.Kind+a.Stream+a.Period < b.Kind+b.Stream+b.Period
	})
	return g.w
}

func (g *gen) between(lo, hi int64) int64 { return lo + g.r.Int64N(hi-lo+1) }
func (g *gen) pick(n int) int             { return g.r.IntN(n) }
func (g *gen) chance(p float64) bool      { return g.r.Float64() < p }

func (g *gen) platforms() {
	for _, m := range []model{fee, shop, perUnit, royalty, affiliate} {
		name := pools[m][g.pick(len(pools[m]))]
		p := &platform{name: name, key: strings.ToLower(name), domain: strings.ToLower(name) + ".example", model: m, currency: "USD",
			payDay: int(g.between(5, 20)), published: g.chance(0.6), scheduledMail: g.chance(0.6), newDed: -1, growFrom: -1,
			rateFrom: map[int]int64{}, announced: map[int]int64{}, oneOff: map[int]int64{}, adjSpike: map[int]bool{}, refundSpike: map[int]bool{},
			missing: map[int]bool{}, late: map[int]int{}, gap: map[int]bool{}, fxJump: map[int]float64{}}
		switch m {
		case fee:
			p.rate, p.base = g.between(10, 24)*50, g.between(150000, 300000)
			if g.chance(0.5) {
				p.wh = 1000
			}
		case shop:
			p.rate, p.base = g.between(250, 350), g.between(200000, 350000)
		case perUnit:
			p.rate, p.base = g.between(30, 55)*1000, g.between(250000, 450000) // units
			if g.chance(0.6) {
				p.currency = "EUR"
			}
		case royalty:
			p.rate, p.base = []int64{7000, 3500, 6000}[g.pick(3)], g.between(200000, 400000)
		case affiliate:
			p.rate, p.base = g.between(8, 25)*100, g.between(80, 160) // conversions
			if g.chance(0.3) {
				p.wh = 500
			}
		}
		g.ps = append(g.ps, p)
	}
}

// plant chooses the anomalies and the announced changes, at most a few per platform, at
// period indexes 3..Months-2 so that three clean periods come first.
func (g *gen) plant() {
	idx := func() int { return 3 + g.pick(Months-4) }
	add := func(kind string, p *platform, i int) {
		g.w.Truth.Anomalies = append(g.w.Truth.Anomalies, Label{Kind: kind, Stream: p.key, Period: g.months[i].Format("2006-01")})
	}
	neg := func(kind string, p *platform, i int, note string) {
		g.w.Truth.Negatives = append(g.w.Truth.Negatives, Label{Kind: kind, Stream: p.key, Period: g.months[i].Format("2006-01"), Note: note})
	}
	used := map[*platform]map[int]bool{}
	free := func(p *platform) int {
		if used[p] == nil {
			used[p] = map[int]bool{}
		}
		for range 50 {
			if i := idx(); !used[p][i] {
				used[p][i] = true
				return i
			}
		}
		return -1
	}
	for _, p := range g.ps {
		// Each platform gets some of the plants its model allows, in a random order, each at
		// its own period.
		var plants []func()
		mainKind := map[model]string{fee: "fee_change", shop: "fee_change", royalty: "royalty_rate_change",
			perUnit: "rate_deviation", affiliate: "conversion_commission_divergence"}[p.model]
		switch p.model {
		case fee, shop, royalty:
			if g.chance(0.55) {
				plants = append(plants, func() {
					if i := free(p); i >= 0 {
						d := g.between(2, 6) * 50
						if p.model == royalty {
							d = -g.between(5, 15) * 100
						}
						p.rateFrom[i] = p.rate + d
						add(mainKind, p, i)
					}
				})
			} else if g.chance(0.7) {
				plants = append(plants, func() {
					if i := free(p); i >= 0 {
						d := g.between(1, 5) * 50
						if p.model == royalty {
							d = -g.between(5, 10) * 100
						}
						p.announced[i] = p.rate + d
						neg(mainKind, p, i, "announced")
					}
				})
			}
		case perUnit, affiliate:
			if g.chance(0.7) {
				plants = append(plants, func() {
					if i := free(p); i >= 0 {
						p.oneOff[i] = 100 - g.between(6, 18) // percent of the rate in force
						add(mainKind, p, i)
					}
				})
			}
			if g.chance(0.5) {
				plants = append(plants, func() {
					if i := free(p); i >= 0 {
						d := p.rate * g.between(5, 12) / 100
						if p.model == perUnit {
							d = d / 100 * 100
						}
						p.announced[i] = p.rate - d
						neg(mainKind, p, i, "announced")
					}
				})
			}
		}
		if (p.model == fee || p.model == royalty || p.model == perUnit) && g.chance(0.4) {
			plants = append(plants, func() {
				if i := free(p); i >= 0 {
					p.adjSpike[i] = true
					add("adjustment_spike", p, i)
				}
			})
		}
		if p.model == shop && g.chance(0.7) {
			plants = append(plants, func() {
				if i := free(p); i >= 0 {
					p.refundSpike[i] = true
					add("refund_spike", p, i)
				}
			})
		}
		if (p.model == fee || p.model == affiliate || p.model == perUnit) && g.chance(0.45) {
			plants = append(plants, func() {
				if i := free(p); i >= 0 {
					p.newDed, p.newDedBPS = i, g.between(2, 5)*100
					p.newDedName = []string{"Digital Services Tax", "Regulatory Levy", "Platform Maintenance Charge"}[g.pick(3)]
					if g.chance(0.35) {
						p.dedAnnounced = true
						neg("new_deduction", p, i, "announced")
					} else {
						add("new_deduction", p, i)
					}
				}
			})
		}
		if g.chance(0.3) {
			plants = append(plants, func() {
				// Not in the last paid months: a payout is missing when a later one came.
				if i := free(p); i >= 0 && i <= Months-3 {
					p.missing[i] = true
					add("missing_payout_period", p, i)
				}
			})
		}
		if g.chance(0.4) {
			plants = append(plants, func() {
				if i := free(p); i >= 0 {
					p.late[i] = int(g.between(9, 20))
					add("late_payout", p, i)
				}
			})
		}
		if g.chance(0.5) { // an ordinary delay within the grace
			plants = append(plants, func() {
				if i := free(p); i >= 0 {
					p.late[i] = int(g.between(2, 4))
					neg("late_payout", p, i, "within grace")
				}
			})
		}
		if (p.model == fee || p.model == perUnit || p.model == royalty) && g.chance(0.3) {
			plants = append(plants, func() {
				if i := free(p); i >= 0 {
					p.gap[i] = true
					add("statement_gap", p, i)
				}
			})
		}
		if p.currency == "EUR" && g.chance(0.75) {
			plants = append(plants, func() {
				if i := free(p); i >= 0 {
					j := float64(g.between(40, 70)) / 1000
					if g.chance(0.5) {
						j = -j
					}
					p.fxJump[i] = j
					add("currency_effect", p, i)
				}
			})
		}
		g.r.Shuffle(len(plants), func(i, j int) { plants[i], plants[j] = plants[j], plants[i] })
		for _, f := range plants {
			f()
		}
	}
	if g.chance(0.5) {
		p := g.ps[1] // the shop goes viral
		i := 3 + g.pick(Months-5)
		p.growFrom = i
		add("revenue_concentration", p, i)
		for j := range p.refundSpike { // a spike in a viral month would be judged against a different base
			if j >= i-1 {
				delete(p.refundSpike, j)
				g.dropLabel("refund_spike", p.key)
			}
		}
	}
}

func (g *gen) dropLabel(kind, stream string) {
	out := g.w.Truth.Anomalies[:0]
	for _, l := range g.w.Truth.Anomalies {
		if !(l.Kind == kind && l.Stream == stream) {
			out = append(out, l)
		}
	}
	g.w.Truth.Anomalies = out
}

func bps(c, b int64) int64 { return divRound(c*b, 10000) }

func divRound(a, b int64) int64 {
	if a >= 0 {
		return (a + b/2) / b
	}
	return -((-a + b/2) / b)
}

// row is one period of one platform, as the platform reports it and as the truth has it.
type row struct {
	i                                     int
	units, conversions                    int64
	gross, fees, refunds, adj, earned, wh int64
	ded                                   int64 // the new deduction
	net                                   int64
	expected                              int64
	fx, appliedFX                         float64
}

func (g *gen) emit() {
	for _, p := range g.ps {
		var rows []row
		for i := range g.months {
			rows = append(rows, g.period(p, i))
		}
		g.statements(p, rows)
		g.payoutMail(p, rows)
		g.announcements(p)
	}
	g.termsFile()
}

// termsIn is the main rate in force at i by the published terms and announcements.
func (p *platform) termsIn(i int) int64 {
	r := p.rate
	for j := 0; j <= i; j++ {
		if v, ok := p.announced[j]; ok {
			r = v
		}
	}
	return r
}

// actualIn is the rate the platform actually applies at i.
func (p *platform) actualIn(i int) int64 {
	r := p.termsIn(i)
	for j := 0; j <= i; j++ {
		if v, ok := p.rateFrom[j]; ok {
			r = v
		}
	}
	if f, ok := p.oneOff[i]; ok {
		r = r * f / 100
	}
	return r
}

func (g *gen) period(p *platform, i int) row {
	rw := row{i: i}
	scale := int64(1)
	if p.growFrom >= 0 && i >= p.growFrom {
		scale = 12
	}
	vary := func(b int64) int64 { return b * scale * (85 + g.between(0, 30)) / 100 }
	actual, terms := p.actualIn(i), p.termsIn(i)
	var expEarned int64
	switch p.model {
	case fee, shop:
		rw.gross = vary(p.base)
		rw.fees = bps(rw.gross, actual)
		rw.earned = rw.gross - rw.fees
		expEarned = rw.gross - bps(rw.gross, terms)
	case royalty:
		rw.units = vary(p.base) / 1299
		rw.gross = rw.units * 1299
		rw.earned = bps(rw.gross, actual)
		rw.fees = rw.gross - rw.earned
		expEarned = bps(rw.gross, terms)
	case perUnit:
		rw.units = vary(p.base)
		rw.earned = divRound(rw.units*actual, 100000)
		rw.gross = rw.earned
		expEarned = divRound(rw.units*terms, 100000)
	case affiliate:
		rw.conversions = vary(p.base)
		rw.earned = rw.conversions * actual
		rw.gross = rw.earned
		expEarned = rw.conversions * terms
	}
	if p.model == shop {
		rw.refunds = bps(rw.gross, g.between(100, 300))
		if g.chance(0.1) { // an ordinary bad month: more refunds, not a spike
			rw.refunds = bps(rw.gross, g.between(300, 390))
		}
		if p.refundSpike[i] {
			rw.refunds = bps(rw.gross, g.between(900, 1500))
		}
	}
	if g.chance(0.5) && p.model != shop {
		rw.adj = -bps(rw.gross, g.between(0, 40))
		if g.chance(0.1) { // an ordinary larger correction, not a spike
			rw.adj = -bps(rw.gross, g.between(60, 120))
		}
	}
	if p.adjSpike[i] {
		rw.adj = -bps(rw.gross, g.between(500, 1000))
	}
	rw.adj -= rw.refunds
	rw.wh = bps(rw.earned, p.wh)
	expDed := bps(expEarned, p.wh)
	if p.newDed >= 0 && i >= p.newDed {
		rw.ded = bps(rw.earned, p.newDedBPS)
		if p.dedAnnounced {
			expDed += bps(expEarned, p.newDedBPS)
		}
	}
	rw.net = rw.earned + rw.adj - rw.wh - rw.ded
	rw.expected = expEarned + rw.adj - expDed
	if p.currency == "EUR" {
		rw.fx = g.fxBase * (1 + float64(g.between(-7, 7))/1000)
		rw.appliedFX = rw.fx * (1 + float64(g.between(-3, 3))/1000)
		if j, ok := p.fxJump[i]; ok {
			rw.appliedFX = rw.fx * (1 + j)
		}
	}
	label := g.months[i].Format("2006-01")
	c := Cents{}
	if !p.gap[i] {
		c.Expected, c.Reported = ptr(rw.expected), ptr(rw.net)
	}
	if !p.missing[i] && g.arrival(p, i).Before(g.w.AsOf) {
		c.Settled = ptr(rw.net)
	}
	if c.Expected != nil && c.Settled != nil {
		c.Variance = ptr(*c.Settled - *c.Expected)
	}
	g.w.Truth.Items[p.key+"/"+label] = c
	return rw
}

func ptr[T any](v T) *T { return &v }

// arrival is when the payout of period i arrives: on its due day, a day later for some, or
// late as planted. It is drawn once per period.
func (g *gen) arrival(p *platform, i int) time.Time {
	if p.arrive == nil {
		p.arrive = map[int]time.Time{}
	}
	if t, ok := p.arrive[i]; ok {
		return t
	}
	due := g.months[i].AddDate(0, 1, p.payDay-1)
	late := p.late[i]
	if late == 0 {
		late = int(g.between(0, 1))
	}
	p.arrive[i] = due.AddDate(0, 0, late)
	return p.arrive[i]
}

// ---- statements ----

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
