package intel

import (
	"regexp"
	"strings"
	"time"

	"svc.dev/svc/mail"
)

// Observation is what one message says about a service's billing: the facts extraction found,
// each with the line that shows it. Observations are the scan's state: a service layer that
// scans incrementally keeps them (they are JSON) and gives them back with Scanner.Restore.
type Observation struct {
	Ref        string    `json:"ref"`                 // the Message-ID as written, with angle brackets; else the source ref
	SourceRef  string    `json:"sourceRef,omitempty"` // where the message was read (a path, "path#offset", an object id)
	SourceID   string    `json:"sourceId,omitempty"`
	Date       time.Time `json:"date"`
	ServiceKey string    `json:"serviceKey"` // the registrable domain, or "name:" and the display name for mail sent through a payment processor
	Service    string    `json:"service"`
	Domain     string    `json:"domain,omitempty"`

	Charge     bool   `json:"charge,omitempty"`     // a receipt or invoice: money was or will be taken
	OneTime    bool   `json:"oneTime,omitempty"`    // an order or purchase, not a subscription
	Recurring  bool   `json:"recurring,omitempty"`  // the message speaks of a subscription, plan or renewal
	CreditNote bool   `json:"creditNote,omitempty"` // a credit note or refund
	Activity   bool   `json:"activity,omitempty"`   // a notice of the user's use of the service
	Currency   string `json:"currency,omitempty"`

	Total    *int64 `json:"total,omitempty"`
	Subtotal *int64 `json:"subtotal,omitempty"`
	Tax      *int64 `json:"tax,omitempty"`
	Credits  *int64 `json:"credits,omitempty"` // credits applied, as a positive number
	Overage  *int64 `json:"overage,omitempty"`
	Base     *int64 `json:"base,omitempty"` // the plan or subscription line
	Fees     []Fee  `json:"fees,omitempty"`

	Period      BillingPeriod `json:"period,omitempty"`
	PeriodStart time.Time     `json:"periodStart,omitzero"`
	PeriodEnd   time.Time     `json:"periodEnd,omitzero"`
	Plan        string        `json:"plan,omitempty"`
	Seats       int           `json:"seats,omitempty"`
	SeatPrice   *int64        `json:"seatPrice,omitempty"`
	SeatsAdded  bool          `json:"seatsAdded,omitempty"`
	Usage       string        `json:"usage,omitempty"`
	Allowance   string        `json:"allowance,omitempty"`
	Unit        string        `json:"unit,omitempty"`
	Rate        string        `json:"rate,omitempty"`

	OldPrice    *int64    `json:"oldPrice,omitempty"` // an announced price change
	NewPrice    *int64    `json:"newPrice,omitempty"`
	PriceDrop   bool      `json:"priceDrop,omitempty"`
	EffectiveAt time.Time `json:"effectiveAt,omitzero"`

	TeaserPrice  *int64    `json:"teaserPrice,omitempty"`
	RegularPrice *int64    `json:"regularPrice,omitempty"`
	TeaserEnd    time.Time `json:"teaserEnd,omitzero"`

	CreditGrant     *int64    `json:"creditGrant,omitempty"`
	CreditExpiry    time.Time `json:"creditExpiry,omitzero"`
	CreditRemaining *int64    `json:"creditRemaining,omitempty"`
	CreditsOut      bool      `json:"creditsOut,omitempty"`

	AutoUpgrade bool `json:"autoUpgrade,omitempty"`
	SelfChange  bool `json:"selfChange,omitempty"` // the user changed the plan themselves
	Cancelled   bool `json:"cancelled,omitempty"`

	TrialStart      bool          `json:"trialStart,omitempty"`
	TrialNotice     bool          `json:"trialNotice,omitempty"` // a trial is running or ending
	TrialDays       int           `json:"trialDays,omitempty"`
	TrialEnd        time.Time     `json:"trialEnd,omitzero"`
	PriceAfterTrial *int64        `json:"priceAfterTrial,omitempty"`
	TrialCadence    BillingPeriod `json:"trialCadence,omitempty"`

	Unsubscribe Unsubscribe `json:"unsubscribe,omitzero"`
	// Excerpts are the lines that show each fact, keyed by the fact ("total", "overage", ...).
	Excerpts map[string]string `json:"excerpts,omitempty"`

	totalStrength int
}

// Fee is a fee line of a bill that is neither the price, a tax nor usage.
type Fee struct {
	Label string `json:"label"`
	Cents int64  `json:"cents"`
}

func (o *Observation) excerpt(key, line string) {
	if o.Excerpts == nil {
		o.Excerpts = map[string]string{}
	}
	if _, ok := o.Excerpts[key]; !ok {
		o.Excerpts[key] = cut(line, MaxExcerpt)
	}
}

// cut shortens s to at most n characters (runes).
func cut(s string, n int) string {
	s = strings.TrimSpace(s)
	i := 0
	for j := range s {
		if i == n {
			return strings.TrimSpace(s[:j])
		}
		i++
	}
	return s
}

var (
	reCharge      = mk(`(?i)\b(receipts?|invoices?|payment (received|confirmation|confirmed|successful|processed)|thanks? (you )?for your (payment|purchase|order)|amount (paid|charged|due|billed)|we('ve| have)? (successfully )?(charged|billed)|has been (charged|billed|renewed)|(was|were) (charged|billed)|your (bill|statement) (is ready|for)|billing (summary|statement)|renewal (confirmation|receipt)|subscription (renewed|renewal|receipt)|total (charged|due|paid)|payment of|charged to your|credit note|refund(ed)?)\b`, "receipt", "invoice", "payment ", "for your ", "amount ", "charged", "billed", "renewed", "your bill", "your statement", "billing ", "renewal ", "subscription ", "total ", "credit note", "refund")
	reRecurring   = mk(`(?i)\b(subscriptions?|renews?|renewal|renewed|auto-?renew\w*|recurring|monthly|yearly|annual(ly)?|quarterly|weekly|per (month|year|week|quarter)|/ ?(mo|month|yr|year|wk|week)\b|membership|billing (period|cycle|date)|next (billing|payment|charge|invoice)|plan)\b`, "subscri", "renew", "recurring", "month", "year", "annual", "quarter", "week", "/mo", "/ mo", "/yr", "/ yr", "/wk", "/ wk", "membership", "billing", "next ", "plan")
	reOrder       = mk(`(?i)\b(order (confirmation|confirmed|number|no\.?|#)|your order|has shipped|shipment|tracking (number|#)|out for delivery|estimated delivery|ship(ping)? to|items? ordered|booking (confirmation|reference)|e-ticket|itinerary|one-time (purchase|payment)|gift card)\b`, "order", "ship", "tracking", "delivery", "booking", "ticket", "itinerary", "one-time", "gift card", "items")
	reBank        = mk(`(?i)\b(statement balance|minimum payment( due)?|available (balance|credit)|transaction alert|account ending in|direct deposit|(checking|savings) account|your card (ending in \d{4} )?was used|purchase (of|for) [^.\n]{0,20} at |wire transfer|overdraft|credit limit|new transaction)\b`, "statement balance", "minimum payment", "available balance", "available credit", "transaction alert", "new transaction", "account ending", "direct deposit", "checking account", "savings account", "your card", "purchase of", "purchase for", "wire transfer", "overdraft", "credit limit")
	reSplit       = mk(`(?i)\b(you owe|owes you|split (the|this|it|costs?)|your share|settle up|paid you|sent you|requested [^.\n]{0,12}from you|splitwise|venmo|reimburse( me)?|chip in|pay me back|iou)\b`, "you owe", "owes you", "split", "your share", "settle up", "paid you", "sent you", "requested", "splitwise", "venmo", "reimburse", "chip in", "pay me back", "iou")
	rePromo       = mk(`(?i)\b(upgrade (now|today|and save)|limited[- ]time|\d+% off|save (up to )?\d+%|special offer|exclusive (offer|deal)|don'?t miss|act now|last chance|start your (free )?trial|try [^.\n]{0,30} (free|for \$)|claim your|unlock|get (\d+ months? )?(free|for \$)|deal|sale ends|promo code|coupon|sign up (now|today)|only \$[\d.]+ ?/ ?mo)\b`, "upgrade ", "limited", "% off", "save ", "special offer", "exclusive ", "t miss", "act now", "last chance", "start your ", "try ", "claim your", "unlock", "get ", "deal", "sale ends", "promo code", "coupon", "sign up ", "only $")
	reTrialStart  = mk(`(?i)(\b(your|the) (free |\d+[- ]day (free )?)?trial (has (officially )?(started|begun)|is (now )?(active|live|underway)|starts (today|now)|begins (today|now)|period (has )?(started|begun))|welcome to your (free |\d+[- ]day (free )?)?trial|(thanks|thank you) for (starting|trying|signing up for) (a |your |the )?(free |\d+[- ]day )*trial|you('ve| have) (started|activated|begun) (a |your |the )?(free |\d+[- ]day )*trial|trial (activated|confirmed))`, "trial")
	reTrialNotice = mk(`(?i)\b(trial (ends|will end|expires|will expire|is ending|ending soon|is about to end|period ends|runs (until|through))|(days?|hours?) left (in|on) your (free )?trial|(end|expiry) of your (free )?trial|your trial (has )?(ended|expired)|after your (free )?trial)\b`, "trial")
	reCancel      = mk(`(?i)(\b(your|the) (subscription|membership|plan|trial|account|free trial)( to [^.\n]{1,30})? (has been|is now|was|is) (cancel+ed|terminated|ended|canceled)|we('ve| have) (cancel+ed|ended) your (subscription|membership|trial|plan)|you('ve| have) (successfully )?cancel+ed|cancel+ation (confirmed|confirmation|is complete)|sorry to see you go|won'?t be (charged|billed) (again|anymore|any more))`, "cancel", "terminated", "ended", "sorry to see", "be charged", "be billed")
	reAutoUpgrade = mk(`(?i)(automatically (upgraded|moved|switched|changed|bumped)|we('ve| have) (upgraded|moved|switched|bumped) (you|your (account|plan|workspace|subscription|team))|(plan|account|workspace|subscription) (has been|was) (automatically )?(upgraded|moved up|bumped)|upgraded [^.\n]{0,40}because (you|your [a-z]+) (exceeded|went over|reached|outgrew|passed)|moved (you )?to (the |a )?(higher|next|larger) (tier|plan))`, "upgrad", "moved", "switched", "bumped", "changed", "higher", "next tier", "larger")
	reSelfChange  = mk(`(?i)(\byou('ve| have)? (upgraded|switched|changed|moved|downgraded|chose|selected|picked)\b|thanks for upgrading|thank you for upgrading|as you requested|at your request|your (requested|chosen|new) plan (is|has been) (active|confirmed)|plan change (request )?(confirmed|confirmation))`, "you've", "you have", "you upgraded", "you switched", "you changed", "you moved", "you downgraded", "you chose", "you selected", "you picked", "thanks for upgrading", "thank you for upgrading", "as you requested", "at your request", "requested plan", "chosen plan", "new plan", "plan change")
	rePriceChange = mk(`(?i)\b(price (change|increase|update|adjustment)|(new|updated|higher) (price|pricing|rate)|prices? (will )?(go(es|ing)? up|increas|rise|rising|chang)|(increase|raise|raising|update|updating|change|changing|adjust|adjusting)[a-z]* (the |our |your )?(price|pricing|rate|subscription fee)|will (now )?(cost|be)|will (increase|rise|go up|change)|renew(s|al)? at|going forward)`, "price", "pricing", "rate", "cost", "will", "renew", "going forward", "fee")
	rePriceDrop   = mk(`(?i)\b(price (decrease|drop|reduction|cut)|(lower|reduced|reducing|cheaper) (price|pricing|rate)|prices? (will )?(go(es|ing)? down|decreas|drop|fall)|(lowering|reducing|cutting|decreasing) (the |our |your )?(price|pricing|rate))`, "price", "pricing", "rate")
	reTeaser      = mk(`(?i)\b(introductory|intro (price|rate|offer|period)|promotional (price|rate|period|pricing)|promo (price|rate|period)|first (\d+|one|two|three|six|twelve) (months?|weeks?|years?)|for your first (month|year|\d+ months?)|first[- ](month|year) (price|discount|offer)|discounted (rate|price|period)|special (introductory )?rate)\b`, "intro", "promo", "first", "discount", "special")
	reTeaserThen  = mk(`(?i)\b(then|after (that|which|this|the promotion|your (promo|promotion|introductory|intro|discount))|thereafter|regular(ly)? (price|rate)?|standard (price|rate)|normal (price|rate)|full price|reverts? to|renews at|goes up to|returns to)\b`, "then", "after", "thereafter", "regular", "standard", "normal", "full price", "revert", "renews at", "goes up", "returns to")
	reCreditGrant = mk(`(?i)(\b(free|promotional|promo|welcome|trial|starter|bonus|sign-?up|startup|launch) credits?\b|\bcredits? (have been |has been |were |was )?(added|granted|applied to your account|issued)|\bin (free )?credits\b|\bcredits? (grant|balance)\b)`, "credit")
	reCreditLeft  = mk(`(?i)\b(credits? (remaining|left|balance)|remaining (credits?|credit balance|balance of credits)|credit balance( is| of)?)\b`, "credit")
	reCreditsOut  = mk(`(?i)\b(credits? (have |has )?(run out|been (used up|exhausted|depleted|fully used|consumed))|(used up|exhausted|depleted|run out of) (all )?(your |the )?(free |promotional )?credits?|no (free |promotional )?credits? (remaining|left)|credits? (expired|have expired|will expire|expire|expiring)|out of credits)\b`, "credit")
	reOverage     = mk(`(?i)\b(overages?|over (your|the) (plan|limit|allowance|included|quota|cap)|beyond (your |the )?(included|plan|allowance|quota)|above (your |the )?(included|allowance|plan)|additional usage|excess (usage|data)|extra usage|exceeded|out-of-plan|over-limit)\b`, "overage", "over ", "beyond", "above", "additional", "excess", "extra", "exceeded", "out-of-plan", "over-limit")
	reFee         = mk(`(?i)\b((fuel |energy |regulatory |regulatory recovery |cost recovery |peak |holiday |delivery |card |credit card |payment |processing |service |platform |convenience |handling |administrative |admin |compliance |network access |infrastructure |booking |transaction |paper bill |late )(fee|surcharge|charge)|surcharge)\b`, "fee", "surcharge", "charge")
	reTax         = mk(`(?i)\b(tax(es)?|vat|gst|hst|pst|mwst|iva|tva|sales tax)\b`, "tax", "vat", "gst", "hst", "pst", "mwst", "iva", "tva")
	reSubtotal    = mk(`(?i)\b(sub-?total|net amount|amount before tax|total before tax)\b`, "sub", "net amount", "before tax")
	reCreditLine  = mk(`(?i)\b(credits?|discount|promo|coupon|adjustment)\b`, "credit", "discount", "promo", "coupon", "adjustment")
	reTotal       = mk(`(?i)\b(total|amount (due|paid|charged|billed)|balance due|charged|billed|paid|payment|you (will )?pay|to pay|invoice amount)\b`, "total", "amount", "balance", "charged", "billed", "paid", "payment", "pay")
	reFinal       = mk(`(?i)\b(amount (due|paid|charged|billed)|total (due|paid|charged)|balance due|grand total|invoice total|we('ve| have)? charged|charged to|has been charged|was charged|you paid)\b`, "amount", "total", "balance", "charged", "paid")
	rePlanLine    = mk(`(?i)\b(plan|subscription|membership|tier|license|edition)\b`, "plan", "subscription", "membership", "tier", "license", "edition")
	rePlanName    = regexp.MustCompile(`(?:(?i:plan|tier|edition|package)\s*[:\-–]\s*|(?i:your|the|on the|to the|to)\s+)([A-Z][A-Za-z0-9+]*(?:\s[A-Z0-9][A-Za-z0-9+]*){0,2})(?:\s+(?i:plan|tier|subscription|membership|edition))?`)
	reSeats       = regexp.MustCompile(`(?i)\b(\d{1,5})\s*(?:x\s*)?(?:active |paid |billable )?(seats?|users?|licen[cs]es?|members?|editors?|agents?)\b|\b((?:seats?|users?|licen[cs]es?)\s*(?:\(|:|-|–)?\s*)(\d{1,5})\b`)
	reSeatsAdded  = mk(`(?i)\b((new )?(seats?|users?|licen[cs]es?|members?) (were|was|have been|has been) (automatically )?(added|provisioned|billed)|added (\d+ )?(new )?(seats?|users?|licen[cs]es?|members?)|(seat|user|licen[cs]e) count (increased|went up|grew|changed))\b`, "seat", "user", "licen", "member")
	reUsage       = regexp.MustCompile(`(?i)\b(?:used|usage|consumed|you('ve| have) used|total usage)[^\n\d]{0,25}([\d][\d,.]*)\s*(gb|tb|mb|gib|tib|hours?|hrs|minutes?|mins|requests|calls|api calls|messages|emails|sms|texts|tokens|builds?|credits|units|seats|compute hours|vcpu-hours|events|rows|executions)\b`)
	reAllowance   = regexp.MustCompile(`(?i)(?:\b([\d][\d,.]*)\s*(gb|tb|mb|gib|tib|hours?|hrs|minutes?|mins|requests|calls|api calls|messages|emails|sms|texts|tokens|builds?|credits|units|compute hours|vcpu-hours|events|rows|executions)\s*(?:included|allowance|are included|free|per month included)|\b(?:includes?|included|allowance( of)?|of)\s+([\d][\d,.]*)\s*(gb|tb|mb|gib|tib|hours?|hrs|minutes?|mins|requests|calls|api calls|messages|emails|sms|texts|tokens|builds?|credits|units|compute hours|vcpu-hours|events|rows|executions)\s*(?:included|allowance|per month|a month|each month)?)`)
	reRate        = regexp.MustCompile(`(?i)(\$|€|£|USD ?|EUR ?)\s?(\d+(?:[.,]\d+)?)\s*(?:/|per|each|an?)\s*(?:additional |extra )?(\d[\d,]*\s*)?(gb|tb|mb|gib|hour|hr|minute|min|request|call|api call|message|email|sms|text|token|build|credit|unit|compute hour|vcpu-hour|event|row|execution|seat|user|license|member)s?\b`)
	reTrialDays   = mk(`(?i)\b(\d{1,3})[- ](day|week|month)s?[- ](free[- ])?trial\b|\btrial (period )?of (\d{1,3}) (day|week|month)s?\b`, "trial")
	reAfterTrial  = mk(`(?i)\b(after (the|your) (free )?trial|when (the|your) (free )?trial ends|at the end of (the|your) (free )?trial|once (the|your) (free )?trial ends|trial (ends|converts)|you('ll| will) (then )?be (charged|billed)|will (automatically )?(be charged|renew|convert|start billing)|then)\b`, "trial", "charged", "billed", "renew", "convert", "then", "start billing")
	reServicePer  = mk(`(?i)\b(period|service (from|dates?)|billing (period|cycle)|coverage|for the (month|week|year|quarter) of|from .* (to|through|until|-))`, "period", "service", "billing", "coverage", "for the", "from")
	reEndWord     = mk(`(?i)\b(ends?|expires?|expiring|until|through|on|by|effective|starting|from|beginning|as of)\b`, "end", "expir", "until", "through", "on", "by", "effective", "start", "from", "begin", "as of")
	reScam        = mk(`(?i)\b(confirm your (card|payment details|billing)|verify your (card|payment)|click here|congratulations|you('ve| have) been (selected|chosen)|winner|miracle|only pay (for )?shipping|risk[- ]free|100% free|act now|urgent(ly)?[: ]+(action|response))\b`, "confirm your", "verify your", "click here", "congratulations", "been selected", "been chosen", "winner", "miracle", "only pay", "risk-free", "risk free", "100% free", "act now", "urgent")
	reValidUntil  = mk(`(?i)\b(valid (until|through|till)|good (until|through)|expir(e|es|ing|y)( on| date)?|use (it |them )?(by|before|until))\b`, "valid", "good", "expir", "use ")
	reFailed      = mk(`(?i)\b(payment (failed|declined|was declined|was unsuccessful|did not go through)|(unable|failed) to (charge|process|collect)|(couldn'?t|could not) (charge|process|collect)|card (was )?declined|past due|overdue|will retry|update your payment (method|details))\b`, "fail", "declin", "unsuccessful", "unable", "couldn", "could not", "past due", "overdue", "retry", "update your payment", "did not go through")
	reRefund      = mk(`(?i)\b(refunded|refund (of|amount|issued|processed|has been)|your refund|we('ve| have) (refunded|credited|reversed))\b`, "refund", "credited", "reversed")
	reNotYours    = mk(`(?i)\b(new (customers?|subscribers?|members?|users?|sign-?ups?)|existing (customers?|subscribers?|members?|users?) (keep|will keep|are not affected|won'?t be affected)|(does|will) not affect (you|your)|not affect(ed)? (you|your))\b`, "new ", "existing", "affect")
	reYours       = mk(`(?i)(\b(you|your|yours)\b|\benjoy\b)`, "you", "enjoy")
	reEndsIn      = regexp.MustCompile(`\b(ends?|expires?|is over|will end|runs out|ending) (in (\d{1,2}) days?|tomorrow)\b`)
	reForwarded   = regexp.MustCompile(`(?i)(-{2,}\s*forwarded message\s*-{2,}|begin forwarded message:|-{2,}\s*original message\s*-{2,})`)
	reManage      = regexp.MustCompile(`(?i)https?://[^\s<>"]*(manage|cancel|billing|account|subscription|settings)[^\s<>"]*`)
	reActivity    = mk(`(?i)\b(your (weekly|monthly|daily) (summary|report|digest|recap)|you (created|uploaded|completed|finished|shared|published|exported|watched|listened|logged|tracked|saved|synced|backed up)|(new|recent) (activity|comment|reply|follower|message|sign-in)|(was|were|has been|have been) (shared|uploaded|exported|completed|synced|backed up)|is ready to (download|view)|(backup|export|sync|report) (complete|completed|finished|ready))\b`, "summary", "report", "digest", "recap", "created", "uploaded", "completed", "finished", "shared", "published", "exported", "watched", "listened", "logged", "tracked", "saved", "synced", "backed up", "activity", "comment", "reply", "follower", "new message", "sign-in", "ready to", "complete", "backup", "export", "sync", "recent message")
)

// periodWords are the phrases that name a billing period, strongest first (of two at the same
// place, the first named here wins).
var periodWords = []struct {
	re kre
	p  BillingPeriod
}{
	{mk(`(?i)(\bper week\b|/ ?(wk|week)\b|\bweekly\b|\bevery week\b|\beach week\b|\ba week\b)`, "week", "/wk", "/ wk"), Weekly},
	{mk(`(?i)(\bquarterly\b|\bper quarter\b|/ ?(qtr|quarter)\b|\bevery (3|three) months\b|\beach quarter\b)`, "quarter", "qtr", "months"), Quarterly},
	{mk(`(?i)(\bper year\b|/ ?(yr|year)\b|\bannual(ly)?\b|\byearly\b|\bevery year\b|\beach year\b|\ba year\b|\b12[- ]month (plan|subscription|term)\b)`, "year", "/yr", "/ yr", "annual", "12-month", "12 month"), Annual},
	{mk(`(?i)(\bper month\b|/ ?(mo|month)\b|\bmonthly\b|\bevery month\b|\beach month\b|\ba month\b|\bmonth-to-month\b)`, "month", "/mo", "/ mo"), Monthly},
	{mk(`(?i)(\bpay[- ]as[- ]you[- ]go\b|\busage[- ]based\b|\bmetered (billing|usage)\b|\bbilled (on|by) usage\b)`, "pay-as", "pay as", "usage", "metered"), Usage},
}

// periodIn returns the billing period a text names, or "".
func periodIn(s string) BillingPeriod { return periodInLow(strings.ToLower(s)) }

// periodInLow is periodIn of a lowercased text: the period whose phrase comes first. Each
// phrase is looked for only on the lines that hold one of its words (a bill's 16 KiB were
// searched whole, five times, for every message that might be billing).
func periodInLow(low string) BillingPeriod {
	best, pos := BillingPeriod(""), -1
	for _, w := range periodWords {
		if i := w.re.index(low, pos); i >= 0 && (pos < 0 || i < pos) {
			best, pos = w.p, i
		}
	}
	return best
}

// period from a service period's length in days.
func periodOfSpan(days int) BillingPeriod {
	switch {
	case days >= 5 && days <= 9:
		return Weekly
	case days >= 26 && days <= 33:
		return Monthly
	case days >= 85 && days <= 95:
		return Quarterly
	case days >= 355 && days <= 370:
		return Annual
	}
	return ""
}

// extract turns a read message into an observation of a service, or nil when the message says
// nothing about one (it is personal, a list, spam, bank mail, cost splitting, or not billing).
func extract(d *mail.Document, ref, sourceID string, freemail func(string) bool) *Observation {
	if notBilling(d.Message) {
		return nil
	}
	body := d.Body()
	subject := d.Subject
	from, date := d.From, d.Date
	forwarded := false
	if len(d.Forwarded) > 0 && d.Forwarded[0].From.Addr != "" {
		from, forwarded = d.Forwarded[0].From, true
		if !d.Forwarded[0].Date.IsZero() {
			date = d.Forwarded[0].Date
		}
		subject = d.Forwarded[0].Subject
	} else if loc := forwardMark(body); loc != nil {
		if f, dt, s, ok := inlineForward(body[loc[1]:], date); ok {
			from, date, subject, forwarded = f, dt, s, true
			body = body[loc[1]:]
		}
	}
	dom := domainOf(from.Addr)
	if dom == "" || freemail(dom) {
		return nil // a person (a forward from a person's mailbox is the original sender's)
	}
	// Facts are read from the first 16 KiB of text (below): nothing past it is looked at, so
	// a newsletter's 64 KiB is not lowercased and searched whole.
	text := firstN(subject+"\n"+firstN(body, 16<<10), 16<<10) // not a copy of a newsletter's 64 KiB first
	ltext := strings.ToLower(text)
	replyTo := d.ReplyTo
	if len(d.Forwarded) > 0 && forwarded {
		replyTo = d.Forwarded[0].ReplyTo
	}
	key, service, domain := serviceOf(from, dom, replyTo)
	o := &Observation{Ref: msgRef(d.Message, ref), SourceRef: ref, SourceID: sourceID, Date: date, ServiceKey: key, Service: service, Domain: domain}

	// Cheap words first: mail with no sum and none of the words of a trial, a cancellation or a
	// plan, seat or credit notice is at most a notice of the user's activity (which tells
	// whether a trial is being used), judged on its start.
	hasMoney := hasMoneyHint(text)
	if !hasMoney && !strings.Contains(ltext, "trial") && !containsAny(ltext, reCancel.keys) && !containsAny(ltext, noticeWords) {
		head, lhead := firstN(text, 600), firstN(ltext, 600)
		if rePromo.in(head, lhead) || !reActivity.in(head, lhead) {
			return nil
		}
		o.Activity = true
		return o
	}
	// What kind of mail it is shows near its start: classify on the first 8 KiB (a
	// newsletter's text runs to 64 KiB); facts are read from every line below.
	// One pass of the keyword automaton over it, then each expression only on the lines
	// holding one of its words.
	ix := keyIndexes.Get().(*keyIndex)
	defer func() { ix.low = ""; keyIndexes.Put(ix) }()
	ix.index(firstN(ltext, 8<<10))
	// Bank mail, people splitting costs and scams are nobody's subscription: asked only of a
	// message that would otherwise be kept (most mail is dropped by the checks below first,
	// and these three are the dearest).
	notTheUsers := func() bool { return ix.has(reBank) || ix.has(reSplit) || ix.has(reScam) }
	charge := ix.has(reCharge)
	trialStart := ix.has(reTrialStart)
	cancelled := ix.has(reCancel)
	// Whether it is a promotion is asked only when it matters (a bill's lines need not run
	// the promotion expression), and then once.
	promoAsked, isPromo := false, false
	promo := func() bool {
		if !promoAsked {
			promoAsked, isPromo = true, ix.has(rePromo)
		}
		return isPromo
	}
	if !charge && !trialStart && !cancelled && promo() {
		return nil // a promotion's prices are offers, not the user's billing
	}
	trialNotice := ix.has(reTrialNotice)
	notice := ix.has(reAutoUpgrade) || ix.has(reSelfChange) || ix.has(reSeatsAdded) || ix.has(reCreditsOut)
	if !hasMoney && !trialStart && !trialNotice && !cancelled && !notice {
		if promo() || !ix.has(reActivity) || notTheUsers() {
			return nil
		}
		o.Activity = true
		return o
	}
	if !charge && !trialStart && !trialNotice && !cancelled && !notice && !ix.has(reYours) {
		// Neither a bill nor a trial, cancellation or plan notice, and not addressed to the
		// user's account: prices in an article or a newsletter are about other people.
		if !promo() && ix.has(reActivity) && !notTheUsers() {
			o.Activity = true
			return o
		}
		return nil
	}
	if notTheUsers() {
		return nil
	}
	o.Recurring = ix.has(reRecurring)
	o.OneTime = ix.has(reOrder) && !o.Recurring
	o.Cancelled = cancelled
	o.TrialStart = trialStart
	o.TrialNotice = trialNotice || trialStart
	// Excerpts come from the body when it says it (the subject is only a headline).
	if trialStart || trialNotice {
		o.excerpt("trial", firstNonEmpty(firstLine(body, reTrialStart, reTrialNotice), firstLine(text, reTrialStart, reTrialNotice)))
	}
	if cancelled {
		o.excerpt("cancel", firstNonEmpty(firstLine(body, reCancel), firstLine(text, reCancel)))
	}
	o.Charge = charge && !trialStart && !ix.has(reFailed)
	if o.OneTime && !o.TrialNotice && !o.Cancelled && !notice {
		return nil // an order or one-time purchase: no meter is made of it
	}
	o.Period = periodInLow(ltext)

	// Facts are read from the first 16 KiB of text: a bill, with its PDF, fits; a long
	// newsletter need not be read to its end.
	ls := splitLines(firstN(text, 16<<10))
	for i, line := range ls {
		o.line(line, ls, i, date)
	}
	if o.Charge {
		o.settleTotal()
		if o.Total == nil {
			o.Charge = false
		}
	}
	if !o.PeriodStart.IsZero() && !o.PeriodEnd.IsZero() {
		if p := periodOfSpan(int(o.PeriodEnd.Sub(o.PeriodStart).Hours()/24) + 1); p != "" && o.Period == "" {
			o.Period = p
		}
	}
	if head := strings.ToLower(subject + " " + firstN(body, 400)); strings.Contains(head, "credit note") || reRefund.in(head, head) {
		o.CreditNote = true
		if o.Total != nil && *o.Total > 0 {
			*o.Total = -*o.Total
		}
	}
	if !o.Charge && !o.TrialNotice && !o.Cancelled && !o.billingNotice() {
		if ix.has(reActivity) && !promo() {
			return &Observation{Ref: o.Ref, SourceRef: ref, SourceID: sourceID, Date: date, ServiceKey: key, Service: service, Domain: domain, Activity: true}
		}
		return nil
	}
	o.Unsubscribe = unsubscribeOf(d.Message, o.Ref, body)
	return o
}
