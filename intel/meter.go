package intel

import (
	"math"
	"slices"
	"sort"
	"time"
)

// Thresholds of the trap rules (docs/intel.md explains each).
const (
	// RenewalJumpMin is the smallest rise of a renewal's price over the last one that is a
	// renewal jump when no mail announced it.
	RenewalJumpMin = 0.10
	// VariableMinCV is the coefficient of variation of a service's last twelve bills above which its
	// bill is variable.
	VariableMinCV = 0.20
	// VariableMinBills is how many bills a variable-bill decision needs.
	VariableMinBills = 3
	// SeatGrowthMin is the smallest rise in seats (relative) that is seat growth when the seats
	// rose once; two rises are growth whatever their size.
	SeatGrowthMin = 0.15
)

// service is what the scan knows of one service: its observations, oldest first.
type service struct {
	key, name, domain string
	obs               []*Observation
	activity          []time.Time
}

// trap is a trap decided for a meter, with what shows it.
type trap struct {
	kind      TrapType
	rule      Rule // the evidence pattern it rests on, whose measured precision is its confidence
	driver    string
	evidence  []*Observation
	keys      []string // excerpt keys of the evidence, in order of preference
	projected *int64
	at        time.Time // when the projection takes effect
	threshold *int64
	derived   string // how the projection was made
}

// meterOf builds the meter of a service, or reports false when the service is not a recurring
// paid service (no charge, one-off orders only).
func meterOf(s *service, namespace string, asOf time.Time) (Meter, bool) {
	var charges, notes []*Observation
	oneOff, recurring := 0, 0
	for _, o := range s.obs {
		if o.Date.After(asOf) {
			continue
		}
		switch {
		case o.CreditNote:
			notes = append(notes, o)
		case o.Charge && o.Total != nil:
			charges = append(charges, o)
			if o.OneTime {
				oneOff++
			}
			if o.Recurring || o.Period != "" || !o.PeriodStart.IsZero() {
				recurring++
			}
		}
	}
	if len(charges) == 0 || recurring == 0 && (oneOff == len(charges) || !regular(charges)) {
		return Meter{}, false
	}
	// Only the recurring charges make up the meter's periods when there are both.
	if oneOff > 0 && oneOff < len(charges) {
		charges = slices.DeleteFunc(charges, func(o *Observation) bool { return o.OneTime })
	}
	charges = dedupCharges(charges)
	m := Meter{
		ID:            derivedID("mtr", namespace, s.key),
		Service:       s.name,
		ServiceDomain: s.domain,
		Action:        Watch,
		LastUpdated:   asOf.UTC(),
	}
	m.BillingPeriod = billingPeriod(charges, s.obs)
	last := charges[len(charges)-1]
	cur := max(*last.Total, 0)
	m.CurrentPeriodCostCents = ptr(cur)
	var prev *Observation
	if len(charges) >= 2 {
		prev = charges[len(charges)-2]
		p := max(*prev.Total, 0)
		m.PreviousPeriodCostCents = ptr(p)
		m.ChangeCents = ptr(cur - p)
		if p > 0 {
			m.ChangePercent = ptr(math.Round(float64(cur-p)/float64(p)*10000) / 100)
		}
	}
	for i := len(charges) - 1; i >= 0; i-- {
		o := charges[i]
		if m.Plan == "" && o.Plan != "" {
			m.Plan = o.Plan
		}
		if m.IncludedAllowance == "" && o.Allowance != "" {
			m.IncludedAllowance = o.Allowance
		}
		if m.ObservedUsage == "" && o.Usage != "" && i == len(charges)-1 {
			m.ObservedUsage = o.Usage
		}
		if m.MeterUnit == "" && o.Unit != "" {
			m.MeterUnit = o.Unit
		}
		if m.MeterRate == "" && o.Rate != "" {
			m.MeterRate = o.Rate
		}
	}
	if last.Overage != nil {
		m.ObservedOverageCents = ptr(*last.Overage)
	}
	if b := basePrice(charges); b != nil {
		m.BasePriceCents = b
	}
	t := decideTrap(s, charges, notes, m.BillingPeriod, asOf)
	m.TrapType = t.kind
	m.Rule = t.rule
	m.Confidence = RuleConfidence(t.rule)
	m.PrimaryDriver = t.driver
	if t.kind != NoTrap && cur > 0 {
		m.Concentration = concentration(t, last, cur)
	}
	// Evidence: the trap's messages, then the last two bills.
	seen := map[*Observation]bool{}
	add := func(o *Observation, keys ...string) {
		if seen[o] || len(m.Evidence) >= 6 {
			return
		}
		seen[o] = true
		m.Evidence = append(m.Evidence, evidenceOf(o, keys...))
	}
	for _, o := range t.evidence {
		add(o, t.keys...)
	}
	add(last, "total")
	if prev != nil {
		add(prev, "total")
	}
	// Projections are estimates, and say so. A projection below zero is no projection.
	for _, p := range []**int64{&t.projected, &t.threshold, &m.ObservedOverageCents, &m.BasePriceCents} {
		if *p != nil && **p < 0 {
			*p = nil
		}
	}
	m.EvidenceLevel = Detected
	if t.projected != nil {
		m.ProjectedPeriodCostCents = t.projected
		if t.threshold != nil {
			m.NextThresholdCents = t.threshold
		}
		if !t.at.IsZero() {
			m.ProjectedThresholdAt = ptr(t.at.UTC())
		}
		m.Evidence = append(m.Evidence, Evidence{Kind: KindDerived, Ref: "projection:" + string(t.kind), ObservedAt: asOf.UTC(), Excerpt: cut(t.derived, MaxExcerpt)})
		m.EvidenceLevel = Estimated
	}
	m.EvidenceLevel = honestLevel(m)
	return m, true
}

// honestLevel is the one place a meter's evidence level is decided: ESTIMATED when anything it
// shows is a projection or derived, DETECTED when all of it is mail (or statement, invoice)
// evidence, CONFIRMED only when every item is platform, API or settlement evidence.
func honestLevel(m Meter) EvidenceLevel {
	if m.ProjectedPeriodCostCents != nil || m.ProjectedThresholdAt != nil || m.NextThresholdCents != nil {
		return Estimated
	}
	confirmed := len(m.Evidence) > 0
	for _, e := range m.Evidence {
		switch e.Kind {
		case KindDerived:
			return Estimated
		case KindAPI:
		default:
			confirmed = false
		}
	}
	if confirmed {
		return Confirmed
	}
	return Detected
}

// dedupCharges drops a bill seen twice (the receipt and the invoice of one payment, a message
// and its forward): same amount within three days.
func dedupCharges(cs []*Observation) []*Observation {
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Date.Before(cs[j].Date) })
	out := cs[:0:0]
	for _, c := range cs {
		if n := len(out); n > 0 && *out[n-1].Total == *c.Total && c.Date.Sub(out[n-1].Date) < 72*time.Hour {
			// keep the richer of the two
			if len(c.Excerpts) > len(out[n-1].Excerpts) {
				out[n-1] = c
			}
			continue
		}
		out = append(out, c)
	}
	return out
}

// billingPeriod decides a service's billing period: what its bills say, else the length of the
// service periods they cover, else the spacing of the bills.
func billingPeriod(charges, all []*Observation) BillingPeriod {
	votes := map[BillingPeriod]int{}
	usage := 0
	for _, o := range charges {
		if !o.PeriodStart.IsZero() {
			if p := periodOfSpan(int(o.PeriodEnd.Sub(o.PeriodStart).Hours()/24) + 1); p != "" {
				votes[p] += 2
			}
		}
		if o.Period == Usage {
			usage++
		} else if o.Period != "" {
			votes[o.Period] += 2
		}
	}
	if len(charges) >= 2 {
		var gaps []float64
		for i := 1; i < len(charges); i++ {
			gaps = append(gaps, charges[i].Date.Sub(charges[i-1].Date).Hours()/24)
		}
		slices.Sort(gaps)
		if p := periodOfSpan(int(math.Round(gaps[len(gaps)/2]))); p != "" {
			votes[p] += 3
		}
	}
	best, n := BillingPeriod(""), 0
	for _, p := range []BillingPeriod{Monthly, Annual, Weekly, Quarterly} {
		if votes[p] > n {
			best, n = p, votes[p]
		}
	}
	if usage > 0 && usage*2 >= len(charges) && basePrice(charges) == nil {
		return Usage
	}
	if best == "" && usage == 0 {
		// The bills do not say: what the service's other mail says of its price (a trial's
		// "then $9.99 a month", a renewal reminder), when it says one thing.
		for _, o := range all {
			for _, p := range []BillingPeriod{o.TrialCadence, o.Period} {
				if p != "" && p != Usage {
					votes[p]++
				}
			}
		}
		for _, p := range []BillingPeriod{Monthly, Annual, Weekly, Quarterly} {
			if votes[p] > n {
				best, n = p, votes[p]
			}
		}
	}
	if best == "" {
		if usage > 0 {
			return Usage
		}
		return Unknown
	}
	return best
}

// basePrice is the plan's price: its line on the last bill that has one.
func basePrice(charges []*Observation) *int64 {
	for i := len(charges) - 1; i >= 0; i-- {
		if b := charges[i].Base; b != nil && *b > 0 {
			return ptr(*b)
		}
	}
	return nil
}
