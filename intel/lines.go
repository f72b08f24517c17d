package intel

import (
	"strconv"
	"strings"
	"time"
)

// line reads the facts of one line.
func (o *Observation) line(line string, all []string, i int, date time.Time) {
	low := strings.ToLower(line)
	if !strings.ContainsAny(line, "0123456789") && !containsAny(low, wordFacts) {
		return // no sum, date or count, and none of the words of a fact without one
	}
	am := findMoney(line)
	// A label alone on its line with its amount on the next ("Total" / "$12.00"), as HTML tables
	// become text.
	if len(am) == 0 && i+1 < len(all) && len(line) < 40 {
		if next := findMoney(all[i+1]); len(next) == 1 && len(strings.TrimSpace(all[i+1])) <= next[0].end-next[0].start+4 {
			line = line + " " + all[i+1]
			low = strings.ToLower(line)
			am = findMoney(line)
		}
	}
	// The line's keywords, found in one pass: an expression is tried only when the line holds
	// one of its own (kre.in's answer, without a search per keyword per expression).
	ks := keysOf(low)
	has := func(k kre) bool { return ks.meets(&k.set) && k.MatchString(low) }
	for _, a := range am {
		if a.currency != "" && o.Currency == "" {
			o.Currency = a.currency
		}
	}
	if has(reAutoUpgrade) && !has(reSelfChange) {
		o.AutoUpgrade = true
		o.excerpt("auto_upgrade", line)
	}
	if has(reSelfChange) && has(rePlanLine) {
		o.SelfChange = true
		o.excerpt("self_change", line)
	}
	if has(reSeatsAdded) {
		o.SeatsAdded = true
		o.excerpt("seats", line)
	}
	if m := seatsIn(line, low); m != nil && (len(am) > 0 || strings.Contains(low, "seat") || strings.Contains(low, "licen")) {
		k := m[1]
		if k == "" {
			k = m[4]
		}
		if n, err := strconv.Atoi(k); err == nil && n > 0 && n > o.Seats {
			o.Seats = n
			o.excerpt("seats", line)
			for _, a := range am {
				if strings.Contains(low[:a.start], " x") || strings.Contains(low[:a.start], "×") || strings.Contains(low[:a.start], "@") || strings.Contains(low[a.end:], "per ") || strings.Contains(low[a.end:], "/") || strings.Contains(low[a.end:], " each") {
					o.SeatPrice = ptr(abs(a.cents))
					break
				}
			}
		}
	}
	if m := findIn(reUsage, line, low, "use", "usage", "consumed"); m != nil && o.Usage == "" {
		o.Usage = m[2] + " " + strings.ToLower(m[3])
		o.Unit = unitName(m[3])
		o.excerpt("usage", line)
	}
	if m := findIn(reAllowance, line, low, "includ", "allowance", "free", " of "); m != nil && o.Allowance == "" {
		if m[1] != "" {
			o.Allowance = m[1] + " " + strings.ToLower(m[2])
		} else {
			o.Allowance = m[4] + " " + strings.ToLower(m[5])
		}
		o.excerpt("allowance", line)
	}
	if m := findIn(reRate, line, low, "/", " per ", " each", " a ", " an "); len(am) > 0 && m != nil && o.Rate == "" && !strings.Contains(low, "seat") && !strings.Contains(low, "user") {
		o.Rate = strings.TrimSpace(m[0])
		if o.Unit == "" {
			o.Unit = unitName(m[4])
		}
	}
	if (o.TrialNotice || strings.Contains(low, "trial")) && strings.Contains(low, "trial") {
		if m := reTrialDays.FindStringSubmatch(line); m != nil {
			n, u := m[1], m[2]
			if n == "" {
				n, u = m[5], m[6]
			}
			k, _ := strconv.Atoi(n)
			switch strings.ToLower(u) {
			case "week":
				k *= 7
			case "month":
				k *= 30
			}
			if k > 0 && k <= 366 && o.TrialDays == 0 {
				o.TrialDays = k
			}
		}
		if m := reEndsIn.FindStringSubmatch(low); m != nil && o.TrialEnd.IsZero() {
			// "ends in 3 days", "expires tomorrow": counted from the message's date.
			n := 1
			if m[3] != "" {
				n, _ = strconv.Atoi(m[3])
			}
			o.TrialEnd = truncDay(date).AddDate(0, 0, n)
			o.excerpt("trial_end", line)
		}
		if has(reEndWord) && (strings.Contains(low, "end") || strings.Contains(low, "expire") || strings.Contains(low, "until") || strings.Contains(low, "through")) {
			if ds := findDates(line, date); len(ds) > 0 && o.TrialEnd.IsZero() {
				o.TrialEnd = ds[len(ds)-1].t
				o.excerpt("trial_end", line)
			}
		}
	}
	if o.TrialNotice && len(am) > 0 && has(reAfterTrial) && o.PriceAfterTrial == nil {
		a := am[len(am)-1]
		o.PriceAfterTrial = ptr(abs(a.cents))
		o.TrialCadence = periodIn(line[a.start:])
		if o.TrialCadence == "" {
			o.TrialCadence = periodIn(line)
		}
		o.excerpt("price_after_trial", line)
	}
	if has(reServicePer) {
		if ds := findDates(line, date); len(ds) >= 2 && o.PeriodStart.IsZero() && ds[1].t.After(ds[0].t) {
			o.PeriodStart, o.PeriodEnd = ds[0].t, ds[1].t
			o.excerpt("period", line)
		}
	}
	if o.Plan == "" && (strings.Contains(low, "plan") || strings.Contains(low, "tier") || strings.Contains(low, "edition")) {
		if m := rePlanName.FindStringSubmatch(line); m != nil && !notPlanNames[strings.ToLower(m[1])] {
			o.Plan = strings.TrimSpace(m[1])
		}
	}
	// Credits.
	if has(reCreditGrant) && len(am) > 0 && am[0].cents > 0 && !(o.Charge && strings.Contains(low, "applied")) {
		if o.CreditGrant == nil && am[0].cents > 0 {
			o.CreditGrant = ptr(am[0].cents)
			o.excerpt("credit_grant", line)
		}
	}
	if strings.Contains(low, "credit") && has(reValidUntil) {
		if ds := findDates(line, date); len(ds) > 0 {
			o.CreditExpiry = ds[len(ds)-1].t
			o.excerpt("credit_expiry", line)
		}
	}
	if has(reCreditLeft) && len(am) > 0 {
		o.CreditRemaining = ptr(abs(am[len(am)-1].cents))
		o.excerpt("credit_left", line)
	}
	if has(reCreditsOut) {
		if strings.Contains(low, "expire") || strings.Contains(low, "expiring") {
			if ds := findDates(line, date); len(ds) > 0 {
				o.CreditExpiry = ds[len(ds)-1].t
			}
			if o.CreditGrant != nil || strings.Contains(low, "credit") {
				o.excerpt("credit_expiry", line)
			}
		}
		if !strings.Contains(low, "will expire") && !strings.Contains(low, "expire on") && !strings.Contains(low, "expires on") && !strings.Contains(low, "expiring") {
			o.CreditsOut = true
			o.excerpt("credits_out", line)
		}
	}
	if len(am) == 0 {
		return
	}
	// Announced price changes: "from $10.00 to $12.00", "new price $12.00 (was $10.00)".
	if has(reNotYours) {
		return // a price for other people (new customers), not the user's
	}
	if len(am) >= 2 && (has(rePriceChange) || has(rePriceDrop)) && !has(reTeaser) {
		old, nw := am[0].cents, am[1].cents
		if between := low[am[0].end:am[1].start]; strings.Contains(between, "was") || strings.Contains(between, "instead of") ||
			strings.Contains(between, "previously") || strings.Contains(between, "currently") || strings.Contains(between, "current price") ||
			strings.Contains(between, "down from") || strings.Contains(between, "up from") {
			old, nw = nw, old
		}
		if old != nw && old > 0 && nw > 0 {
			o.OldPrice, o.NewPrice = ptr(old), ptr(nw)
			o.PriceDrop = nw < old
			o.excerpt("price_change", line)
			if ds := findDates(line, date); len(ds) > 0 {
				o.EffectiveAt = ds[len(ds)-1].t
			}
		}
		return
	}
	if has(rePriceChange) && len(am) == 1 && o.OldPrice == nil && !has(reTeaser) && !o.Charge && !o.TrialNotice && (strings.Contains(low, "increase") || strings.Contains(low, "new price") || strings.Contains(low, "going up") || strings.Contains(low, "will be") || strings.Contains(low, "renew")) {
		o.NewPrice = ptr(abs(am[0].cents))
		o.excerpt("price_change", line)
		if ds := findDates(line, date); len(ds) > 0 {
			o.EffectiveAt = ds[len(ds)-1].t
		}
	}
	// Teasers: "$1.99 for the first 3 months, then $12.99/month".
	if has(reTeaser) || (len(am) >= 2 && has(reTeaserThen) && strings.Contains(low, "promo")) {
		if len(am) >= 2 && has(reTeaserThen) {
			t, r := am[0].cents, am[len(am)-1].cents
			if r > t {
				o.TeaserPrice, o.RegularPrice = ptr(t), ptr(r)
				o.excerpt("teaser", line)
			}
		} else if len(am) == 1 && o.TeaserPrice == nil {
			o.TeaserPrice = ptr(abs(am[0].cents))
			o.excerpt("teaser", line)
		}
		if ds := findDates(line, date); len(ds) > 0 && (strings.Contains(low, "end") || strings.Contains(low, "expire") || strings.Contains(low, "until") || strings.Contains(low, "through")) {
			o.TeaserEnd = ds[len(ds)-1].t
		}
		return
	}
	if len(am) == 1 && o.TeaserPrice != nil && o.RegularPrice == nil && has(reTeaserThen) && am[0].cents > *o.TeaserPrice {
		o.RegularPrice = ptr(am[0].cents)
		o.excerpt("teaser_regular", line)
		return
	}
	if !o.Charge {
		return
	}
	// Bill lines: the label is what comes before the (last) amount.
	a := am[len(am)-1]
	label := low[:am[0].start]
	if strings.TrimSpace(label) == "" {
		label = low
	}
	switch {
	case reSubtotal.in(label, label):
		o.Subtotal = ptr(a.cents)
		o.excerpt("subtotal", line)
	case reTax.in(label, label) && !reTotal.in(label, label):
		o.Tax = ptr(addc(o.Tax, a.cents))
		o.excerpt("tax", line)
	case reFee.in(label, label):
		o.Fees = append(o.Fees, Fee{Label: feeLabel(line[:am[0].start]), Cents: abs(a.cents)})
		o.excerpt("fee", line)
	case reOverage.in(label, label) && !reFinal.in(label, label):
		if a.cents > 0 {
			o.Overage = ptr(addc(o.Overage, a.cents))
			o.excerpt("overage", line)
		}
	case reCreditLine.in(label, label) && !reFinal.in(label, label) && (a.cents < 0 || strings.Contains(label, "applied") || strings.Contains(label, "used")):
		o.Credits = ptr(addc(o.Credits, abs(a.cents)))
		o.excerpt("credits", line)
	case has(reFinal):
		o.setTotal(a.cents, 3, line)
	case reTotal.in(label, label) && !strings.Contains(label, "subtotal"):
		o.setTotal(a.cents, 2, line)
	case rePlanLine.in(label, label) && o.Base == nil:
		o.Base = ptr(a.cents)
		o.excerpt("base", line)
	case has(reTotal):
		o.setTotal(a.cents, 1, line)
	}
}
