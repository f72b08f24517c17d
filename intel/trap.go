package intel

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// decideTrap applies the trap rules in order; the first that holds is the meter's trap.
func decideTrap(s *service, charges, notes []*Observation, period BillingPeriod, asOf time.Time) trap {
	last := charges[len(charges)-1]
	cur := max(*last.Total, 0)
	recent := charges[max(0, len(charges)-3):]
	var notices []*Observation
	selfChange := false
	for _, o := range s.obs {
		if o.Date.After(asOf) {
			continue
		}
		notices = append(notices, o)
		if o.SelfChange {
			selfChange = true
		}
	}

	// 1. auto_upgrade: the service says it moved the user to a higher plan by itself.
	for _, o := range notices {
		if o.AutoUpgrade && !o.SelfChange {
			t := trap{kind: AutoUpgrade, rule: RuleAutoUpgrade, evidence: []*Observation{o}, keys: []string{"auto_upgrade"}}
			t.driver = "plan changed by the service"
			if o.Plan != "" {
				t.driver = "moved to the " + o.Plan + " plan by the service"
			}
			if np := nextPrice(o, charges); np != nil && *np != cur {
				t.projected, t.derived = np, fmt.Sprintf("next period at the upgraded plan's price %s", money(*np))
			}
			return t
		}
	}
	// 2. teaser_expiration: an introductory price with a higher price after it.
	for _, o := range notices {
		if o.TeaserPrice != nil && o.RegularPrice != nil && *o.RegularPrice > *o.TeaserPrice {
			t := trap{kind: TeaserExpiration, rule: RuleTeaser, evidence: []*Observation{o}, keys: []string{"teaser", "teaser_regular"}}
			t.driver = fmt.Sprintf("introductory price %s becomes %s", money(*o.TeaserPrice), money(*o.RegularPrice))
			if cur < *o.RegularPrice {
				// Still at the introductory price: what comes next is a projection. Once the bills
				// show the regular price, they say it themselves.
				t.projected, t.threshold = ptr(*o.RegularPrice), ptr(*o.RegularPrice)
				t.at = o.TeaserEnd
				t.derived = fmt.Sprintf("after the introductory period the price is %s (announced in mail)", money(*o.RegularPrice))
			}
			return t
		}
	}
	// 3. free_credit_exhaustion: free credits granted that run out or expire, leaving the user to pay.
	for _, o := range notices {
		if o.CreditGrant != nil || o.CreditsOut || (!o.CreditExpiry.IsZero() && (o.CreditRemaining != nil || o.Excerpts["credit_expiry"] != "")) {
			covered := int64(0)
			var ev []*Observation
			for _, c := range charges {
				if c.Credits != nil && *c.Credits > 0 {
					covered = *c.Credits
					ev = append(ev, c)
				}
			}
			if o.CreditGrant == nil && !o.CreditsOut && covered == 0 {
				continue
			}
			t := trap{kind: FreeCreditExhaustion, rule: RuleCreditsNotice, evidence: append([]*Observation{o}, ev...), keys: []string{"credit_grant", "credits_out", "credit_expiry", "credit_left", "credits"}}
			t.driver = "free credits running out"
			if o.CreditGrant != nil {
				t.driver = fmt.Sprintf("%s of free credits", money(*o.CreditGrant))
			}
			gross := cur + covered
			if last.Subtotal != nil && *last.Subtotal > gross {
				gross = *last.Subtotal
			}
			if gross > cur {
				t.projected = ptr(gross)
				t.threshold = ptr(gross)
				t.derived = fmt.Sprintf("without credits the last period would have cost %s", money(gross))
			}
			for _, x := range notices {
				if !x.CreditExpiry.IsZero() {
					t.at = x.CreditExpiry
				}
			}
			return t
		}
	}
	// 3b. free_credit_exhaustion seen in bills alone: credits paid most of two or more bills.
	var coveredBills []*Observation
	for _, c := range charges {
		if c.Credits != nil && *c.Credits > 0 && *c.Credits*10 >= (*c.Credits+max(*c.Total, 0))*9 {
			coveredBills = append(coveredBills, c)
		}
	}
	if len(coveredBills) >= 2 {
		lc := coveredBills[len(coveredBills)-1]
		t := trap{kind: FreeCreditExhaustion, rule: RuleCreditsCovered, evidence: []*Observation{lc}, keys: []string{"credits"}}
		t.driver = fmt.Sprintf("credits paid %d bills", len(coveredBills))
		gross := *lc.Credits + max(*lc.Total, 0)
		if gross > cur {
			t.projected, t.threshold = ptr(gross), ptr(gross)
			t.derived = fmt.Sprintf("without credits the last covered period would have cost %s", money(gross))
		}
		return t
	}
	// 4. renewal_jump, announced: a price rise the service announced (not one the user chose).
	for _, o := range notices {
		if o.NewPrice != nil && !o.PriceDrop && !o.SelfChange && (o.OldPrice == nil || *o.NewPrice > *o.OldPrice) {
			old := cur
			if o.OldPrice != nil {
				old = *o.OldPrice
			}
			if *o.NewPrice <= old && o.OldPrice == nil {
				continue
			}
			t := trap{kind: RenewalJump, rule: RulePriceChange, evidence: []*Observation{o}, keys: []string{"price_change"}}
			t.driver = fmt.Sprintf("price rises from %s to %s", money(old), money(*o.NewPrice))
			if cur < *o.NewPrice {
				t.projected, t.threshold, t.at = ptr(*o.NewPrice), ptr(*o.NewPrice), o.EffectiveAt
				t.derived = fmt.Sprintf("next period at the announced price %s", money(*o.NewPrice))
			}
			return t
		}
	}
	// 5. metered_overage: a recent bill charges usage beyond the plan's allowance.
	for i := len(recent) - 1; i >= 0; i-- {
		o := recent[i]
		if o.Overage != nil && *o.Overage > 0 {
			t := trap{kind: MeteredOverage, rule: RuleOverage, evidence: []*Observation{o}, keys: []string{"overage", "usage", "allowance"}}
			t.driver = fmt.Sprintf("overage %s", money(*o.Overage))
			if o.Usage != "" && o.Allowance != "" {
				t.driver = fmt.Sprintf("usage %s over %s included: overage %s", o.Usage, o.Allowance, money(*o.Overage))
			}
			t.projected = ptr(cur)
			t.threshold = ptr(nextThreshold(cur))
			t.derived = fmt.Sprintf("if usage stays as in the last period the next bill is about %s", money(cur))
			t.at = crossing(charges, *t.threshold, period)
			return t
		}
	}
	// 6. seat_growth: more seats bill after bill, or seats added by the service.
	first, lastSeats, rises := 0, 0, 0
	var seatObs []*Observation
	for _, o := range charges {
		if o.Seats > 0 {
			if first == 0 {
				first = o.Seats
			}
			if lastSeats > 0 && o.Seats > lastSeats {
				rises++
			}
			lastSeats = o.Seats
			seatObs = append(seatObs, o)
		}
	}
	if first > 0 && lastSeats > first && (float64(lastSeats-first)/float64(first) >= SeatGrowthMin || rises >= 2) && !selfChange {
		t := trap{kind: SeatGrowth, rule: RuleSeats, evidence: []*Observation{seatObs[len(seatObs)-1], seatObs[0]}, keys: []string{"seats"}}
		t.driver = fmt.Sprintf("seats grew from %d to %d", first, lastSeats)
		if sp := seatObs[len(seatObs)-1].SeatPrice; sp != nil && len(seatObs) >= 2 {
			growth := float64(lastSeats-first) / float64(len(seatObs)-1)
			next := cur + int64(math.Round(growth))*(*sp)
			t.projected, t.threshold = ptr(next), ptr(nextThreshold(cur))
			t.derived = fmt.Sprintf("if seats keep growing by %.1f a period at %s a seat, the next bill is about %s", growth, money(*sp), money(next))
			t.at = crossing(charges, *t.threshold, period)
		}
		return t
	}
	// 7. surcharge: fees beyond the price and tax on a recent bill.
	for i := len(recent) - 1; i >= 0; i-- {
		o := recent[i]
		if len(o.Fees) > 0 {
			var sum int64
			var names []string
			for _, f := range o.Fees {
				sum += f.Cents
				names = append(names, f.Label)
			}
			if sum <= 0 {
				continue
			}
			t := trap{kind: Surcharge, rule: RuleSurcharge, evidence: []*Observation{o}, keys: []string{"fee"}}
			t.driver = fmt.Sprintf("%s %s", strings.Join(names, ", "), money(sum))
			return t
		}
	}
	// 8. renewal_jump, seen: the same plan renewed at a higher price, no seats or usage behind it.
	if prev := prevCharge(charges); prev != nil && !selfChange {
		p := *prev.Total
		if p > 0 && float64(cur-p)/float64(p) >= RenewalJumpMin && (last.Plan == "" || prev.Plan == "" || strings.EqualFold(last.Plan, prev.Plan)) &&
			last.Overage == nil && last.Seats == prev.Seats && last.Usage == "" && period != Usage && !variable(charges[:len(charges)-1]) {
			t := trap{kind: RenewalJump, rule: RuleRenewalSeen, evidence: []*Observation{last, prev}, keys: []string{"total"}}
			t.driver = fmt.Sprintf("renewed at %s after %s", money(cur), money(p))
			return t
		}
	}
	// 9. variable_bill: bills that swing from period to period.
	if len(charges) >= VariableMinBills && variable(recentN(charges, 12)) {
		t := trap{kind: VariableBill, rule: RuleVariable, evidence: []*Observation{last}, keys: []string{"usage", "total"}}
		lo, hi := minMax(recentN(charges, 12))
		t.driver = fmt.Sprintf("bills between %s and %s", money(lo), money(hi))
		mean := meanTotal(recentN(charges, 3))
		t.projected = ptr(mean)
		t.threshold = ptr(nextThreshold(hi))
		t.derived = fmt.Sprintf("mean of the last %d bills", len(recentN(charges, 3)))
		return t
	}
	return trap{kind: NoTrap, rule: RuleNoTrap}
}

// regular reports whether bills with no word of a subscription still recur: three or more,
// spaced by a billing period.
func regular(cs []*Observation) bool {
	if len(cs) < 3 {
		return false
	}
	var gaps []float64
	for i := 1; i < len(cs); i++ {
		gaps = append(gaps, cs[i].Date.Sub(cs[i-1].Date).Hours()/24)
	}
	slices.Sort(gaps)
	return periodOfSpan(int(math.Round(gaps[len(gaps)/2]))) != ""
}

// prevCharge is the bill before the last.
func prevCharge(cs []*Observation) *Observation {
	if len(cs) < 2 {
		return nil
	}
	return cs[len(cs)-2]
}

func recentN(cs []*Observation, n int) []*Observation { return cs[max(0, len(cs)-n):] }

// variable reports whether bills swing: their coefficient of variation is at least
// VariableMinCV.
func variable(cs []*Observation) bool {
	if len(cs) < VariableMinBills {
		return false
	}
	var sum, sq float64
	for _, c := range cs {
		sum += float64(*c.Total)
	}
	mean := sum / float64(len(cs))
	if mean <= 0 {
		return false
	}
	for _, c := range cs {
		d := float64(*c.Total) - mean
		sq += d * d
	}
	if math.Sqrt(sq/float64(len(cs)))/mean < VariableMinCV {
		return false
	}
	// A bill that swings goes both up and down; one that steps (a plan change, growth) does not.
	ups, downs := 0, 0
	for i := 1; i < len(cs); i++ {
		d := float64(*cs[i].Total - *cs[i-1].Total)
		switch {
		case d >= 0.1*mean:
			ups++
		case d <= -0.1*mean:
			downs++
		}
	}
	return ups > 0 && downs > 0
}

func minMax(cs []*Observation) (int64, int64) {
	lo, hi := *cs[0].Total, *cs[0].Total
	for _, c := range cs {
		lo, hi = min(lo, *c.Total), max(hi, *c.Total)
	}
	return lo, hi
}

func meanTotal(cs []*Observation) int64 {
	var s int64
	for _, c := range cs {
		s += *c.Total
	}
	return s / int64(len(cs))
}

// nextPrice is the price a notice or the bill after it shows.
func nextPrice(o *Observation, charges []*Observation) *int64 {
	if o.NewPrice != nil {
		return o.NewPrice
	}
	if o.Base != nil {
		return o.Base
	}
	if o.Total != nil {
		return o.Total
	}
	for _, c := range charges {
		if !c.Date.Before(o.Date) {
			return c.Total
		}
	}
	return nil
}

// nextThreshold is the next round sum above c: the next 10 dollars under 50, 25 under 200, 100
// under 1,000, else 500.
func nextThreshold(c int64) int64 {
	step := int64(50000)
	switch {
	case c < 5000:
		step = 1000
	case c < 20000:
		step = 2500
	case c < 100000:
		step = 10000
	}
	return (c/step + 1) * step
}

// crossing projects when the bills' trend crosses a threshold: a straight line through the last
// bills, one step per billing period; zero when they are not rising.
func crossing(cs []*Observation, threshold int64, p BillingPeriod) time.Time {
	cs = recentN(cs, 4)
	if len(cs) < 2 {
		return time.Time{}
	}
	slope := float64(*cs[len(cs)-1].Total-*cs[0].Total) / float64(len(cs)-1)
	cur := *cs[len(cs)-1].Total
	if slope <= 0 || cur >= threshold {
		return time.Time{}
	}
	steps := int(math.Ceil(float64(threshold-cur) / slope))
	if steps > 24 {
		return time.Time{}
	}
	last := cs[len(cs)-1].Date
	switch p {
	case Weekly:
		return last.AddDate(0, 0, 7*steps)
	case Quarterly:
		return last.AddDate(0, 3*steps, 0)
	case Annual:
		return last.AddDate(steps, 0, 0)
	}
	return last.AddDate(0, steps, 0)
}

// concentration says how much of the current bill the trap's driver is.
func concentration(t trap, last *Observation, cur int64) string {
	var part int64
	var what string
	switch t.kind {
	case MeteredOverage:
		part, what = val(last.Overage), "overage"
	case Surcharge:
		for _, f := range last.Fees {
			part += f.Cents
		}
		what = "fees"
	case SeatGrowth:
		if last.SeatPrice != nil {
			part, what = int64(last.Seats)*(*last.SeatPrice), "seats"
		}
	}
	if part <= 0 || part > cur {
		return ""
	}
	return fmt.Sprintf("%s: %d%% of the current period cost", what, int(math.Round(float64(part)*100/float64(cur))))
}

// money renders cents as dollars for explanations: 123456 -> "$1,234.56".
func money(c int64) string {
	sign := ""
	if c < 0 {
		sign, c = "-", -c
	}
	whole := fmt.Sprint(c / 100)
	var b strings.Builder
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return fmt.Sprintf("%s$%s.%02d", sign, b.String(), c%100)
}

// evidenceOf makes an evidence item of a message: its excerpt is the first of keys it has.
func evidenceOf(o *Observation, keys ...string) Evidence {
	e := Evidence{Kind: KindEmail, Ref: o.Ref, SourceID: o.SourceID, ObservedAt: o.Date.UTC()}
	for _, k := range append(keys, "total", "trial", "price_change", "cancel") {
		if x := o.Excerpts[k]; x != "" {
			e.Excerpt = x
			break
		}
	}
	return e
}
