package intel

import (
	"crypto/sha256"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"
)

// EvidenceLevel says how a figure is known (the spec's EvidenceLevel).
type EvidenceLevel string

// Evidence levels. Mail is DETECTED evidence at best; anything calculated from it about the
// future is ESTIMATED; CONFIRMED needs platform, API or settlement evidence, which mail is not.
const (
	Confirmed EvidenceLevel = "CONFIRMED"
	Detected  EvidenceLevel = "DETECTED"
	Estimated EvidenceLevel = "ESTIMATED"
)

// EvidenceKind is the kind of an evidence item.
type EvidenceKind string

// Evidence kinds the spec names.
const (
	KindEmail     EvidenceKind = "email"
	KindStatement EvidenceKind = "statement"
	KindAPI       EvidenceKind = "api"
	KindInvoice   EvidenceKind = "invoice"
	KindContract  EvidenceKind = "contract"
	KindReceipt   EvidenceKind = "receipt"
	KindUser      EvidenceKind = "user"
	KindDerived   EvidenceKind = "derived" // a calculation over other evidence (a projection)
)

// MaxExcerpt is the longest excerpt an evidence item carries, in characters.
const MaxExcerpt = 300

// Evidence is one item of evidence (the spec's evidence item). For mail, Kind is email and Ref
// is the Message-ID header value as written, angle brackets included.
type Evidence struct {
	Kind       EvidenceKind `json:"kind"`
	Ref        string       `json:"ref"`
	SourceID   string       `json:"sourceId,omitempty"`
	ObservedAt time.Time    `json:"observedAt"`
	Excerpt    string       `json:"excerpt,omitempty"`
}

// TrapType is the billing trap a meter found.
type TrapType string

// Trap types (docs/intel.md says how each is decided).
const (
	MeteredOverage       TrapType = "metered_overage"
	TeaserExpiration     TrapType = "teaser_expiration"
	RenewalJump          TrapType = "renewal_jump"
	FreeCreditExhaustion TrapType = "free_credit_exhaustion"
	SeatGrowth           TrapType = "seat_growth"
	AutoUpgrade          TrapType = "auto_upgrade"
	Surcharge            TrapType = "surcharge"
	VariableBill         TrapType = "variable_bill"
	NoTrap               TrapType = "unknown"
)

// TrapTypes lists the trap types, NoTrap last.
var TrapTypes = []TrapType{MeteredOverage, TeaserExpiration, RenewalJump, FreeCreditExhaustion, SeatGrowth, AutoUpgrade, Surcharge, VariableBill, NoTrap}

// BillingPeriod is how often a service bills.
type BillingPeriod string

// Billing periods.
const (
	Weekly    BillingPeriod = "weekly"
	Monthly   BillingPeriod = "monthly"
	Quarterly BillingPeriod = "quarterly"
	Annual    BillingPeriod = "annual"
	Usage     BillingPeriod = "usage"
	OneTime   BillingPeriod = "one_time"
	Unknown   BillingPeriod = "unknown"
)

// Action is what the user chose to do about a meter.
type Action string

// Meter actions.
const (
	Watch     Action = "watch"
	SetLimit  Action = "set_limit"
	Explain   Action = "explain"
	Ignore    Action = "ignore"
	Intervene Action = "intervene"
)

// Meter is one recurring paid service and the trap found in its billing (the spec's Meter, JSON
// field names as the spec spells them; absent figures are nil and left out).
type Meter struct {
	ID                       string        `json:"id"`
	Service                  string        `json:"service"`
	ServiceDomain            string        `json:"serviceDomain,omitempty"`
	BasePriceCents           *int64        `json:"basePriceCents,omitempty"`
	BillingPeriod            BillingPeriod `json:"billingPeriod"`
	IncludedAllowance        string        `json:"includedAllowance,omitempty"`
	MeterUnit                string        `json:"meterUnit,omitempty"`
	MeterRate                string        `json:"meterRate,omitempty"`
	ObservedUsage            string        `json:"observedUsage,omitempty"`
	ObservedOverageCents     *int64        `json:"observedOverageCents,omitempty"`
	CurrentPeriodCostCents   *int64        `json:"currentPeriodCostCents,omitempty"`
	ProjectedPeriodCostCents *int64        `json:"projectedPeriodCostCents,omitempty"`
	PreviousPeriodCostCents  *int64        `json:"previousPeriodCostCents,omitempty"`
	ChangeCents              *int64        `json:"changeCents,omitempty"`
	NextThresholdCents       *int64        `json:"nextThresholdCents,omitempty"`
	ChangePercent            *float64      `json:"changePercent,omitempty"`
	PrimaryDriver            string        `json:"primaryDriver,omitempty"`
	Concentration            string        `json:"concentration,omitempty"`
	ProjectedThresholdAt     *time.Time    `json:"projectedThresholdAt,omitempty"`
	TrapType                 TrapType      `json:"trapType"`
	Action                   Action        `json:"action"`
	InterventionCapable      bool          `json:"interventionCapable"`
	EvidenceLevel            EvidenceLevel `json:"evidenceLevel"`
	Confidence               float64       `json:"confidence"`
	Evidence                 []Evidence    `json:"evidence"`
	LastUpdated              time.Time     `json:"lastUpdated"`
	Explanation              string        `json:"explanation,omitempty"`

	// LimitCents is the limit set with the set_limit action (not a spec field of Meter).
	LimitCents *int64 `json:"-"`
	// Plan is the plan name last seen, for explanations.
	Plan string `json:"-"`
	// Rule is the evidence pattern the trap (or its absence) rests on; Confidence is its
	// measured precision (RuleConfidence).
	Rule Rule `json:"-"`
}

// TrialStatus is what became of a trial.
type TrialStatus string

// Trial outcomes.
const (
	TrialPending   TrialStatus = "pending"   // neither charged nor cancelled yet
	TrialConverted TrialStatus = "converted" // a first charge after the trial was seen
	TrialCancelled TrialStatus = "cancelled" // a cancellation was confirmed
)

// Decision is the user's decision on a trial.
type Decision string

// Decisions.
const (
	Undecided Decision = "undecided"
	Keep      Decision = "keep"
	Stop      Decision = "stop"
	Remind    Decision = "remind"
)

// Verdicts of WorthIt.
const (
	LikelyWorthIt    = "likely_worth_it"
	LikelyNotWorthIt = "likely_not_worth_it"
	Undetermined     = "undetermined"
)

// WorthIt is the verdict on whether a trial is worth keeping, with the reasons behind it.
type WorthIt struct {
	Verdict string   `json:"verdict"`
	Reasons []string `json:"reasons"`
}

// Trial is a free or discounted trial found in mail (the spec's Trial; fields beyond those the
// spec shows are named in its style: camelCase, cents as integers).
type Trial struct {
	ID                   string        `json:"id"`
	Service              string        `json:"service"`
	ServiceDomain        string        `json:"serviceDomain,omitempty"`
	Cadence              BillingPeriod `json:"cadence"`
	StartedAt            *time.Time    `json:"startedAt,omitempty"`
	LengthDays           int           `json:"lengthDays,omitempty"`
	EndsAt               *time.Time    `json:"endsAt,omitempty"`
	PriceAfterTrialCents *int64        `json:"priceAfterTrialCents,omitempty"`
	Status               TrialStatus   `json:"status"`
	Decision             Decision      `json:"decision"`
	RemindAt             *time.Time    `json:"remindAt,omitempty"`
	EvidenceLevel        EvidenceLevel `json:"evidenceLevel"`
	Confidence           float64       `json:"confidence"`
	Evidence             []Evidence    `json:"evidence"`
	WorthIt              WorthIt       `json:"worthIt"`
	LastUpdated          time.Time     `json:"lastUpdated"`

	// Unsubscribe is how the service's mail can be stopped, from its latest message.
	Unsubscribe Unsubscribe `json:"-"`
}

// Unsubscribe is what a sender's List-Unsubscribe header offers.
type Unsubscribe struct {
	// URL is the https target of List-Unsubscribe; OneClick is set when the message also
	// carried List-Unsubscribe-Post: List-Unsubscribe=One-Click (RFC 8058).
	URL      string
	Mailto   string
	OneClick bool
	// Ref is the Message-ID of the message that offered it.
	Ref string
	// Manage is a link in the text to manage or cancel the subscription, when one was found.
	Manage string
	// SourceID and Object name the message it was read from in a connected source (the
	// provider's object id), so that a plan can act on it; both are empty for files scanned
	// with no server.
	SourceID string `json:",omitempty"`
	Object   string `json:",omitempty"`
}

// Result is what a scan found.
type Result struct {
	AsOf   time.Time `json:"asOf"`
	Meters []Meter   `json:"meters"`
	Trials []Trial   `json:"trials"`
}

// derivedID returns a stable id for a prefix and key: the same service in the same namespace
// gets the same id in every scan, so rescans update rather than duplicate. It is a ULID-shaped
// string (26 characters of Crockford's base32) made from a SHA-256 of the key; its time part
// means nothing.
func derivedID(prefix, namespace, key string) string {
	sum := sha256.Sum256([]byte(prefix + "\x00" + namespace + "\x00" + strings.ToLower(key)))
	var u ulid.ULID
	copy(u[:], sum[:16])
	u[0] &= 0x7f // keep the first character within ULID's range (0-7)
	return prefix + "_" + u.String()
}

func ptr[T any](v T) *T { return &v }
