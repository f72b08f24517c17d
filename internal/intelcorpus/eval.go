package intelcorpus

import (
	"fmt"
	"io"
	"math"
	"strings"

	"svc.dev/svc/intel"
)

// Counts are the hits and misses of one class.
type Counts struct{ TP, FP, FN int }

// Precision is TP/(TP+FP), 1 when nothing was predicted.
func (c Counts) Precision() float64 { return ratio(c.TP, c.TP+c.FP) }

// Recall is TP/(TP+FN), 1 when nothing was expected.
func (c Counts) Recall() float64 { return ratio(c.TP, c.TP+c.FN) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

// Report is how a scan's result compares with a corpus's labels.
type Report struct {
	Traps                    map[string]*Counts // per trap type (not "unknown")
	AllTraps                 Counts             // micro-average over trap types
	ServicesExpected         int
	ServicesFound            int // expected services with a meter
	MetersUnexpected         int // meters for services that should have none (noise, one-offs, trials not converted)
	UnexpectedTraps          int // of which with a trap
	PeriodRight, PeriodTotal int
	CentsRight, CentsTotal   int
	TrialsExpected           int
	TrialsRight              int // found with the right outcome
	TrialsFound              int
	TrialsUnexpected         int
	// Rules are each rule's meters: TP those whose trap type (or none) was right, FP the rest
	// (a wrong trap, a trap or meter where there should be none, none where there is one).
	Rules map[intel.Rule]*Counts
	// Reliability bins every meter by its confidence (0-0.1, ..., 0.9-1.0).
	Reliability [10]Bin
	Misses      []string // a sample of what went wrong, for reading
}

func metersKey(m intel.Meter) (string, string) {
	return strings.ToLower(m.ServiceDomain), "name:" + strings.ToLower(m.Service)
}

// Evaluate compares a result with the corpus's labels.
func Evaluate(c *Corpus, res intel.Result) *Report {
	r := &Report{Traps: map[string]*Counts{}, Rules: map[intel.Rule]*Counts{}}
	for _, ru := range intel.Rules {
		r.Rules[ru] = &Counts{}
	}
	for _, t := range intel.TrapTypes {
		if t != intel.NoTrap {
			r.Traps[string(t)] = &Counts{}
		}
	}
	byDomain := map[string]*ServiceLabel{}
	byName := map[string]*ServiceLabel{}
	for i := range c.Services {
		l := &c.Services[i]
		byDomain[strings.ToLower(l.Domain)] = l
		byName["name:"+strings.ToLower(l.Name)] = l
		if l.Meter {
			r.ServicesExpected++
		}
	}
	found := map[*ServiceLabel]bool{}
	miss := func(format string, a ...any) {
		if len(r.Misses) < 40 {
			r.Misses = append(r.Misses, fmt.Sprintf(format, a...))
		}
	}
	for _, m := range res.Meters {
		d, n := metersKey(m)
		l := byDomain[d]
		if l == nil {
			l = byName[n]
		}
		trap := string(m.TrapType)
		if l == nil || !l.Meter {
			r.MetersUnexpected++
			why := "noise"
			if l != nil {
				why = l.Scenario
			}
			r.calibrate(m, false)
			if trap != "unknown" {
				r.UnexpectedTraps++
				r.Traps[trap].FP++
				r.AllTraps.FP++
			}
			miss("unexpected meter %s (%s) trap %s [%s]", m.Service, m.ServiceDomain, trap, why)
			continue
		}
		found[l] = true
		r.calibrate(m, trap == l.Trap)
		if trap != "unknown" {
			if ok := trap == l.Trap; ok {
				r.Traps[trap].TP++
				r.AllTraps.TP++
			} else {
				r.Traps[trap].FP++
				r.AllTraps.FP++
				miss("%s [%s]: trap %s, want %s (%s)", l.Name, l.Scenario, trap, l.Trap, m.PrimaryDriver)
			}
		}
		if l.Trap != "unknown" && trap != l.Trap {
			r.Traps[l.Trap].FN++
			r.AllTraps.FN++
			if trap == "unknown" {
				miss("%s [%s]: no trap, want %s", l.Name, l.Scenario, l.Trap)
			}
		}
		r.PeriodTotal++
		if string(m.BillingPeriod) == l.Period {
			r.PeriodRight++
		} else {
			miss("%s [%s]: period %s, want %s", l.Name, l.Scenario, m.BillingPeriod, l.Period)
		}
		r.CentsTotal++
		if m.CurrentPeriodCostCents != nil && *m.CurrentPeriodCostCents == l.Current {
			r.CentsRight++
		} else {
			miss("%s [%s]: current %v, want %d", l.Name, l.Scenario, val(m.CurrentPeriodCostCents), l.Current)
		}
		if l.HasPrev {
			r.CentsTotal++
			if m.PreviousPeriodCostCents != nil && *m.PreviousPeriodCostCents == l.Previous {
				r.CentsRight++
			} else {
				miss("%s [%s]: previous %v, want %d", l.Name, l.Scenario, val(m.PreviousPeriodCostCents), l.Previous)
			}
		}
	}
	for i := range c.Services {
		l := &c.Services[i]
		if !l.Meter {
			continue
		}
		if found[l] {
			r.ServicesFound++
			continue
		}
		miss("%s [%s]: no meter", l.Name, l.Scenario)
		if l.Trap != "unknown" {
			r.Traps[l.Trap].FN++
			r.AllTraps.FN++
		}
	}
	trials := map[string]intel.Trial{}
	for _, t := range res.Trials {
		if l := byDomain[strings.ToLower(t.ServiceDomain)]; l != nil {
			trials[l.Key] = t
		} else if l := byName["name:"+strings.ToLower(t.Service)]; l != nil {
			trials[l.Key] = t
		} else {
			r.TrialsUnexpected++
			miss("unexpected trial %s (%s)", t.Service, t.ServiceDomain)
		}
	}
	expected := map[string]bool{}
	for _, tl := range c.Trials {
		r.TrialsExpected++
		expected[tl.Key] = true
		t, ok := trials[tl.Key]
		if !ok {
			miss("trial of %s not found", tl.Key)
			continue
		}
		r.TrialsFound++
		if string(t.Status) == tl.Outcome {
			r.TrialsRight++
		} else {
			miss("trial of %s: %s, want %s", tl.Key, t.Status, tl.Outcome)
		}
	}
	for k := range trials {
		if !expected[k] {
			r.TrialsUnexpected++
			miss("unexpected trial of %s", k)
		}
	}
	return r
}

// Bin is the meters of a confidence bin: how many, their summed confidence, how many right.
type Bin struct {
	N, Right int
	Sum      float64
}

// Mean is the bin's mean confidence.
func (b Bin) Mean() float64 { return b.Sum / float64(max(b.N, 1)) }

// Precision is the share of the bin's meters that were right.
func (b Bin) Precision() float64 { return ratio(b.Right, b.N) }

func (r *Report) calibrate(m intel.Meter, ok bool) {
	c := r.Rules[m.Rule]
	if c == nil {
		c = &Counts{}
		r.Rules[m.Rule] = c
	}
	i := max(0, min(9, int(math.Floor(m.Confidence*10))))
	r.Reliability[i].N++
	r.Reliability[i].Sum += m.Confidence
	if ok {
		c.TP++
		r.Reliability[i].Right++
	} else {
		c.FP++
	}
}

func val(p *int64) any {
	if p == nil {
		return "none"
	}
	return *p
}

// Print writes the report as a table.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "%-24s %9s %9s %5s %5s %5s\n", "trap", "precision", "recall", "TP", "FP", "FN")
	for _, t := range intel.TrapTypes {
		if t == intel.NoTrap {
			continue
		}
		c := r.Traps[string(t)]
		fmt.Fprintf(w, "%-24s %9.3f %9.3f %5d %5d %5d\n", t, c.Precision(), c.Recall(), c.TP, c.FP, c.FN)
	}
	fmt.Fprintf(w, "%-24s %9.3f %9.3f %5d %5d %5d\n", "all traps", r.AllTraps.Precision(), r.AllTraps.Recall(), r.AllTraps.TP, r.AllTraps.FP, r.AllTraps.FN)
	fmt.Fprintf(w, "\nservice recall           %.3f (%d of %d recurring paid services have a meter)\n", ratio(r.ServicesFound, r.ServicesExpected), r.ServicesFound, r.ServicesExpected)
	fmt.Fprintf(w, "unexpected meters        %d (%d with a trap)\n", r.MetersUnexpected, r.UnexpectedTraps)
	fmt.Fprintf(w, "billing-period accuracy  %.3f (%d of %d)\n", ratio(r.PeriodRight, r.PeriodTotal), r.PeriodRight, r.PeriodTotal)
	fmt.Fprintf(w, "exact cents (cur+prev)   %.3f (%d of %d)\n", ratio(r.CentsRight, r.CentsTotal), r.CentsRight, r.CentsTotal)
	fmt.Fprintf(w, "trial outcome accuracy   %.3f (%d of %d right; %d found; %d unexpected trials)\n", ratio(r.TrialsRight, r.TrialsExpected), r.TrialsRight, r.TrialsExpected, r.TrialsFound, r.TrialsUnexpected)
	fmt.Fprintf(w, "\nconfidence by rule (a meter's confidence is its rule's measured precision, intel.RuleConfidence):\n")
	fmt.Fprintf(w, "  %-22s %5s %5s %9s %10s\n", "rule", "right", "wrong", "precision", "confidence")
	for _, ru := range intel.Rules {
		c := r.Rules[ru]
		fmt.Fprintf(w, "  %-22s %5d %5d %9.3f %10.3f\n", ru, c.TP, c.FP, c.Precision(), intel.RuleConfidence(ru))
	}
	fmt.Fprintf(w, "\nreliability (every meter): bin  n  mean confidence  observed precision\n")
	for i, b := range r.Reliability {
		if b.N > 0 {
			fmt.Fprintf(w, "  %.1f-%.1f  %4d  %.3f  %.3f\n", float64(i)/10, float64(i+1)/10, b.N, b.Mean(), b.Precision())
		}
	}
}
