package creator

import (
	"fmt"
	"math/big"
	"sort"
	"strings"
)

// The thresholds of the anomaly rules; docs/creator.md explains each.
const (
	// rateToleranceBPS: a fee or royalty rate off its terms by at least this much has changed.
	rateToleranceBPS = 25
	// unitRateTolerancePct: a per-1,000 rate or commission off its terms by at least this
	// percentage (and moneyFloorCents) deviates.
	unitRateTolerancePct = 2
	// moneyFloorCents: differences smaller than this are never anomalies.
	moneyFloorCents = 100
	// spikeFloorCents: an adjustment or refund total below this is never a spike.
	spikeFloorCents = 5000
	// latePayoutGraceDays: a payout arriving more than this many days after it was due is late.
	latePayoutGraceDays = 5
	// missingPayoutGraceDays: a payout not seen this many days after it was due is missing.
	missingPayoutGraceDays = 10
	// defaultPayoutDay: the day of the following month a payout is due when no terms or notices say.
	defaultPayoutDay = 15
	// sponsorGraceDays: an invoice unpaid this many days after its due date is overdue.
	sponsorGraceDays = 7
	// fxTolerancePermille: a conversion rate off its reference by this much (per mille) is a currency effect.
	fxTolerancePermille = 25
	// concentrationShare / concentrationBefore: one platform reaching this share of a month's
	// platform revenue, after two months below concentrationBefore.
	concentrationShare  = 60
	concentrationBefore = 50
	// statementGapDays: a statement not seen this many days after its period ended is missing.
	statementGapDays = 45
	// historyMin: periods of history a spike or new deduction is judged against.
	historyMin = 2
)

func (r *reconciler) detect() {
	all := r.sorted()
	for _, s := range all {
		acts := []*slot{}
		for _, sl := range s.periods {
			if sl.act != nil {
				acts = append(acts, sl)
			}
		}
		r.rateRules(s, acts)
		r.spikes(s, acts)
		r.newDeductions(s, acts)
		r.payouts(s, acts)
		r.currency(s)
		r.gaps(s, acts)
	}
	r.concentration(all)
}

func (r *reconciler) itemEvidence(sl *slot) []Evidence {
	if sl.item == nil {
		return nil
	}
	return append([]Evidence(nil), sl.item.Evidence...)
}

func (r *reconciler) anomalyFor(s *series, sl *slot, kind AnomalyKind, sev Severity, detail string) {
	a := &Anomaly{Kind: kind, CreatorSourceID: s.info.SourceID, Severity: sev, Period: sl.period.Label, Detail: detail,
		Evidence: r.itemEvidence(sl)}
	if sl.item != nil {
		a.ItemID = sl.item.ID
	}
	r.add(a, sl.period.Start)
}

func pct(bpsv int64) string { return formatBPS(bpsv) }

// rateRules: fee_change, royalty_rate_change, rate_deviation, conversion_commission_divergence.
// Each compares the rate a period shows with the terms in force (published, contracted or
// announced; inferred from the first periods when none are), and is raised at the first period
// of a run of periods that differ, not again for each period of the same run.
func (r *reconciler) rateRules(s *series, acts []*slot) {
	base := s.baselineDeductions()
	var prevDev bool
	var prevRate int64
	for _, sl := range acts {
		a := sl.act
		obs, ok := observedRate(sl, base)
		term := sl.terms.main(a.Model)
		if !ok || term == nil {
			prevDev = false
			continue
		}
		diff := obs - *term
		var dev bool
		var delta int64
		if sl.expEarned != nil && a.Earned != nil {
			delta = *a.Earned - *sl.expEarned
		}
		if a.Model == ModelFee && a.Gross != nil {
			delta = -(feeBase(sl, base) - bps(*a.Gross, *term))
		}
		switch a.Model {
		case ModelFee, ModelRoyalty:
			dev = abs(diff) >= rateToleranceBPS && abs(delta) >= moneyFloorCents
		default:
			dev = abs(diff)*100 >= *term*unitRateTolerancePct && abs(delta) >= moneyFloorCents
		}
		sameRun := prevDev && (a.Model == ModelPerUnit || a.Model == ModelAffiliate || abs(obs-prevRate) < rateToleranceBPS)
		if dev && !sameRun {
			cur := a.Currency
			sev := SeverityReview
			if abs(delta) >= 10000 || abs(diff)*10 >= *term {
				sev = SeverityHigh
			}
			switch a.Model {
			case ModelFee:
				r.anomalyFor(s, sl, FeeChange, sev, fmt.Sprintf("%s charged fees of %s on %s gross in %s, %s of gross, where its terms say %s: %s %s than the terms, with no announced change.",
					s.info.Name, money(cur, feeBase(sl, base)), money(cur, *a.Gross), sl.period.Label, pct(obs), pct(*term), money(cur, abs(delta)), moreLess(-delta)))
			case ModelRoyalty:
				r.anomalyFor(s, sl, RoyaltyRateChange, sev, fmt.Sprintf("%s paid a royalty of %s on %s of sales in %s, %s, where its terms say %s: %s %s, with no announced change.",
					s.info.Name, money(cur, *a.Earned), money(cur, *a.Gross), sl.period.Label, pct(obs), pct(*term), money(cur, abs(delta)), moreLess(delta)))
			case ModelPerUnit:
				r.anomalyFor(s, sl, RateDeviation, sev, fmt.Sprintf("%s paid %s for %d units in %s, %s per 1,000, where its published rate is %s per 1,000: %s %s than the rate gives.",
					s.info.Name, money(cur, *a.Earned), *a.Units, sl.period.Label, rateIn(cur, obs), rateIn(cur, *term), money(cur, abs(delta)), moreLess(delta)))
			case ModelAffiliate:
				r.anomalyFor(s, sl, ConversionDivergence, sev, fmt.Sprintf("%s paid %s in commission for %d conversions in %s, %s per conversion, where the contracted commission is %s: %s %s.",
					s.info.Name, money(cur, *a.Earned), *a.Conversions, sl.period.Label, money(cur, obs), money(cur, *term), money(cur, abs(delta)), moreLess(delta)))
			}
		}
		prevDev, prevRate = dev, obs
	}
}

// rateIn writes a per-1,000 rate with its currency's sign ("$2.50").
func rateIn(cur string, h int64) string {
	switch cur {
	case "USD":
		return "$" + formatRate(h)
	case "EUR":
		return "€" + formatRate(h)
	case "GBP":
		return "£" + formatRate(h)
	}
	return cur + " " + formatRate(h)
}

func moreLess(v int64) string {
	if v >= 0 {
		return "more"
	}
	return "less"
}

// spikes: adjustment_spike and refund_spike, a period's rate against the median of up to six
// earlier periods.
func (r *reconciler) spikes(s *series, acts []*slot) {
	type hist struct{ adj, ref []int64 }
	var h hist
	for _, sl := range acts {
		a := sl.act
		if a.Gross == nil || *a.Gross <= 0 {
			continue
		}
		g := *a.Gross
		other := abs(a.Adjustments + a.Refunds) // adjustments other than refunds
		if a.Adjustments+a.Refunds > 0 {
			other = 0 // positive corrections are not a loss
		}
		adjRate := divRound(other*10000, g)
		refRate := divRound(a.Refunds*10000, g)
		if len(h.adj) >= historyMin {
			b := median(last(h.adj, 6))
			if other >= spikeFloorCents && adjRate >= max(3*b, b+200) {
				sev := SeverityReview
				if other >= 50000 {
					sev = SeverityHigh
				}
				r.anomalyFor(s, sl, AdjustmentSpike, sev, fmt.Sprintf("%s deducted %s in adjustments in %s, %s of gross, against a usual %s (median of the %d periods before).",
					s.info.Name, money(a.Currency, other), sl.period.Label, pct(adjRate), pct(b), len(last(h.adj, 6))))
			}
		}
		if len(h.ref) >= historyMin {
			b := median(last(h.ref, 6))
			if a.Refunds >= spikeFloorCents && refRate >= max(2*b, b+300) {
				sev := SeverityReview
				if refRate >= 2000 {
					sev = SeverityHigh
				}
				r.anomalyFor(s, sl, RefundSpike, sev, fmt.Sprintf("%s refunded %s in %s, %s of gross, against a usual %s (median of the %d periods before).",
					s.info.Name, money(a.Currency, a.Refunds), sl.period.Label, pct(refRate), pct(b), len(last(h.ref, 6))))
			}
		}
		h.adj = append(h.adj, adjRate)
		h.ref = append(h.ref, refRate)
	}
}

func last(xs []int64, n int) []int64 {
	if len(xs) > n {
		return xs[len(xs)-n:]
	}
	return xs
}

// newDeductions: a named deduction that no earlier period of the platform had, not announced.
func (r *reconciler) newDeductions(s *series, acts []*slot) {
	seen := map[string]bool{}
	for i, sl := range acts {
		names := make([]string, 0, len(sl.act.Deductions))
		for n, v := range sl.act.Deductions {
			if v != 0 {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		for _, n := range names {
			if seen[n] {
				continue
			}
			seen[n] = true
			if i < historyMin {
				continue
			}
			if r.deductionAnnounced(s.info.Key, n, acts[i-1].period.Label, sl.period.Label) {
				continue
			}
			v := sl.act.Deductions[n]
			sev := SeverityReview
			if v >= 10000 {
				sev = SeverityHigh
			}
			share := ""
			if e := earnedOf(sl.act); e != nil && *e > 0 {
				share = fmt.Sprintf(" (%s of earnings)", pct(divRound(v*10000, *e)))
			}
			r.anomalyFor(s, sl, NewDeduction, sev, fmt.Sprintf("%s deducted %s as %q in %s%s, a deduction none of the %d earlier statements had and no announcement explains.",
				s.info.Name, money(sl.act.Currency, v), n, sl.period.Label, share, i))
		}
	}
}

// deductionAnnounced: an announced deduction or withholding change took effect after prev and
// by label.
func (r *reconciler) deductionAnnounced(stream, name, prev, label string) bool {
	for _, t := range r.l.Terms {
		if t.Stream != stream || !t.Announced || t.Effective > label || t.Effective <= prev {
			continue
		}
		if strings.HasPrefix(string(t.Field), string(TermDeductionPrefix)) || t.Field == TermWithholdingBPS {
			return true
		}
		if t.Field == TermFeeBPS && !taxWord.MatchString(name) {
			return true
		}
	}
	return false
}

// payoutDay is the day of the following month a stream's payouts are due: its terms, else the
// median day its settlements arrived, else the 15th.
func payoutDay(s *series) int {
	for _, sl := range s.periods {
		if sl.terms.payoutDay != nil {
			return int(*sl.terms.payoutDay)
		}
	}
	var days []int64
	for _, sl := range s.periods {
		for _, p := range sl.scheduled {
			if !p.DueAt.IsZero() {
				days = append(days, int64(p.DueAt.Sub(sl.period.End).Hours()/24)+1)
			}
		}
	}
	if len(days) == 0 {
		for _, sl := range s.periods {
			for _, p := range sl.settled {
				days = append(days, int64(p.SettledAt.Sub(sl.period.End).Hours()/24)+1)
			}
		}
	}
	if len(days) == 0 {
		return defaultPayoutDay
	}
	return int(median(days))
}

// payouts: late_payout and missing_payout_period, for streams whose payouts are observed at all.
func (r *reconciler) payouts(s *series, acts []*slot) {
	any := false
	var lastPaid string
	for _, sl := range s.periods {
		if len(sl.settled) > 0 || len(sl.scheduled) > 0 {
			any = true
			lastPaid = sl.period.Label
		}
	}
	if !any {
		return
	}
	day := payoutDay(s)
	for _, sl := range s.periods {
		due := sl.due(r.opts.AsOf, day)
		switch {
		case len(sl.settled) > 0:
			at := sl.settled[len(sl.settled)-1].SettledAt
			late := int(at.Sub(due).Hours() / 24)
			if late > latePayoutGraceDays {
				sev := SeverityReview
				if late > 30 {
					sev = SeverityHigh
				}
				r.anomalyFor(s, sl, LatePayout, sev, fmt.Sprintf("%s's payout of %s for %s was due on %s and arrived on %s, %d days late.",
					s.info.Name, money(sl.settled[0].Currency, sumSettled(sl)), sl.period.Label, due.Format("2006-01-02"), at.Format("2006-01-02"), late))
			}
		case len(sl.scheduled) > 0:
			late := int(r.opts.AsOf.Sub(due).Hours() / 24)
			if late > missingPayoutGraceDays {
				r.anomalyFor(s, sl, LatePayout, SeverityHigh, fmt.Sprintf("%s's payout of %s for %s was scheduled for %s and has not arrived %d days later.",
					s.info.Name, money(sl.scheduled[0].Currency, sl.scheduled[len(sl.scheduled)-1].AmountCents), sl.period.Label, due.Format("2006-01-02"), late))
			}
		case sl.act != nil && sl.act.Net != nil && *sl.act.Net > 0:
			overdue := int(r.opts.AsOf.Sub(due).Hours() / 24)
			if overdue > missingPayoutGraceDays && (sl.period.Label < lastPaid || overdue > 30) {
				r.anomalyFor(s, sl, MissingPayoutPeriod, SeverityHigh, fmt.Sprintf("%s reported %s payable for %s, due by %s, but no payout for that period has been seen (%d days later) while later periods were paid.",
					s.info.Name, money(sl.act.Currency, *sl.act.Net), sl.period.Label, due.Format("2006-01-02"), overdue))
			}
		}
	}
}

func sumSettled(sl *slot) int64 {
	var s int64
	for _, p := range sl.settled {
		s += p.AmountCents
	}
	return s
}

// currency: currency_effect, a payout converted at a rate off its reference (the statement's
// own rate, else the median rate of the three payouts before) by 2.5% or more.
func (r *reconciler) currency(s *series) {
	var rates []*big.Rat
	for _, sl := range s.periods {
		for _, p := range sl.settled {
			c := p.Conversion
			if c == nil || c.Rate == "" {
				continue
			}
			rate, ok := new(big.Rat).SetString(c.Rate)
			if !ok || rate.Sign() <= 0 {
				continue
			}
			var ref *big.Rat
			src := ""
			if sl.act != nil && sl.act.FXRate != "" {
				if x, ok := new(big.Rat).SetString(sl.act.FXRate); ok && x.Sign() > 0 {
					ref, src = x, "the statement's rate "+sl.act.FXRate
				}
			}
			if ref == nil && len(rates) > 0 {
				ref = medianRat(rates[max(0, len(rates)-3):])
				src = "the median rate of the previous payouts, " + ref.FloatString(4)
			}
			rates = append(rates, rate)
			if ref == nil {
				continue
			}
			// off = |rate/ref - 1| in per mille
			q := new(big.Rat).Quo(rate, ref)
			q.Sub(q, big.NewRat(1, 1))
			offPM, _ := new(big.Rat).Mul(q, big.NewRat(1000, 1)).Float64()
			if offPM < 0 {
				offPM = -offPM
			}
			if offPM < fxTolerancePermille {
				continue
			}
			atRef := new(big.Rat).Mul(new(big.Rat).SetInt64(p.AmountCents), ref)
			refCents := ratRound(atRef)
			effect := c.AmountCents - refCents
			if abs(effect) < moneyFloorCents {
				continue
			}
			sev := SeverityInfo
			if abs(effect) >= 10000 {
				sev = SeverityReview
			}
			r.anomalyFor(s, sl, CurrencyEffect, sev, fmt.Sprintf("%s's payout of %s for %s was converted at %s %s per %s (source: %s), %s off %s: %s instead of %s, %s %s.",
				s.info.Name, money(c.From, p.AmountCents), sl.period.Label, c.Rate, c.To, c.From, c.RateSource, fmt.Sprintf("%.1f%%", offPM/10), src,
				money(c.To, c.AmountCents), money(c.To, refCents), money(c.To, abs(effect)), moreLess(effect)))
		}
	}
}

func medianRat(xs []*big.Rat) *big.Rat {
	s := append([]*big.Rat(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i].Cmp(s[j]) < 0 })
	return s[(len(s)-1)/2]
}

// ratRound rounds a rational number of cents half away from zero.
func ratRound(x *big.Rat) int64 {
	n := new(big.Int).Mul(x.Num(), big.NewInt(2))
	n.Add(n, new(big.Int).Mul(x.Denom(), big.NewInt(int64(x.Sign()))))
	d := new(big.Int).Mul(x.Denom(), big.NewInt(2))
	return new(big.Int).Quo(n, d).Int64()
}

// gaps: statement_gap, a month with no statement between months with statements, or the month
// after the last statement when it ended more than 45 days ago.
func (r *reconciler) gaps(s *series, acts []*slot) {
	var stmts []*slot
	for _, sl := range acts {
		if sl.act.Evidence.Kind == EvidenceStatement {
			stmts = append(stmts, sl)
		}
	}
	if len(stmts) < 2 {
		return
	}
	have := map[string]bool{}
	for _, sl := range stmts {
		have[sl.period.Label] = true
	}
	p := stmts[0].period
	end := stmts[len(stmts)-1].period
	for ; p.Label <= end.Label || r.opts.AsOf.After(p.End.AddDate(0, 0, statementGapDays)); p = p.next() {
		if have[p.Label] {
			continue
		}
		if p.Label > end.Label && p.Label != end.next().Label {
			break
		}
		sl := r.slot(s.info.Key, p)
		detail := fmt.Sprintf("No %s statement for %s has been seen, between the statements for %s and %s.", s.info.Name, p.Label, p.prev().Label, p.next().Label)
		if p.Label > end.Label {
			detail = fmt.Sprintf("No %s statement for %s has been seen %d days after the period ended; statements arrived through %s.",
				s.info.Name, p.Label, int(r.opts.AsOf.Sub(p.End).Hours()/24), end.Label)
		}
		if len(sl.settled) > 0 {
			detail += fmt.Sprintf(" A payout of %s for it was received, so what it paid for cannot be checked.", money(sl.settled[0].Currency, sumSettled(sl)))
		}
		r.anomalyFor(s, sl, StatementGap, SeverityReview, detail)
		// The evidence of a missing statement: the statements around the hole.
		a := r.anomalies[len(r.anomalies)-1]
		for _, x := range stmts {
			if x.period.Label == p.prev().Label || x.period.Label == p.next().Label {
				a.Evidence = appendEvidence(a.Evidence, x.act.Evidence)
			}
		}
	}
}

// concentration: revenue_concentration, one platform reaching 60% of a month's platform revenue
// (three platforms or more earning) after two months under 50%.
func (r *reconciler) concentration(all []*series) {
	months := map[string]map[string]int64{}
	for _, s := range all {
		rate := fxToHome(s, r.opts.Home)
		for _, sl := range s.periods {
			if sl.act == nil || sl.act.Net == nil || *sl.act.Net <= 0 {
				continue
			}
			if months[sl.period.Label] == nil {
				months[sl.period.Label] = map[string]int64{}
			}
			v := *sl.act.Net
			if rate != nil {
				v = ratRound(new(big.Rat).Mul(new(big.Rat).SetInt64(v), rate))
			}
			months[sl.period.Label][s.info.Key] = v
		}
	}
	labels := make([]string, 0, len(months))
	for l := range months {
		labels = append(labels, l)
	}
	sort.Strings(labels)
	share := func(label, key string) (int64, int64, int) {
		var tot int64
		for _, v := range months[label] {
			tot += v
		}
		if tot == 0 {
			return 0, 0, 0
		}
		return months[label][key] * 100 / tot, tot, len(months[label])
	}
	for _, s := range all {
		for i := 2; i < len(labels); i++ {
			sh, tot, n := share(labels[i], s.info.Key)
			if n < 3 || sh < concentrationShare {
				continue
			}
			p1, _, _ := share(labels[i-1], s.info.Key)
			p2, _, _ := share(labels[i-2], s.info.Key)
			if p1 >= concentrationBefore || p2 >= concentrationBefore {
				continue
			}
			var sl *slot
			for _, x := range s.periods {
				if x.period.Label == labels[i] {
					sl = x
				}
			}
			sev := SeverityInfo
			if sh >= 75 {
				sev = SeverityReview
			}
			r.anomalyFor(s, sl, RevenueConcentration, sev, fmt.Sprintf("%s earned %s of the %s the platforms paid in %s, %d%%, up from %d%% and %d%% in the two months before: the revenue now depends on one platform.",
				s.info.Name, money(r.opts.Home, months[labels[i]][s.info.Key]), money(r.opts.Home, tot), labels[i], sh, p2, p1))
		}
	}
}

// fxToHome is a stream's conversion rate to the home currency (the median of its payouts'), or
// nil when it is paid in the home currency or none is known.
func fxToHome(s *series, home string) *big.Rat {
	var rates []*big.Rat
	foreign := false
	for _, sl := range s.periods {
		if sl.act != nil && sl.act.Currency != home {
			foreign = true
		}
		for _, p := range sl.settled {
			if p.Conversion != nil && p.Conversion.To == home {
				if x, ok := new(big.Rat).SetString(p.Conversion.Rate); ok {
					rates = append(rates, x)
				}
			}
		}
	}
	if !foreign || len(rates) == 0 {
		return nil
	}
	return medianRat(rates)
}
