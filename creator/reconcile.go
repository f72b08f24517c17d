package creator

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"svc.dev/svc/id"
)

// Options tune Reconcile.
type Options struct {
	// AsOf is the moment the reconciliation speaks for: payouts due before it and not seen are
	// missing, invoices due before it and unpaid are overdue (default now).
	AsOf time.Time
	// Home is the creator's home currency (default USD).
	Home string
	// Previous are the items and anomalies a former run stored: a changed item is
	// EVIDENCE_UPDATED, a dismissed anomaly stays dismissed, an open one no longer found is
	// resolved.
	Previous *Result
}

// Result is what Reconcile found: items and anomalies sorted by id.
type Result struct {
	Items     []*Item
	Anomalies []*Anomaly
}

// series is one stream's periods.
type series struct {
	info    *StreamInfo
	periods []*slot // sorted by period
}

// slot is everything known about one stream and period.
type slot struct {
	stream    string
	period    Period
	act       *Activity
	conflict  bool // two statements disagree
	scheduled []Payout
	settled   []Payout
	terms     termSet
	inferred  []string
	expEarned *int64
	item      *Item
}

func (s *slot) due(asOf time.Time, payoutDay int) time.Time {
	for _, p := range s.scheduled {
		if !p.DueAt.IsZero() {
			return p.DueAt
		}
	}
	return s.period.End.AddDate(0, 0, payoutDay-1)
}

// Reconcile turns everything the connectors observed into revenue items and anomalies. It is
// deterministic: the same ledger and options give the same ids, amounts and words.
func Reconcile(l *Ledger, opts Options) *Result {
	if opts.AsOf.IsZero() {
		opts.AsOf = time.Now().UTC()
	}
	if opts.Home == "" {
		opts.Home = "USD"
	}
	r := &reconciler{l: l, opts: opts, byStream: map[string]*series{}}
	r.collect()
	r.inferTerms()
	for _, s := range r.sorted() {
		for _, sl := range s.periods {
			r.item(s, sl)
		}
	}
	r.invoices()
	r.detect()
	res := &Result{Items: r.items, Anomalies: r.anomalies}
	r.merge(res)
	sort.Slice(res.Items, func(i, j int) bool { return res.Items[i].ID < res.Items[j].ID })
	sort.Slice(res.Anomalies, func(i, j int) bool { return res.Anomalies[i].ID < res.Anomalies[j].ID })
	return res
}

type reconciler struct {
	l         *Ledger
	opts      Options
	byStream  map[string]*series
	items     []*Item
	anomalies []*Anomaly
}

func (r *reconciler) info(key string) *StreamInfo {
	if s := r.l.Streams[key]; s != nil {
		return s
	}
	return &StreamInfo{Key: key, Name: key}
}

func (r *reconciler) slot(stream string, p Period) *slot {
	s := r.byStream[stream]
	if s == nil {
		s = &series{info: r.info(stream)}
		r.byStream[stream] = s
	}
	for _, sl := range s.periods {
		if sl.period.Label == p.Label {
			return sl
		}
	}
	sl := &slot{stream: stream, period: p}
	s.periods = append(s.periods, sl)
	return sl
}

func (r *reconciler) sorted() []*series {
	keys := make([]string, 0, len(r.byStream))
	for k := range r.byStream {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]*series, len(keys))
	for i, k := range keys {
		s := r.byStream[k]
		sort.Slice(s.periods, func(a, b int) bool { return s.periods[a].period.Label < s.periods[b].period.Label })
		out[i] = s
	}
	return out
}

func sameActivity(a, b *Activity) bool {
	eq := func(x, y *int64) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return eq(a.Gross, b.Gross) && eq(a.Net, b.Net) && a.Fees == b.Fees && a.Adjustments == b.Adjustments && a.Withholding == b.Withholding
}

func (r *reconciler) collect() {
	for i := range r.l.Activity {
		a := &r.l.Activity[i]
		sl := r.slot(a.Stream, a.Period)
		if sl.act != nil && !sameActivity(sl.act, a) {
			sl.conflict = true
		}
		sl.act = a // the later statement wins; a disagreement needs review
	}
	for _, p := range r.l.Payouts {
		sl := r.slot(p.Stream, p.Period)
		if p.Settled {
			dup := false
			for _, q := range sl.settled {
				dup = dup || q.Evidence.Ref == p.Evidence.Ref
			}
			if !dup {
				sl.settled = append(sl.settled, p)
			}
		} else {
			sl.scheduled = append(sl.scheduled, p)
		}
	}
}

// rates of one period, from its activity, for the model's terms.
func feeBase(sl *slot, baseline map[string]bool) int64 {
	if baseline == nil {
		return sl.act.Fees
	}
	var f int64
	for n, v := range sl.act.Deductions {
		if baseline[n] && !taxWord.MatchString(n) && n != "withholding" {
			f += v
		}
	}
	if len(sl.act.Deductions) == 0 || f == 0 && sl.act.Fees > 0 && len(baseline) == 0 {
		return sl.act.Fees
	}
	return f
}

// observedRate is the rate a period's activity shows for the model's main term, in the term's
// unit, or false when it cannot be computed.
func observedRate(sl *slot, baseline map[string]bool) (int64, bool) {
	a := sl.act
	if a == nil {
		return 0, false
	}
	switch a.Model {
	case ModelFee:
		if a.Gross == nil || *a.Gross <= 0 {
			return 0, false
		}
		return divRound(feeBase(sl, baseline)*10000, *a.Gross), true
	case ModelRoyalty:
		if a.Gross == nil || *a.Gross <= 0 || a.Earned == nil {
			return 0, false
		}
		return divRound(*a.Earned*10000, *a.Gross), true
	case ModelPerUnit:
		if a.Units == nil || *a.Units <= 0 || a.Earned == nil {
			return 0, false
		}
		return divRound(*a.Earned*100000, *a.Units), true
	case ModelAffiliate:
		if a.Conversions == nil || *a.Conversions <= 0 || a.Earned == nil {
			return 0, false
		}
		return divRound(*a.Earned, *a.Conversions), true
	}
	return 0, false
}

func mainTerm(m Model) TermField {
	switch m {
	case ModelRoyalty:
		return TermRoyaltyBPS
	case ModelPerUnit:
		return TermUnitRate
	case ModelAffiliate:
		return TermCommission
	}
	return TermFeeBPS
}

func (ts termSet) main(m Model) *int64 {
	switch m {
	case ModelRoyalty:
		return ts.royalty
	case ModelPerUnit:
		return ts.unitRate
	case ModelAffiliate:
		return ts.commission
	}
	return ts.fee
}

func (ts *termSet) setMain(m Model, v int64) {
	switch m {
	case ModelRoyalty:
		ts.royalty = &v
	case ModelPerUnit:
		ts.unitRate = &v
	case ModelAffiliate:
		ts.commission = &v
	default:
		ts.fee = &v
	}
}

func median(xs []int64) int64 {
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	if len(s) == 0 {
		return 0
	}
	return s[(len(s)-1)/2]
}

// historyPeriods is how many first periods infer terms a stream publishes none of.
const historyPeriods = 3

// baselineDeductions are the deduction names of a stream's first period with activity.
func (s *series) baselineDeductions() map[string]bool {
	for _, sl := range s.periods {
		if sl.act != nil {
			b := map[string]bool{}
			for n, v := range sl.act.Deductions {
				if v != 0 {
					b[n] = true
				}
			}
			return b
		}
	}
	return nil
}

// inferTerms sets each slot's terms: published and announced terms, and for what neither gives,
// the median of the stream's first periods (marked inferred, which makes the item ESTIMATED).
func (r *reconciler) inferTerms() {
	for _, s := range r.sorted() {
		base := s.baselineDeductions()
		var early, wh []int64
		var model Model
		for _, sl := range s.periods {
			if sl.act == nil {
				continue
			}
			model = sl.act.Model
			if len(early) < historyPeriods {
				if v, ok := observedRate(sl, base); ok {
					early = append(early, v)
				}
				if e := earnedOf(sl.act); e != nil && *e > 0 {
					wh = append(wh, divRound(baseWithholding(sl.act, base)*10000, *e))
				}
			}
		}
		var firstLabel, lastLabel string
		n := 0
		for _, sl := range s.periods {
			if sl.act != nil && n < historyPeriods {
				if firstLabel == "" {
					firstLabel = sl.period.Label
				}
				lastLabel = sl.period.Label
				n++
			}
		}
		span := firstLabel
		if lastLabel != firstLabel {
			span += ".." + lastLabel
		}
		for _, sl := range s.periods {
			sl.terms = termsAt(r.l.Terms, s.info.Key, sl.period.Label)
			if model == "" {
				continue
			}
			if sl.terms.main(model) == nil && len(early) > 0 {
				sl.terms.setMain(model, median(early))
				sl.inferred = append(sl.inferred, fmt.Sprintf("%s inferred from %s", mainTerm(model), span))
			}
			if sl.terms.withholding == nil && len(wh) > 0 {
				v := median(wh)
				sl.terms.withholding = &v
				if v != 0 {
					sl.inferred = append(sl.inferred, fmt.Sprintf("withholding_bps inferred from %s", span))
				}
			}
		}
	}
}

func earnedOf(a *Activity) *int64 {
	if a.Earned != nil {
		return a.Earned
	}
	if a.Gross != nil {
		return ptr(*a.Gross - a.Fees)
	}
	return nil
}

// baseWithholding is a period's withholding over the deductions the stream had from its start.
func baseWithholding(a *Activity, base map[string]bool) int64 {
	var w int64
	for n, v := range a.Deductions {
		if (taxWord.MatchString(n) || n == "withholding" || strings.Contains(n, "withh")) && base[n] {
			w += v
		}
	}
	return w
}

// expected applies the terms in force to the reported activity: what the creator should be paid.
func expected(sl *slot) (*int64, *int64) {
	a := sl.act
	if a == nil {
		return nil, nil
	}
	ts := sl.terms
	var earned int64
	switch a.Model {
	case ModelFee:
		if a.Gross == nil || ts.fee == nil {
			return nil, nil
		}
		earned = *a.Gross - bps(*a.Gross, *ts.fee)
	case ModelRoyalty:
		if a.Gross == nil || ts.royalty == nil {
			return nil, nil
		}
		earned = bps(*a.Gross, *ts.royalty)
	case ModelPerUnit:
		if a.Units == nil || ts.unitRate == nil {
			return nil, nil
		}
		earned = divRound(*a.Units**ts.unitRate, 100000)
	case ModelAffiliate:
		if a.Conversions == nil || ts.commission == nil {
			return nil, nil
		}
		earned = *a.Conversions * *ts.commission
	default:
		return nil, nil
	}
	ded := int64(0)
	if ts.withholding != nil {
		ded += bps(earned, *ts.withholding)
	}
	names := make([]string, 0, len(ts.deductions))
	for n := range ts.deductions {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		ded += bps(earned, ts.deductions[n])
	}
	exp := earned + a.Adjustments - ded
	return &exp, &earned
}

// reconciledTolerance is the largest |variance| of a RECONCILED item: a cent, or 0.1% of the
// expected amount (rounding of fees and conversions by the platform).
func reconciledTolerance(exp int64) int64 {
	return max(1, abs(exp)/1000)
}

func (r *reconciler) item(s *series, sl *slot) {
	it := &Item{CreatorSourceID: s.info.SourceID, Period: sl.period, CalculationVersion: CalculationVersion,
		UpdatedAt: r.opts.AsOf, Currency: r.opts.Home}
	it.ID = id.Derive("rev", sl.period.Start, s.info.SourceID+"/"+s.info.Key+"/"+sl.period.Label)
	sl.item = it
	state := StateObserved
	weakest := Confirmed
	observe := func(kind EvidenceKind) {
		lv := Detected
		if kind == EvidenceAPI {
			lv = Confirmed
		}
		if weakest == Confirmed && lv == Detected {
			weakest = Detected
		}
	}
	if a := sl.act; a != nil {
		it.Currency = a.Currency
		it.GrossCents = a.Gross
		it.FeesCents, it.AdjustmentsCents, it.WithholdingCents = a.Fees, a.Adjustments, a.Withholding
		it.ReportedCents = a.Net
		it.Evidence = append(it.Evidence, a.Evidence)
		observe(a.Evidence.Kind)
		state = StateNormalized
		exp, earned := expected(sl)
		sl.expEarned = earned
		if exp != nil {
			it.ExpectedCents = exp
			state = StateExpected
			it.Estimated = append(it.Estimated, sl.inferred...)
			if len(sl.inferred) == 0 {
				for _, t := range r.l.Terms {
					if t.Stream == s.info.Key && t.Effective <= sl.period.Label && t.Field == mainTerm(a.Model) {
						it.Evidence = appendEvidence(it.Evidence, t.Evidence)
					}
				}
			}
		}
		if a.Net != nil {
			state = StateReported
		}
		if a.Adjustments != 0 {
			state = StateAdjusted
		}
	}
	if n := len(sl.scheduled); n > 0 {
		p := sl.scheduled[n-1]
		if sl.act == nil {
			it.Currency = p.Currency
		}
		it.ScheduledCents = ptr(p.AmountCents)
		for _, q := range sl.scheduled {
			it.Evidence = appendEvidence(it.Evidence, q.Evidence)
			observe(q.Evidence.Kind)
		}
		state = StateScheduled
	}
	if len(sl.settled) > 0 {
		var sum int64
		for _, p := range sl.settled {
			sum += p.AmountCents
			it.Evidence = appendEvidence(it.Evidence, p.Evidence)
			observe(p.Evidence.Kind)
			if p.Conversion != nil {
				c := *p.Conversion
				it.Conversion = &c
				it.Evidence = append(it.Evidence, Evidence{Kind: EvidenceDerived, Ref: p.Evidence.Ref, SourceID: p.Evidence.SourceID,
					ObservedAt: p.Evidence.ObservedAt, Excerpt: excerpt(fmt.Sprintf("%s converted to %s at %s %s per %s (rate source: %s)",
						money(c.From, p.AmountCents), money(c.To, c.AmountCents), c.Rate, c.To, c.From, c.RateSource))})
			}
		}
		if sl.act == nil {
			it.Currency = sl.settled[0].Currency
		}
		it.SettledCents = &sum
		state = StateSettled
	}
	if it.SettledCents != nil && it.ExpectedCents != nil {
		v := *it.SettledCents - *it.ExpectedCents
		it.VarianceCents = &v
		if abs(v) <= reconciledTolerance(*it.ExpectedCents) {
			state = StateReconciled
		} else {
			state = StateDiscrepancy
		}
	}
	if sl.conflict {
		state = StateReview
		it.Evidence = append(it.Evidence, Evidence{Kind: EvidenceDerived, Ref: "conflict:" + sl.period.Label, ObservedAt: r.opts.AsOf,
			Excerpt: "two statements report different amounts for this period; the later one is used"})
	}
	it.State = state
	if it.Evidence == nil {
		it.Evidence = []Evidence{}
	}
	r.level(it, weakest)
	if len(it.Estimated) > 0 && state == StateDiscrepancy {
		it.State = StateReview // a discrepancy against estimated terms needs a person to look
	}
	r.items = append(r.items, it)
}

func appendEvidence(evs []Evidence, e Evidence) []Evidence {
	for _, x := range evs {
		if x.Kind == e.Kind && x.Ref == e.Ref {
			return evs
		}
	}
	return append(evs, e)
}

// level sets an item's evidence level and confidence honestly: anything estimated makes it
// ESTIMATED; otherwise the weakest evidence behind its amounts decides.
func (r *reconciler) level(it *Item, weakest EvidenceLevel) {
	switch {
	case len(it.Estimated) > 0 || len(it.Evidence) == 0:
		it.EvidenceLevel, it.Confidence = Estimated, 0.6
		if it.ReportedCents == nil && it.SettledCents == nil {
			it.Confidence = 0.4
		}
	case weakest == Confirmed:
		it.EvidenceLevel, it.Confidence = Confirmed, 0.98
	default:
		it.EvidenceLevel, it.Confidence = Detected, 0.9
		if it.SettledCents == nil {
			it.Confidence = 0.85
		}
	}
	if it.State == StateReview {
		it.Confidence -= 0.2
	}
}
