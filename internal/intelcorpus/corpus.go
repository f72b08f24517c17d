// Package intelcorpus generates a labelled synthetic mailbox for measuring svc's billing
// intelligence: many services billing in many ways (every trap type, and look-alikes that are
// not traps), trials and what became of them, and heavy noise (newsletters and promotions
// quoting prices, spam offering free trials, mailing-list threads about what people pay, order
// confirmations, bank and card mail, friends splitting costs), written in varied phrasing,
// every common money rendering and many MIME shapes. It is deterministic for a seed.
//
// The labels say what a careful person reading the mail would conclude: which services bill
// the user on a recurring basis, at what period, what their last two bills were, the trap in
// each, and each trial's outcome. The generator is written from how such mail reads, not from
// the intel package's rules; its phrase pools are deliberately wider than any one rule.
package intelcorpus

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"svc.dev/svc/internal/corpus"
)

// Message is one generated message.
type Message struct {
	Raw     []byte
	Date    time.Time
	Kind    string // what generated it
	Service string // the service key it belongs to ("" for noise)
}

// ServiceLabel is the truth about one service of the corpus.
type ServiceLabel struct {
	Key      string // the registrable domain, or "name:<lower name>" for processor-sent mail
	Name     string
	Domain   string
	Scenario string
	// Meter is set when the service bills the user on a recurring basis (a meter is expected).
	Meter    bool
	Trap     string // a trap type, or "unknown"
	Period   string // billing period
	Current  int64  // the last bill's total, cents
	Previous int64  // the one before, cents
	HasPrev  bool
}

// TrialLabel is the truth about one trial.
type TrialLabel struct {
	Key        string
	Outcome    string // converted, cancelled, pending
	PriceAfter int64
	EndsAt     time.Time
}

// Corpus is a generated mailbox and its labels.
type Corpus struct {
	AsOf     time.Time
	Messages []Message
	Services []ServiceLabel
	Trials   []TrialLabel
}

// Scenarios the generator writes, one per service in turn.
var Scenarios = []string{
	"metered_overage", "teaser_expiration", "renewal_jump", "renewal_jump_annual", "free_credit_exhaustion",
	"seat_growth", "auto_upgrade", "surcharge", "variable_bill",
	"flat_monthly", "flat_annual", "flat_weekly", "flat_quarterly",
	"price_drop", "credit_note", "upgrade_marketing", "self_switch", "within_allowance", "stable_seats",
	"one_time", "trial_converted", "trial_cancelled", "trial_pending",
	"new_customer_price", "refund", "failed_payment",
}

// Generate writes a corpus: services services (scenarios in turn) and noise messages of
// noise, dated before asOf.
func Generate(seed uint64, services, noise int, asOf time.Time) *Corpus {
	g := &gen{r: rand.New(rand.NewPCG(seed, seed^0x5eed)), asOf: asOf, c: &Corpus{AsOf: asOf}, usedNames: map[string]bool{}}
	for i := 0; i < services; i++ {
		g.service(Scenarios[i%len(Scenarios)])
	}
	g.noise(noise)
	// Shuffle: a mailbox is not sorted by service.
	g.r.Shuffle(len(g.c.Messages), func(i, j int) { g.c.Messages[i], g.c.Messages[j] = g.c.Messages[j], g.c.Messages[i] })
	return g.c
}

type gen struct {
	r         *rand.Rand
	asOf      time.Time
	c         *Corpus
	seq       int
	usedNames map[string]bool
}

func (g *gen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }
func (g *gen) chance(pct int) bool      { return g.r.IntN(100) < pct }

// svc is one service being written: its identity and its house style.
type svc struct {
	name, domain, key string
	senders           []string // local parts @ subdomains
	displays          []string
	processor         bool
	replyTo           string
	money             func(int64) string
	layout            int // how bills are laid out
	shape             int // MIME shape
	plan              string
	crlf              bool
	oneClick          bool
	label             *ServiceLabel
}

var (
	syl1  = []string{"Nim", "Kova", "Brim", "Luma", "Pax", "Quill", "Zen", "Orbi", "Tally", "Vex", "Hub", "Drift", "Cinder", "Mosa", "Ferro", "Astra", "Sable", "Pico", "Rook", "Umbra", "Wisp", "Jolt", "Yarrow", "Echo", "Fable", "Glint", "Haven", "Ion", "Juno", "Kite"}
	syl2  = []string{"ly", "io", "base", "stack", "cast", "sync", "box", "flow", "desk", "cloud", "works", "ify", "lab", "hq", "grid", "loop", "mint", "vault", "wave", "pilot"}
	tlds  = []string{"com", "io", "app", "co", "net", "co.uk", "com.au", "de", "dev", "tv"}
	plans = []string{"Starter", "Basic", "Plus", "Pro", "Premium", "Team", "Standard", "Essentials", "Growth", "Creator"}
)

func (g *gen) newService(scenario string) *svc {
	var name string
	for {
		name = g.pick(syl1...) + g.pick(syl2...)
		if g.chance(25) {
			name += " " + g.pick("Cloud", "Music", "Mail", "Drive", "TV", "Fit", "Pay", "AI", "Docs", "Hosting")
		}
		if !g.usedNames[name] {
			break
		}
	}
	g.usedNames[name] = true
	base := strings.ToLower(strings.ReplaceAll(name, " ", ""))
	if g.chance(30) {
		base = strings.ToLower(strings.ReplaceAll(name, " ", "-"))
	}
	domain := base + "." + g.pick(tlds...)
	s := &svc{name: name, domain: domain, key: domain, plan: g.pick(plans...), crlf: g.chance(30), oneClick: g.chance(50)}
	subs := []string{"", "mail.", "billing.", "email.", "notify.", "accounts."}
	locals := []string{"billing", "receipts", "no-reply", "noreply", "hello", "invoices", "team", "support", "payments", "account"}
	for i := 0; i < 3; i++ {
		s.senders = append(s.senders, g.pick(locals...)+"@"+g.pick(subs...)+domain)
	}
	s.displays = []string{name, name + " Billing", "The " + name + " Team", name + " Receipts", name}
	if g.chance(10) && scenario != "one_time" {
		s.processor = true
		s.domain = domain
		s.replyTo = "support@" + domain
		s.senders = []string{"receipts+acct_" + fmt.Sprint(g.r.IntN(1e6)) + "@stripe.com"}
		s.displays = []string{name}
	}
	s.money = g.moneyStyle()
	s.layout = g.r.IntN(5)
	s.shape = g.r.IntN(7)
	return s
}

// moneyStyle picks one of the ways mail writes dollars.
func (g *gen) moneyStyle() func(int64) string {
	group := func(c int64, th, dec string) string {
		w := fmt.Sprint(c / 100)
		var b strings.Builder
		for i, r := range w {
			if i > 0 && (len(w)-i)%3 == 0 {
				b.WriteString(th)
			}
			b.WriteRune(r)
		}
		return fmt.Sprintf("%s%s%02d", b.String(), dec, c%100)
	}
	neg := func(f func(int64) string) func(int64) string {
		return func(c int64) string {
			if c < 0 {
				return "-" + f(-c)
			}
			return f(c)
		}
	}
	whole := func(f func(int64) string) func(int64) string {
		// Whole sums written without cents ("$15"), as notices and some receipts do.
		return func(c int64) string {
			if c%100 == 0 && c != 0 {
				s := f(c)
				for _, z := range []string{".00", ",00"} {
					if i := strings.LastIndex(s, z); i >= 0 {
						return s[:i] + s[i+len(z):]
					}
				}
				return s
			}
			return f(c)
		}
	}
	styles := []func(int64) string{
		func(c int64) string { return "$" + group(c, ",", ".") },
		func(c int64) string { return "USD " + group(c, ",", ".") },
		func(c int64) string { return group(c, ",", ".") + " USD" },
		func(c int64) string { return "US$" + group(c, ",", ".") },
		func(c int64) string { return group(c, ".", ",") + " US$" },
		func(c int64) string { return "$" + group(c, "", ".") },
		func(c int64) string { return "$ " + group(c, ",", ".") },
		func(c int64) string { return "USD" + group(c, ",", ".") },
		func(c int64) string { return group(c, " ", ",") + " USD" },
		func(c int64) string { return "€" + group(c, ".", ",") },
		func(c int64) string { return group(c, ".", ",") + " €" },
		func(c int64) string { return "EUR " + group(c, ",", ".") },
		func(c int64) string { return "£" + group(c, ",", ".") },
		func(c int64) string { return "CA$" + group(c, ",", ".") },
		func(c int64) string { return group(c, ",", ".") + " dollars" },
	}
	f := styles[g.r.IntN(len(styles))]
	if g.chance(15) {
		f = whole(f)
	}
	return neg(f)
}

func (g *gen) msgID(domain string) string {
	g.seq++
	return fmt.Sprintf("<%d.%x.%d@%s>", g.seq, g.r.Uint32(), g.r.IntN(1e6), g.pick("mta1."+domain, "mail."+domain, domain, "smtp."+domain))
}

// line is a bill line.
type line struct {
	label string
	cents int64
}

// bill is one invoice or receipt to render.
type bill struct {
	date                 time.Time
	lines                []line
	total                int64
	periodStart, periodE time.Time
	extra                []string // sentences before the lines
	after                []string // sentences after
	invoiceNo            string
}

// send writes a message from the service.
func (g *gen) send(s *svc, date time.Time, subject, text string, kind string, bulk bool, pdf []string) {
	from := s.senders[g.r.IntN(len(s.senders))]
	h := []field{
		{"Return-Path", "<bounce-" + fmt.Sprint(g.r.IntN(1e6)) + "@" + fromDomain(from) + ">"},
		{"From", encodeWord(s.displays[g.r.IntN(len(s.displays))]) + " <" + from + ">"},
		{"To", "Sam Rivera <" + corpus.Owner + ">"},
		{"Subject", encodeWord(subject)},
		{"Date", rfc1123(date)},
		{"Message-ID", g.msgID(fromDomain(from))},
	}
	if s.replyTo != "" {
		h = append(h, field{"Reply-To", s.replyTo})
	}
	if bulk || g.chance(40) {
		h = append(h, field{"List-Unsubscribe", "<https://" + s.domain + "/u/" + fmt.Sprintf("%x", g.r.Uint32()) + ">, <mailto:unsub@" + s.domain + ">"})
		if s.oneClick {
			h = append(h, field{"List-Unsubscribe-Post", "List-Unsubscribe=One-Click"})
		}
	}
	body := g.shape(s.shape, subject, text, pdf)
	g.c.Messages = append(g.c.Messages, Message{Raw: render(h, body, s.crlf), Date: date, Kind: kind, Service: s.key})
	if g.chance(3) {
		// The same message twice (a copy kept in two folders): one Message-ID, one piece of evidence.
		g.c.Messages = append(g.c.Messages, g.c.Messages[len(g.c.Messages)-1])
	}
	// A few bills are also forwarded by the user to themselves (an accountant, a work address):
	// the same bill again, forwarded. The forward is a duplicate of evidence, not a new bill.
	if kind == "bill" && g.chance(4) {
		g.forward(s, date, h, body)
	}
}

func fromDomain(addr string) string { return addr[strings.LastIndexByte(addr, '@')+1:] }

// shape renders text in one of the MIME shapes mail has.
func (g *gen) shape(shape int, subject, text string, pdf []string) part {
	bd := fmt.Sprintf("=_b%x", g.r.Uint64())
	html := "<html><head><style>td{padding:4px}</style></head><body><h2>" + htmlEscape(subject) + "</h2>" + htmlOf(text) + "<p style=\"color:#999\">You are receiving this because you have an account.</p></body></html>"
	var body part
	switch shape {
	case 0:
		body = textPart("plain", text, "utf-8", "quoted-printable")
	case 1:
		body = textPart("plain", text, "utf-8", "base64")
	case 2:
		body = multipart("alternative", bd, textPart("plain", text, "utf-8", "quoted-printable"), textPart("html", html, "utf-8", "quoted-printable"))
	case 3:
		body = textPart("html", html, "utf-8", g.pick("quoted-printable", "base64"))
	case 4:
		body = textPart("plain", text, "windows-1252", "quoted-printable")
	case 5:
		body = multipart("alternative", bd, textPart("plain", text, "iso-8859-15", "quoted-printable"), textPart("html", html, "utf-8", "base64"))
	default:
		body = textPart("plain", text, "utf-8", "8bit")
	}
	if pdf != nil {
		body = multipart("mixed", bd+"m", body, attachment("application/pdf", "invoice.pdf", pdfBytes(pdf)))
	}
	return body
}

// htmlOf lays text out as HTML: "Label: amount" lines become table rows, the rest paragraphs.
func htmlOf(text string) string {
	var b strings.Builder
	inTable := false
	for _, l := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(l, "\t"); ok {
			if !inTable {
				b.WriteString("<table>")
				inTable = true
			}
			b.WriteString("<tr><td>" + htmlEscape(k) + "</td><td align=right>" + htmlEscape(v) + "</td></tr>")
			continue
		}
		if inTable {
			b.WriteString("</table>")
			inTable = false
		}
		if strings.TrimSpace(l) != "" {
			b.WriteString("<p>" + htmlEscape(l) + "</p>")
		}
	}
	if inTable {
		b.WriteString("</table>")
	}
	return b.String()
}

// forward writes the user forwarding a message to themselves, as an attachment or inline.
func (g *gen) forward(s *svc, date time.Time, orig []field, body part) {
	fdate := date.Add(time.Duration(1+g.r.IntN(48)) * time.Hour)
	get := func(k string) string {
		for _, f := range orig {
			if f.k == k {
				return f.v
			}
		}
		return ""
	}
	h := []field{
		{"From", "Sam Rivera <sam.rivera@work-place.example>"},
		{"To", corpus.Owner},
		{"Subject", "Fwd: " + get("Subject")},
		{"Date", rfc1123(fdate)},
		{"Message-ID", g.msgID("work-place.example")},
	}
	var inner strings.Builder
	for _, f := range orig {
		inner.WriteString(f.k + ": " + f.v + "\n")
	}
	var ib bytes.Buffer
	writePart(&ib, body, false)
	bd := fmt.Sprintf("=_f%x", g.r.Uint64())
	fw := multipart("mixed", bd, textPart("plain", "FYI, for the books.\n", "utf-8", "7bit"),
		part{ctype: "message/rfc822", body: inner.String() + "MIME-Version: 1.0\n" + ib.String()})
	g.c.Messages = append(g.c.Messages, Message{Raw: render(h, fw, false), Date: fdate, Kind: "forward", Service: s.key})
}

func (g *gen) dateBetween(a, b time.Time) time.Time {
	if !b.After(a) {
		return a
	}
	return a.Add(time.Duration(g.r.Int64N(int64(b.Sub(a)))))
}
