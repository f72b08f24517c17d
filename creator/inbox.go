package creator

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"time"

	"svc.dev/svc/mail"
)

// InboxOptions say how to read a mailbox for revenue evidence.
type InboxOptions struct {
	SourceID string // the inbox creator source (crs_)
	// Home is the creator's home currency, the one foreign payouts are converted to (default USD).
	Home string
	// Self are the creator's own addresses or domains: a message from them is one the creator
	// sent (an invoice), not one a platform sent.
	Self []string
}

// ReadInbox reads payout notices, settlements, statement mail, announced term changes, sponsor
// invoices and remittances out of messages read by package mail (mail.ReadDocument: the text of
// every part, PDF invoices included). A message that is none of these is ignored; one that looks
// like revenue evidence but cannot be read is listed in Problems.
func ReadInbox(msgs []*mail.Document, opts InboxOptions) *Ledger {
	if opts.Home == "" {
		opts.Home = "USD"
	}
	led := &Ledger{}
	for _, m := range msgs {
		if m == nil || m.Message == nil || m.Unreadable != "" {
			continue
		}
		readMessage(led, m.Message, m.Body(), opts)
	}
	return led
}

var (
	reMoney     = regexp.MustCompile(`(?i)(US\$|CA\$|\$|€|£|\b(?:USD|EUR|GBP|CAD)\s?)\s?(\d(?:[\d,.]*\d)?)(\s?(?:USD|EUR|GBP|CAD)\b)?|(\d(?:[\d,.]*\d)?)\s?(€|£|\bUSD\b|\bEUR\b|\bGBP\b)`)
	reMonthYear = regexp.MustCompile(`(?i)\b(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?\s+(\d{4})\b`)
	reYYYYMM    = regexp.MustCompile(`\b(20\d{2})-(0[1-9]|1[0-2])\b`)
	reDateLong  = regexp.MustCompile(`(?i)\b(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b`)
	reDateEU    = regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?,?\s+(\d{4})\b`)
	reDateISO   = regexp.MustCompile(`\b(20\d{2})-(\d{2})-(\d{2})\b`)
	reInvoiceNo = regexp.MustCompile(`(?i)\binvoice\s*(?:no\.?|number|#)?\s*:?\s*#?\s*([A-Z]{0,5}-?\d[\w-]*)`)
	reNetDays   = regexp.MustCompile(`(?i)\bnet[\s-]?(\d{1,3})\b|\bwithin\s+(\d{1,3})\s+days\b`)
	reRate      = regexp.MustCompile(`(?i)\b(?:rate|at)\s+(?:of\s+)?(\d+[.,]\d{2,6})\b`)
	rePercent   = regexp.MustCompile(`(\d{1,2}(?:[.,]\d{1,2})?)\s?%`)
	reSettled   = regexp.MustCompile(`\b(?:was|were|has been|have been|got)\s+(?:paid|deposited|credited|transferred to your bank)\b|\bpaid (?:to|into) your (?:bank|account)\b`)
	reLabelled  = regexp.MustCompile(`(?i)\b(gross(?:\s+(?:sales|earnings|revenue))?|fees?|platform fees?|adjustments?|refunds?|withholding(?:\s+tax)?|tax(?:es)?\s+withheld|net(?:\s+(?:earnings|payout|payable))?)\s*[:=]?\s*(\(?-?\s?(?:US\$|\$|€|£|USD\s?|EUR\s?|GBP\s?)\s?-?\d[\d,.]*\)?)`)
)

type found struct {
	cents int64
	cur   string
	at    int
}

// amounts finds every money amount in s, in order.
func amounts(s, home string) []found {
	var out []found
	for _, m := range reMoney.FindAllStringSubmatchIndex(s, -1) {
		var sym, num string
		if m[4] >= 0 {
			sym, num = s[m[2]:m[3]], s[m[4]:m[5]]
			if m[6] >= 0 {
				sym = s[m[6]:m[7]]
			}
		} else {
			num, sym = s[m[8]:m[9]], s[m[10]:m[11]]
		}
		cur := currencyOf(sym, home)
		c, _, err := parseMoney(strings.ReplaceAll(num, " ", ""), cur == "EUR" && strings.Contains(num, ",") && !strings.Contains(num, "."))
		if err != nil {
			continue
		}
		out = append(out, found{cents: c, cur: cur, at: m[0]})
	}
	return out
}

func currencyOf(sym, home string) string {
	s := strings.ToUpper(strings.TrimSpace(sym))
	switch s {
	case "$", "US$":
		return "USD"
	case "CA$":
		return "CAD"
	case "€":
		return "EUR"
	case "£":
		return "GBP"
	}
	if len(s) == 3 {
		return s
	}
	return home
}

func monthNum(s string) time.Month {
	s = strings.ToLower(strings.TrimSuffix(s, "."))
	if len(s) > 3 {
		if m, ok := monthNames[s]; ok {
			return m
		}
		s = s[:3]
	}
	return monthNames[s]
}

type periodAt struct {
	p Period
	i int
}

// periodsIn finds month periods ("March 2026", "2026-03") in s, in order.
func periodsIn(s string) []Period {
	ps := periodsAt(s)
	out := make([]Period, len(ps))
	for i, p := range ps {
		out[i] = p.p
	}
	return out
}

func periodsAt(s string) []periodAt {
	var ps []periodAt
	long := append(reDateLong.FindAllStringIndex(s, -1), reDateEU.FindAllStringIndex(s, -1)...)
	inDate := func(i int) bool {
		for _, d := range long {
			if i >= d[0] && i < d[1] {
				return true
			}
		}
		return false
	}
	for _, m := range reMonthYear.FindAllStringSubmatchIndex(s, -1) {
		if inDate(m[0]) {
			continue
		}
		y, _ := strconv.Atoi(s[m[4]:m[5]])
		ps = append(ps, periodAt{Month(time.Date(y, monthNum(s[m[2]:m[3]]), 1, 0, 0, 0, 0, time.UTC)), m[0]})
	}
	for _, m := range reYYYYMM.FindAllStringSubmatchIndex(s, -1) {
		if m[1] < len(s) && s[m[1]] == '-' { // a full date
			continue
		}
		y, _ := strconv.Atoi(s[m[2]:m[3]])
		mo, _ := strconv.Atoi(s[m[4]:m[5]])
		ps = append(ps, periodAt{Month(time.Date(y, time.Month(mo), 1, 0, 0, 0, 0, time.UTC)), m[0]})
	}
	for i := 1; i < len(ps); i++ {
		for j := i; j > 0 && ps[j].i < ps[j-1].i; j-- {
			ps[j], ps[j-1] = ps[j-1], ps[j]
		}
	}
	return ps
}

type dateAt struct {
	t time.Time
	i int
}

// datesIn finds full dates in s, in order.
func datesIn(s string) []dateAt {
	var out []dateAt
	add := func(y, mo, d, i int) {
		t := time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC)
		if mo >= 1 && mo <= 12 && t.Day() == d {
			out = append(out, dateAt{t, i})
		}
	}
	for _, m := range reDateLong.FindAllStringSubmatchIndex(s, -1) {
		y, _ := strconv.Atoi(s[m[6]:m[7]])
		d, _ := strconv.Atoi(s[m[4]:m[5]])
		add(y, int(monthNum(s[m[2]:m[3]])), d, m[0])
	}
	for _, m := range reDateEU.FindAllStringSubmatchIndex(s, -1) {
		y, _ := strconv.Atoi(s[m[6]:m[7]])
		d, _ := strconv.Atoi(s[m[2]:m[3]])
		add(y, int(monthNum(s[m[4]:m[5]])), d, m[0])
	}
	for _, m := range reDateISO.FindAllStringSubmatchIndex(s, -1) {
		y, _ := strconv.Atoi(s[m[2]:m[3]])
		mo, _ := strconv.Atoi(s[m[4]:m[5]])
		d, _ := strconv.Atoi(s[m[6]:m[7]])
		add(y, mo, d, m[0])
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j].i < out[j-1].i; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func has(s string, words ...string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return false
}

func domainOf(a mail.Address) string {
	_, d, ok := strings.Cut(strings.ToLower(a.Addr), "@")
	if !ok {
		return ""
	}
	return d
}

func (o InboxOptions) self(a mail.Address) bool {
	addr := strings.ToLower(a.Addr)
	for _, s := range o.Self {
		s = strings.ToLower(s)
		if addr == s || strings.HasSuffix(addr, "@"+s) {
			return true
		}
	}
	return false
}

// registrable is the domain without service prefixes ("payouts.fanclub.example" -> "fanclub.example").
func registrable(d string) string {
	labels := strings.Split(d, ".")
	for len(labels) > 2 {
		labels = labels[1:]
	}
	return strings.Join(labels, ".")
}

func readMessage(led *Ledger, m *mail.Message, body string, o InboxOptions) {
	if strings.TrimSpace(body) == "" {
		body = m.Text
	}
	text := m.Subject + "\n" + body
	low := strings.ToLower(text)
	ev := Evidence{Kind: EvidenceEmail, Ref: m.MessageID, SourceID: o.SourceID, ObservedAt: m.Date,
		Excerpt: excerpt(strings.TrimSpace(m.Subject + " — " + m.Snippet(240)))}
	if ev.Ref == "" {
		ev.Ref = "message of " + m.Date.Format(time.RFC3339) + " from " + m.From.Addr
	}
	if m.Spam() != "" || m.ListPost != "" || has(low, notRevenue...) {
		return // spam, a mailing list, a scam: no platform's money
	}
	fromSelf := o.self(m.From)
	invoiceish := has(low, "invoice")
	// What the creator paid (a receipt, a renewal, a bill, a bank's statement) is not what they
	// were paid, though it speaks of payments and amounts.
	spent := !fromSelf && has(low, spending...) && !has(low, earning...)
	switch {
	case spent:
	case invoiceish && !fromSelf && has(low, "remittance", "payment sent", "we have paid", "we've paid", "payment of", "has been paid", "paid your invoice", "payment for invoice", "processed payment", "wire sent", "transfer of"):
		readRemittance(led, m, text, ev, o)
	case invoiceish && (fromSelf || len(o.Self) == 0) && reInvoiceNo.MatchString(text) && !has(low, "remittance", "has been paid", "payment sent"):
		readInvoice(led, m, text, ev, o)
	case has(low, "effective", "starting", "beginning", "from the", "will change", "changes to", "update to") &&
		has(low, "fee", "royalt", "rate", "commission", "tax", "deduct", "withh") && !has(low, "has been deposited", "was deposited"):
		readAnnouncement(led, m, text, low, ev)
	case has(low, "statement", "earnings report", "earnings summary") && len(reLabelled.FindAllString(text, -1)) >= 2 && strings.Contains(low, "gross"):
		readStatementMail(led, m, text, ev, o)
	case has(low, "payout", "payment", "transfer", "deposit", "remittance", "been paid", "paid out", "you've been paid", "earnings of",
		"funds", "on the way", "on its way", "were paid", "was paid") &&
		(has(low, "your ", "you've", "you have", "you were", "sent you", "to you") || has(low, "amount paid", "amount:", "paid on", "period:", "payout date")) &&
		len(amounts(text, o.Home)) > 0:
		readPayout(led, m, text, low, ev, o)
	}
}

// notRevenue are the words of advance-fee scams and lotteries, which promise money.
var notRevenue = []string{"next of kin", "barrister", "inheritance", "lottery", "you have won", "you've won", "claim your", "beneficiary", "compensation fund"}

// spending are the words of money the creator spent; earning those of money paid to them.
var (
	spending = []string{"receipt", "amount charged", "we charged", "been charged", "was charged", "your order", "order confirmation", "renewed",
		"subscription", "your plan", "billed", "minimum payment", "statement balance", "account statement", "card ending", "payment due", "was made"}
	earning = []string{"payout", "paid out", "earnings", "royalt", "deposited", "deposit confirmation", "funds are on the way", "remittance", "revenue share", "commission"}
)

func platformOf(led *Ledger, m *mail.Message, kind Kind, sourceID string) *StreamInfo {
	d := registrable(domainOf(m.From))
	name := m.From.Name
	key := StreamKey(d)
	if key == "" {
		key = StreamKey(name)
	}
	return led.stream(key, titleName(name, d), d, kind, sourceID)
}

// titleName is a platform's display name: the sender's name without "payouts", "team" and the like.
func titleName(name, domain string) string {
	n := strings.TrimSpace(name)
	for _, w := range []string{" Payouts", " Payments", " Team", " Billing", " Support", " Notifications", " Finance", " Accounts Payable"} {
		n = strings.TrimSuffix(n, w)
	}
	if n == "" {
		n = strings.Split(domain, ".")[0]
	}
	return n
}

func readPayout(led *Ledger, m *mail.Message, text, low string, ev Evidence, o InboxOptions) {
	s := platformOf(led, m, KindInbox, o.SourceID)
	am := amounts(text, o.Home)
	p := Payout{Stream: s.Key, Name: s.Name, Evidence: ev}
	// A conversion: two amounts in two currencies and a rate.
	first := am[0]
	p.Currency, p.AmountCents = first.cur, first.cents
	if len(am) > 1 && am[1].cur != first.cur && has(low, "convert", "exchange", "fx") {
		foreign, home := am[0], am[1]
		if foreign.cur == o.Home {
			foreign, home = home, foreign
		}
		p.Currency, p.AmountCents = foreign.cur, foreign.cents
		conv := &Conversion{From: foreign.cur, To: home.cur, AmountCents: home.cents, RateSource: "payout notice " + ev.Ref}
		if r := reRate.FindStringSubmatch(text); r != nil {
			conv.Rate = strings.ReplaceAll(r[1], ",", ".")
		} else if foreign.cents != 0 {
			conv.Rate = new(big.Rat).SetFrac64(home.cents, foreign.cents).FloatString(6)
			conv.RateSource = "implied by the amounts in payout notice " + ev.Ref
		}
		p.Conversion = conv
	}
	ps := periodsIn(text)
	if len(ps) > 0 {
		p.Period = ps[0]
	} else if !m.Date.IsZero() {
		p.Period = Month(m.Date).prev()
	} else {
		led.Problems = append(led.Problems, fmt.Sprintf("payout mail %s names no earning period and has no date", ev.Ref))
		return
	}
	ds := datesIn(text)
	p.Settled = reSettled.MatchString(low) || has(low, "deposited", "has arrived", "arrived in", "was paid", "has been paid", "have been paid", "been paid out", "completed", "credited", "landed", "settled", "is in your account", "now in your account", "has been sent to your bank", "arrived", "status: paid")
	if p.Settled {
		p.SettledAt = m.Date
		if len(ds) > 0 {
			p.SettledAt = ds[len(ds)-1].t
		}
	} else {
		p.DueAt = m.Date
		if len(ds) > 0 {
			p.DueAt = ds[len(ds)-1].t
		}
	}
	led.Payouts = append(led.Payouts, p)
}

func (p Period) prev() Period { return Month(p.Start.AddDate(0, -1, 0)) }

func readStatementMail(led *Ledger, m *mail.Message, text string, ev Evidence, o InboxOptions) {
	s := platformOf(led, m, KindInbox, o.SourceID)
	ps := periodsIn(text)
	if len(ps) == 0 {
		return
	}
	a := Activity{Stream: s.Key, Name: s.Name, Period: ps[0], Model: ModelFee, Deductions: map[string]int64{}, Evidence: ev, Currency: o.Home}
	for _, lm := range reLabelled.FindAllStringSubmatch(text, -1) {
		c, cur, err := parseMoney(lm[2], false)
		if err != nil {
			continue
		}
		if cur != "" {
			a.Currency = cur
		}
		label := strings.ToLower(lm[1])
		switch {
		case strings.HasPrefix(label, "gross"):
			a.Gross = ptr(c)
		case strings.Contains(label, "fee"):
			a.Fees += abs(c)
			a.Deductions["fees"] += abs(c)
		case strings.HasPrefix(label, "refund"):
			a.Refunds += abs(c)
			a.Adjustments -= abs(c)
		case strings.HasPrefix(label, "adjust"):
			a.Adjustments += c
		case strings.Contains(label, "withh"):
			a.Withholding += abs(c)
			a.Deductions["withholding"] += abs(c)
		case strings.HasPrefix(label, "net"):
			a.Net = ptr(c)
		}
	}
	if a.Gross == nil && a.Net == nil {
		return
	}
	if a.Gross != nil {
		a.Earned = ptr(*a.Gross - a.Fees)
	}
	led.Activity = append(led.Activity, a)
}

func abs(c int64) int64 {
	if c < 0 {
		return -c
	}
	return c
}

func readAnnouncement(led *Ledger, m *mail.Message, text, low string, ev Evidence) {
	s := platformOf(led, m, KindInbox, ev.SourceID)
	// The effective period is the first date or month named after the word that announces it.
	kw := len(low)
	for _, w := range []string{"effective", "starting", "beginning", "from the", "as of", "from "} {
		if i := strings.Index(low, w); i >= 0 && i < kw {
			kw = i
		}
	}
	var eff string
	best := len(text) + 1
	for _, d := range datesIn(text) {
		if d.i >= kw && d.i < best {
			best, eff = d.i, Month(d.t).Label
			if d.t.Day() > 1 { // a change mid-month applies from the next full period
				eff = Month(d.t).next().Label
			}
		}
	}
	for _, p := range periodsAt(text) {
		if p.i >= kw && p.i < best {
			best, eff = p.i, p.p.Label
		}
	}
	if eff == "" {
		return
	}
	tc := TermChange{Stream: s.Key, Effective: eff, Announced: true, Evidence: ev}
	pcts := rePercent.FindAllStringSubmatch(text, -1)
	lastPct := func() (int64, bool) {
		if len(pcts) == 0 {
			return 0, false
		}
		v, err := percentBPS(strings.ReplaceAll(pcts[len(pcts)-1][1], ",", ".") + "%")
		return v, err == nil
	}
	switch {
	case has(low, "per 1,000", "per 1000", "per thousand", "rpm"):
		am := amounts(text, "USD")
		if len(am) == 0 {
			return
		}
		tc.Field, tc.Value = TermUnitRate, am[len(am)-1].cents*100
		if r := regexp.MustCompile(`(?:\$|€|£)\s?(\d+\.\d{2,4})\s*(?:per 1,?000|per thousand)`).FindAllStringSubmatch(text, -1); r != nil {
			if v, err := rateHundredths(r[len(r)-1][1]); err == nil {
				tc.Value = v
			}
		}
	case has(low, "commission") && has(low, "per conversion", "per sale", "per referral", "per signup", "per order"):
		am := amounts(text, "USD")
		if len(am) == 0 {
			return
		}
		tc.Field, tc.Value = TermCommission, am[len(am)-1].cents
	case has(low, "royalt"):
		v, ok := lastPct()
		if !ok {
			return
		}
		tc.Field, tc.Value = TermRoyaltyBPS, v
	case has(low, "withholding rate", "withhold") && !has(low, "new"):
		v, ok := lastPct()
		if !ok {
			return
		}
		tc.Field, tc.Value = TermWithholdingBPS, v
	case has(low, "tax", "levy", "deduct", "surcharge", "charge"):
		v, ok := lastPct()
		if !ok {
			return
		}
		name := "announced deduction"
		if n := regexp.MustCompile(`(?i)\b((?:[A-Z][a-z]+\s){1,3}(?:Tax|Levy|Surcharge|Charge|Fee))\b`).FindString(text); n != "" {
			name = strings.ToLower(n)
		}
		tc.Field, tc.Value = TermDeductionPrefix+TermField(name), v
	case has(low, "fee"):
		v, ok := lastPct()
		if !ok {
			return
		}
		tc.Field, tc.Value = TermFeeBPS, v
	default:
		return
	}
	led.Terms = append(led.Terms, tc)
}

func readInvoice(led *Ledger, m *mail.Message, text string, ev Evidence, o InboxOptions) {
	var to mail.Address
	if len(m.To) > 0 {
		to = m.To[0]
	}
	d := registrable(domainOf(to))
	key := StreamKey(d)
	if key == "" {
		return
	}
	name := titleName(to.Name, d)
	num := reInvoiceNo.FindStringSubmatch(text)[1]
	am := amounts(text, o.Home)
	if len(am) == 0 {
		led.Problems = append(led.Problems, fmt.Sprintf("invoice %s in %s has no amount", num, ev.Ref))
		return
	}
	s := led.stream(key, name, d, KindInbox, o.SourceID)
	ev.Kind = EvidenceInvoice
	inv := Invoice{Sponsor: s.Key, Name: s.Name, Domain: d, Number: num, Currency: am[0].cur, AmountCents: am[0].cents,
		IssuedAt: m.Date, Evidence: []Evidence{ev}}
	low := strings.ToLower(text)
	// The invoice total is the amount labelled total/amount due, else the first; a contracted
	// amount is one labelled as agreed.
	for _, a := range am {
		ctx := strings.ToLower(text[max(0, a.at-40):a.at])
		if has(ctx, "total", "amount due", "balance due", "invoice amount") {
			inv.AmountCents, inv.Currency = a.cents, a.cur
		}
		if has(ctx, "agreed", "contract", "per our agreement", "as quoted") {
			inv.ContractCents = ptr(a.cents)
		}
	}
	ds := datesIn(text)
	for _, dd := range ds {
		ctx := strings.ToLower(text[max(0, dd.i-30):dd.i])
		if has(ctx, "due", "payable by", "pay by") {
			inv.DueAt = dd.t
		}
	}
	if inv.DueAt.IsZero() {
		days := 30
		if nd := reNetDays.FindStringSubmatch(low); nd != nil {
			v := nd[1]
			if v == "" {
				v = nd[2]
			}
			days, _ = strconv.Atoi(v)
		}
		inv.DueAt = m.Date.AddDate(0, 0, days)
	}
	led.Invoices = append(led.Invoices, inv)
}

func readRemittance(led *Ledger, m *mail.Message, text string, ev Evidence, o InboxOptions) {
	d := registrable(domainOf(m.From))
	key := StreamKey(d)
	num := reInvoiceNo.FindStringSubmatch(text)
	am := amounts(text, o.Home)
	if key == "" || num == nil || len(am) == 0 {
		led.Problems = append(led.Problems, fmt.Sprintf("remittance %s names no invoice or amount", ev.Ref))
		return
	}
	led.stream(key, titleName(m.From.Name, d), d, KindInbox, o.SourceID)
	ev.Kind = EvidenceReceipt
	paid := m.Date
	if ds := datesIn(text); len(ds) > 0 {
		paid = ds[len(ds)-1].t
	}
	led.Remittances = append(led.Remittances, Remittance{Sponsor: key, Number: num[1], Currency: am[0].cur, AmountCents: am[0].cents, PaidAt: paid, Evidence: ev})
}
