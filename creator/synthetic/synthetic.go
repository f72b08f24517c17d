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
	"math/rand/v2"
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
