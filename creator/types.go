package creator

import (
	"fmt"
	"time"
)

// CalculationVersion names the rules that computed an item's expected amount and its state; it is
// carried as calculation_version on every revenue item and changes whenever a rule does.
const CalculationVersion = "creator-2026-11.1"

// Kind is the kind of a creator revenue source.
type Kind string

// The source kinds.
const (
	KindStripe     Kind = "stripe"     // a Stripe account read through its API (api_key)
	KindStorefront Kind = "storefront" // a storefront admin REST API (shop_domain + access_token)
	KindStatement  Kind = "statement"  // CSV statements uploaded to the source
	KindInbox      Kind = "inbox"      // payout, statement and remittance mail and sponsor invoice threads
)

// EvidenceLevel is the spec's EvidenceLevel.
type EvidenceLevel string

// The evidence levels, strongest first.
const (
	Confirmed EvidenceLevel = "CONFIRMED" // direct platform, API or settlement evidence
	Detected  EvidenceLevel = "DETECTED"  // reliable statement, email or invoice evidence
	Estimated EvidenceLevel = "ESTIMATED" // a calculation from observable rates or incomplete evidence
)

// ItemState is the state of a revenue item (the spec's "Creator revenue item" states).
type ItemState string

// The revenue item states, in the order an item normally moves through them.
const (
	StateObserved    ItemState = "OBSERVED_EARNING_SIGNAL"
	StateNormalized  ItemState = "NORMALIZED_REVENUE_ITEM"
	StateExpected    ItemState = "EXPECTED_AMOUNT_CALCULATED"
	StateReported    ItemState = "REPORTED_AMOUNT_RECORDED"
	StateAdjusted    ItemState = "ADJUSTMENTS_APPLIED"
	StateScheduled   ItemState = "PAYOUT_SCHEDULED"
	StateSettled     ItemState = "SETTLEMENT_OBSERVED"
	StateReconciled  ItemState = "RECONCILED"
	StateDiscrepancy ItemState = "DISCREPANCY_OPEN"
	StateUpdated     ItemState = "EVIDENCE_UPDATED"
	StateReview      ItemState = "REVIEW_REQUIRED"
)

// EvidenceKind is the kind of an evidence item.
type EvidenceKind string

// The evidence kinds of the spec.
const (
	EvidenceEmail     EvidenceKind = "email"
	EvidenceStatement EvidenceKind = "statement"
	EvidenceAPI       EvidenceKind = "api"
	EvidenceInvoice   EvidenceKind = "invoice"
	EvidenceContract  EvidenceKind = "contract"
	EvidenceReceipt   EvidenceKind = "receipt"
	EvidenceUser      EvidenceKind = "user"
	EvidenceDerived   EvidenceKind = "derived"
)

// MaxExcerpt is the longest evidence excerpt the spec allows, in characters.
const MaxExcerpt = 300

// Evidence is the spec's evidence item. A statement's ref is its path relative to the
// statements directory with "#L<n>" (n the physical line, the header being line 1); a message's
// ref is its Message-ID; an API object's ref is its platform id.
type Evidence struct {
	Kind       EvidenceKind `json:"kind"`
	Ref        string       `json:"ref"`
	SourceID   string       `json:"sourceId,omitempty"`
	ObservedAt time.Time    `json:"observedAt"`
	Excerpt    string       `json:"excerpt,omitempty"`
}

// excerpt cuts s to the spec's 300 characters.
func excerpt(s string) string {
	r := []rune(s)
	if len(r) <= MaxExcerpt {
		return s
	}
	return string(r[:MaxExcerpt-1]) + "…"
}

// Period is an earning period: [Start, End) with a label ("2026-03" for a month).
type Period struct {
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	Label string    `json:"label,omitempty"`
}

// Month returns the calendar month period of t (UTC), labelled "2006-01".
func Month(t time.Time) Period {
	t = t.UTC()
	s := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, time.UTC)
	return Period{Start: s, End: s.AddDate(0, 1, 0), Label: s.Format("2006-01")}
}

// next is the month after p.
func (p Period) next() Period { return Month(p.End) }

// Source is a connected creator revenue source. Its credentials are never serialized.
type Source struct {
	ID     string `json:"id"`
	Kind   Kind   `json:"kind"`
	Label  string `json:"label"`
	Domain string `json:"domain,omitempty"`
	// Status is "connected" once the credential check passed, "error" when a later sync failed.
	Status string `json:"status"`
	// MailSourceID is, for kind inbox, the connected mail source (src_) scanned for evidence.
	MailSourceID string    `json:"source_id,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	// Credentials are the platform credentials; the caller seals them at rest.
	Credentials Credentials `json:"-"`
}

// Credentials are the platform credentials of POST /v1/creator/sources.
type Credentials struct {
	APIKey      string `json:"api_key,omitempty"`
	AccessToken string `json:"access_token,omitempty"`
	ShopDomain  string `json:"shop_domain,omitempty"`
	AccountSID  string `json:"account_sid,omitempty"`
}

// Item is a creator revenue item: one per source and earning period, or one per sponsor invoice.
// Amounts are exact integer cents in Currency; nil is unknown.
type Item struct {
	ID                 string        `json:"id"`
	CreatorSourceID    string        `json:"creator_source_id"`
	Period             Period        `json:"period"`
	Currency           string        `json:"currency"`
	GrossCents         *int64        `json:"gross_cents"`
	FeesCents          int64         `json:"fees_cents"`
	AdjustmentsCents   int64         `json:"adjustments_cents"`
	WithholdingCents   int64         `json:"withholding_cents"`
	ExpectedCents      *int64        `json:"expected_cents"`
	ReportedCents      *int64        `json:"reported_cents"`
	ScheduledCents     *int64        `json:"scheduled_cents"`
	SettledCents       *int64        `json:"settled_cents"`
	VarianceCents      *int64        `json:"variance_cents"`
	Confidence         float64       `json:"confidence"`
	EvidenceLevel      EvidenceLevel `json:"evidence_level"`
	Evidence           []Evidence    `json:"evidence"`
	CalculationVersion string        `json:"calculation_version"`
	State              ItemState     `json:"state"`
	UpdatedAt          time.Time     `json:"updated_at"`

	// Invoice is the sponsor invoice number of a sponsor item ("" for a platform period).
	Invoice string `json:"invoice,omitempty"`
	// Conversion is how a payout in another currency was converted, when one was.
	Conversion *Conversion `json:"conversion,omitempty"`
	// Estimated lists what on the item is estimated rather than observed ("terms inferred from
	// 2026-01..2026-03"); any entry makes the item ESTIMATED.
	Estimated []string `json:"estimated,omitempty"`
}

// Conversion is a currency conversion of a payout: Rate units of To per unit of From, and where
// the rate came from.
type Conversion struct {
	From        string `json:"from"`
	To          string `json:"to"`
	Rate        string `json:"rate"`
	RateSource  string `json:"rate_source"`
	AmountCents int64  `json:"amount_cents"` // the converted amount, in To
}

// AnomalyKind is one of the spec's thirteen anomaly kinds.
type AnomalyKind string

// The anomaly kinds.
const (
	RateDeviation        AnomalyKind = "rate_deviation"
	FeeChange            AnomalyKind = "fee_change"
	AdjustmentSpike      AnomalyKind = "adjustment_spike"
	MissingPayoutPeriod  AnomalyKind = "missing_payout_period"
	LatePayout           AnomalyKind = "late_payout"
	ConversionDivergence AnomalyKind = "conversion_commission_divergence"
	RoyaltyRateChange    AnomalyKind = "royalty_rate_change"
	CurrencyEffect       AnomalyKind = "currency_effect"
	SponsorOverdue       AnomalyKind = "sponsor_overdue"
	RefundSpike          AnomalyKind = "refund_spike"
	NewDeduction         AnomalyKind = "new_deduction"
	RevenueConcentration AnomalyKind = "revenue_concentration"
	StatementGap         AnomalyKind = "statement_gap"
)

// AnomalyKinds are all thirteen kinds, in the spec's order.
var AnomalyKinds = []AnomalyKind{RateDeviation, FeeChange, AdjustmentSpike, MissingPayoutPeriod, LatePayout,
	ConversionDivergence, RoyaltyRateChange, CurrencyEffect, SponsorOverdue, RefundSpike, NewDeduction,
	RevenueConcentration, StatementGap}

// Language is the spec's precise label of each kind.
var Language = map[AnomalyKind]string{
	RateDeviation:        "unexplained difference",
	FeeChange:            "fee change",
	AdjustmentSpike:      "historical anomaly",
	MissingPayoutPeriod:  "reconciliation required",
	LatePayout:           "late payout",
	ConversionDivergence: "payout variance",
	RoyaltyRateChange:    "rate change",
	CurrencyEffect:       "payout variance",
	SponsorOverdue:       "late payout",
	RefundSpike:          "historical anomaly",
	NewDeduction:         "unexplained difference",
	RevenueConcentration: "historical anomaly",
	StatementGap:         "missing evidence",
}

// Severity is how much attention an anomaly needs.
type Severity string

// The severities.
const (
	SeverityInfo   Severity = "info"
	SeverityReview Severity = "review"
	SeverityHigh   Severity = "high"
)

// Status is an anomaly's status.
type Status string

// The anomaly statuses.
const (
	StatusOpen      Status = "open"
	StatusResolved  Status = "resolved"
	StatusDismissed Status = "dismissed"
)

// Anomaly is a longitudinal anomaly in a creator's revenue.
type Anomaly struct {
	ID              string      `json:"id"`
	CreatorSourceID string      `json:"creator_source_id,omitempty"`
	Kind            AnomalyKind `json:"kind"`
	Severity        Severity    `json:"severity"`
	Status          Status      `json:"status"`
	Language        string      `json:"language"`
	Detail          string      `json:"detail"`
	Evidence        []Evidence  `json:"evidence"`
	DetectedAt      time.Time   `json:"detected_at"`

	// Period is the label of the period the anomaly is about ("2026-03"), or the sponsor
	// invoice number for sponsor_overdue.
	Period string `json:"period,omitempty"`
	// ItemID is the revenue item the anomaly is about, when there is one.
	ItemID string `json:"item_id,omitempty"`
	// Resolution says how a resolved anomaly was explained or settled.
	Resolution string     `json:"resolution,omitempty"`
	ResolvedAt *time.Time `json:"resolved_at,omitempty"`
	// DismissedAt is when the user dismissed it.
	DismissedAt *time.Time `json:"dismissed_at,omitempty"`
}

// money formats cents in a currency for details: "$1,234.56", "EUR 1,234.56".
func money(cur string, cents int64) string {
	sign := ""
	if cents < 0 {
		sign, cents = "-", -cents
	}
	whole, frac := cents/100, cents%100
	s := fmt.Sprintf("%d", whole)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	switch cur {
	case "USD":
		return fmt.Sprintf("%s$%s.%02d", sign, s, frac)
	case "EUR":
		return fmt.Sprintf("%s€%s.%02d", sign, s, frac)
	case "GBP":
		return fmt.Sprintf("%s£%s.%02d", sign, s, frac)
	}
	return fmt.Sprintf("%s%s %s.%02d", sign, cur, s, frac)
}

func ptr[T any](v T) *T { return &v }
