package creator

import (
	"sort"
	"strings"
	"time"
	"unicode"
)

// Model is how a platform pays for the activity it reports.
type Model string

// The payment models a statement's columns reveal.
const (
	// ModelFee: the platform sells for the creator and keeps a fee (memberships, storefronts,
	// payment processors). Terms: fee_bps.
	ModelFee Model = "fee"
	// ModelRoyalty: the platform pays a share of list sales (books, music). Terms: royalty_bps.
	ModelRoyalty Model = "royalty"
	// ModelPerUnit: the platform pays a published rate per 1,000 units (streams, views).
	// Terms: unit_rate, in hundredths of a cent per 1,000 units.
	ModelPerUnit Model = "per_unit"
	// ModelAffiliate: the platform pays a commission per conversion. Terms: commission_cents.
	ModelAffiliate Model = "affiliate"
)

// Activity is one platform's reported activity for one earning period: a statement row or an
// API's month of transactions. Money is in cents of Currency.
type Activity struct {
	Stream      string // the platform's key (see StreamKey)
	Name        string // the platform's name as written
	Period      Period
	Currency    string
	Model       Model
	Units       *int64 // streams, views, units sold
	Conversions *int64
	// Gross is the activity's money: sales for fee and royalty platforms, earnings for per-unit
	// and affiliate platforms.
	Gross *int64
	// Earned is what the platform says the creator earned before adjustments and withholding
	// (the royalty, the commission); for fee platforms Gross - Fees.
	Earned *int64
	Fees   int64
	// Refunds is the refunded money (a positive magnitude), already part of Adjustments.
	Refunds     int64
	Adjustments int64 // signed: refunds, chargebacks and corrections are negative
	Withholding int64 // taxes withheld and other deductions (a positive magnitude)
	// Deductions are the named deductions that make up Fees and Withholding, by column name
	// lower-cased ("platform fee", "withholding", "digital services tax").
	Deductions map[string]int64
	Net        *int64 // what the platform reports as payable
	// FXRate is the statement's own conversion rate to the creator's home currency, if it states one.
	FXRate   string
	Evidence Evidence
}

// TermField names a term.
type TermField string

// The terms a platform or a contract publishes.
const (
	TermFeeBPS         TermField = "fee_bps"          // platform fee, basis points of gross
	TermRoyaltyBPS     TermField = "royalty_bps"      // royalty, basis points of list sales
	TermUnitRate       TermField = "unit_rate"        // hundredths of a cent per 1,000 units
	TermCommission     TermField = "commission_cents" // per conversion
	TermWithholdingBPS TermField = "withholding_bps"  // basis points of what is earned
	TermPayoutDay      TermField = "payout_day"       // day of the following month a payout is due
	// TermDeductionPrefix + name: a named deduction, basis points of what is earned.
	TermDeductionPrefix TermField = "deduction:"
)

// TermChange is a term taking a value from an effective period on: a published or contracted
// term (from a terms file, Announced false) or an announced change (from the platform's mail).
type TermChange struct {
	Stream    string
	Effective string // month label the value applies from ("2026-04"); "" is from the start
	Field     TermField
	Value     int64
	Announced bool
	Evidence  Evidence
}

// Payout is a payout notice or a settlement for one platform and earning period.
type Payout struct {
	Stream      string
	Name        string
	Period      Period
	Currency    string
	AmountCents int64
	Settled     bool      // false: scheduled (announced, in transit)
	DueAt       time.Time // when it is scheduled to arrive
	SettledAt   time.Time // when it arrived (Settled)
	Conversion  *Conversion
	API         bool // from the platform's API (CONFIRMED) rather than mail
	Evidence    Evidence
}

// Invoice is a sponsor invoice the creator sent.
type Invoice struct {
	Sponsor       string // the sponsor's key
	Name          string
	Domain        string
	Number        string
	Currency      string
	AmountCents   int64
	ContractCents *int64 // the contracted amount, when the thread states it
	IssuedAt      time.Time
	DueAt         time.Time
	Evidence      []Evidence
}

// Remittance is a sponsor's payment of an invoice.
type Remittance struct {
	Sponsor     string
	Number      string
	Currency    string
	AmountCents int64
	PaidAt      time.Time
	Evidence    Evidence
}

// StreamInfo describes a revenue stream: one platform or sponsor the creator is paid by.
type StreamInfo struct {
	Key, Name, Domain string
	Kind              Kind
	SourceID          string // the creator source (crs_) whose items these are
}

// Ledger is everything the connectors observed, normalized: the input of Reconcile.
type Ledger struct {
	Streams     map[string]*StreamInfo
	Activity    []Activity
	Terms       []TermChange
	Payouts     []Payout
	Invoices    []Invoice
	Remittances []Remittance
	// Problems are what could not be read (a bad statement row, an unreadable message).
	Problems []string
}

// Add merges another ledger into l.
func (l *Ledger) Add(o *Ledger) {
	if o == nil {
		return
	}
	for k, s := range o.Streams {
		l.stream(k, s.Name, s.Domain, s.Kind, s.SourceID)
	}
	l.Activity = append(l.Activity, o.Activity...)
	l.Terms = append(l.Terms, o.Terms...)
	l.Payouts = append(l.Payouts, o.Payouts...)
	l.Invoices = append(l.Invoices, o.Invoices...)
	l.Remittances = append(l.Remittances, o.Remittances...)
	l.Problems = append(l.Problems, o.Problems...)
}

// stream records a stream, keeping the first name and domain and preferring earning-side kinds
// (an API or statement source owns a platform's items; an inbox only adds payouts).
func (l *Ledger) stream(key, name, domain string, kind Kind, sourceID string) *StreamInfo {
	if l.Streams == nil {
		l.Streams = map[string]*StreamInfo{}
	}
	s := l.Streams[key]
	if s == nil {
		s = &StreamInfo{Key: key, Name: name, Domain: domain, Kind: kind, SourceID: sourceID}
		l.Streams[key] = s
		return s
	}
	if s.Name == "" {
		s.Name = name
	}
	if s.Domain == "" {
		s.Domain = domain
	}
	if s.Kind == KindInbox && kind != KindInbox && kind != "" {
		s.Kind, s.SourceID = kind, sourceID
	}
	if s.SourceID == "" {
		s.SourceID = sourceID
	}
	return s
}

// StreamKey is the key a platform or sponsor is known by across statements and mail: its name,
// or the first label of its domain, lower-cased with everything but letters and digits removed
// ("FanClub" and "payouts@fanclub.example" are both "fanclub").
func StreamKey(nameOrDomain string) string {
	s := strings.ToLower(strings.TrimSpace(nameOrDomain))
	if at := strings.LastIndexByte(s, '@'); at >= 0 {
		s = s[at+1:]
	}
	if strings.Contains(s, ".") && !strings.Contains(s, " ") {
		labels := strings.Split(s, ".")
		// Skip service prefixes: mail.fanclub.example, payouts.fanclub.example.
		for len(labels) > 2 && (labels[0] == "mail" || labels[0] == "email" || labels[0] == "payouts" ||
			labels[0] == "billing" || labels[0] == "www" || labels[0] == "notifications" || labels[0] == "accounts") {
			labels = labels[1:]
		}
		s = labels[0]
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// termsAt are the terms in force for a stream in a period: published terms, then announced
// changes, each from its effective period on. inferred is false: Reconcile fills gaps.
type termSet struct {
	fee, royalty, unitRate, commission, withholding, payoutDay *int64
	deductions                                                 map[string]int64
	announcedIn                                                map[TermField]string // field -> label of the latest announced change in force
	published                                                  map[TermField]bool   // fields set by published or contracted terms
}

func termsAt(changes []TermChange, stream, label string) termSet {
	ts := termSet{deductions: map[string]int64{}, announcedIn: map[TermField]string{}, published: map[TermField]bool{}}
	var cs []TermChange
	for _, c := range changes {
		if c.Stream == stream && c.Effective <= label {
			cs = append(cs, c)
		}
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Effective < cs[j].Effective })
	for _, c := range cs {
		v := c.Value
		switch {
		case c.Field == TermFeeBPS:
			ts.fee = &v
		case c.Field == TermRoyaltyBPS:
			ts.royalty = &v
		case c.Field == TermUnitRate:
			ts.unitRate = &v
		case c.Field == TermCommission:
			ts.commission = &v
		case c.Field == TermWithholdingBPS:
			ts.withholding = &v
		case c.Field == TermPayoutDay:
			ts.payoutDay = &v
		case strings.HasPrefix(string(c.Field), string(TermDeductionPrefix)):
			ts.deductions[strings.TrimPrefix(string(c.Field), string(TermDeductionPrefix))] = v
		}
		if c.Announced {
			ts.announcedIn[c.Field] = c.Effective
		} else {
			ts.published[c.Field] = true
		}
	}
	return ts
}

// announcedAt reports whether a change of field took effect, by announcement, in period label.
func announcedAt(changes []TermChange, stream string, field TermField, label string) bool {
	for _, c := range changes {
		if c.Stream == stream && c.Announced && c.Effective == label &&
			(c.Field == field || (field == TermDeductionPrefix && strings.HasPrefix(string(c.Field), string(TermDeductionPrefix)))) {
			return true
		}
	}
	return false
}

// bps applies basis points to cents, rounding half away from zero.
func bps(cents, points int64) int64 { return divRound(cents*points, 10000) }

// divRound is a/b rounded half away from zero (b > 0).
func divRound(a, b int64) int64 {
	if a >= 0 {
		return (a + b/2) / b
	}
	return -((-a + b/2) / b)
}
