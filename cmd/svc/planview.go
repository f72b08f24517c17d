package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/reflect/protoreflect"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/wire"
)

func enumName(e protoreflect.Enum) string { return wire.EnumString(e.Descriptor(), e.Number()) }

// bytesIEC renders a byte count for people (1.5 GiB). Every size the CLI prints uses binary
// units (KiB, MiB, GiB: powers of 1024), the units of its progress bars too.
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

func count(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// plural returns n and the noun, in the plural unless n is 1: "1 object", "2,000 objects".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return count(n) + " " + noun + "s"
}

// labeller names a source for people: its display name, with its id when it has one.
type labeller map[string]string

func (l labeller) name(sourceID string) string {
	if n := l[sourceID]; n != "" {
		return n + " (" + sourceID + ")"
	}
	return sourceID
}

type tally struct {
	n     int
	bytes int64
}

// renderPlan prints a plan the way a person reviews it: what is preserved, removed, kept and
// excluded and why, by storage class, the projected bytes and quota, the cost and the decision.
// Sources are named by their labels (nil: by id).
func renderPlan(w io.Writer, p *svcv1.Plan, labels labeller) error {
	mode := "live"
	if p.GetSimulated() {
		mode = "test mode, simulated"
	}
	fmt.Fprintf(w, "Plan %s  (%s, %s)\n", p.GetPlanId(), enumName(p.GetIntent()), mode)
	fmt.Fprintf(w, "  state    %s, expires %s\n", enumName(p.GetState()), p.GetExpiresAt().AsTime().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "  hash     %s\n\n", p.GetHash())

	actions := map[string]*tally{}
	classes := map[string]*tally{}
	classActions := map[string]map[string]bool{}
	classReasons := map[string]map[string]int{}
	for _, o := range p.GetObjects() {
		var names []string
		for _, a := range o.GetActions() {
			names = append(names, enumName(a))
		}
		key := strings.Join(names, " + ")
		if actions[key] == nil {
			actions[key] = &tally{}
		}
		actions[key].n++
		actions[key].bytes += o.GetExpectedSizeBytes()
		c := enumName(o.GetStorageClass())
		if classes[c] == nil {
			classes[c] = &tally{}
			classActions[c] = map[string]bool{}
		}
		classes[c].n++
		classes[c].bytes += o.GetExpectedSizeBytes()
		classActions[c][key] = true
		if classReasons[c] == nil {
			classReasons[c] = map[string]int{}
		}
		if r := o.GetStorageClassReason(); r != "" {
			classReasons[c][r]++
		}
	}
	symbol := func(k string) string {
		switch {
		case strings.Contains(k, "trash"), strings.Contains(k, "move"):
			return "-"
		case strings.Contains(k, "noop"):
			return " "
		}
		return "+"
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(w, "What would happen")
	for _, k := range sortedKeys(actions) {
		fmt.Fprintf(tw, "  %s %s\t%s\t%s\t\n", symbol(k), k, plural(actions[k].n, "object"), bytesIEC(actions[k].bytes))
	}
	if n := len(p.GetExcluded()); n > 0 {
		fmt.Fprintf(tw, "  x excluded\t%s\t\t\n", plural(n, "object"))
	}
	tw.Flush()

	if len(classes) > 0 {
		fmt.Fprintln(w, "\nBy storage class, and why")
		for _, c := range sortedKeys(classes) {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t  %s\n", c, count(classes[c].n), bytesIEC(classes[c].bytes), strings.Join(sortedKeys(classActions[c]), ", "))
			writeReasons(tw, classReasons[c])
		}
		tw.Flush()
	}
	if len(p.GetExcluded()) > 0 {
		fmt.Fprintln(w, "\nExcluded, and why")
		reasons := map[string]map[string]int{}
		for _, e := range p.GetExcluded() {
			r := enumName(e.GetReason())
			if reasons[r] == nil {
				reasons[r] = map[string]int{}
			}
			reasons[r][e.GetDetail()]++
		}
		for _, r := range sortedKeys(reasons) {
			for _, d := range sortedKeys(reasons[r]) {
				fmt.Fprintf(tw, "  %s\t%s\t  %s\n", r, count(reasons[r][d]), d)
			}
		}
		tw.Flush()
	}

	pr := p.GetProjection()
	fmt.Fprintln(w, "\nProjection")
	fmt.Fprintf(w, "  preserve %s · remove %s · transfer %s · reclaim %s\n",
		bytesIEC(pr.GetBytesToPreserve()), bytesIEC(pr.GetBytesToRemove()), bytesIEC(pr.GetBytesToTransfer()), bytesIEC(pr.GetProjectedReclaimBytes()))
	for _, q := range pr.GetProjectedQuota() {
		line := fmt.Sprintf("  %s: %s used afterwards", labels.name(q.GetSourceId()), bytesIEC(q.GetUsedBytesAfter()))
		if q.LimitBytes != nil {
			line = fmt.Sprintf("  %s: %s of %s used afterwards (%.1f%%)", labels.name(q.GetSourceId()), bytesIEC(q.GetUsedBytesAfter()), bytesIEC(q.GetLimitBytes()), q.GetPercentAfter())
		}
		fmt.Fprintln(w, line)
	}
	if ms := p.GetSourceMarkers(); len(ms) > 0 {
		// The markers are what an execution checks the sources against; people need only to
		// know when each source was read.
		fmt.Fprintln(w, "\nSources, as read for this plan")
		for _, m := range ms {
			fmt.Fprintf(w, "  %s, %s, read %s\n", labels.name(m.GetSourceId()), enumName(m.GetProvider()), m.GetObservedAt().AsTime().Format("2006-01-02 15:04 MST"))
		}
	}

	fmt.Fprintln(w, "\nCost")
	if m := p.GetMeter(); m == nil {
		fmt.Fprintln(w, "  none (test mode and end users are not billed)")
	} else {
		for _, l := range m.GetLines() {
			note := fmt.Sprintf("%d¢", l.GetEstimatedCents())
			if l.GetIncludedInAllowance() {
				note = "included"
			}
			fmt.Fprintf(tw, "  %s\t%g %s\t  %s\n", l.GetMeter(), l.GetQuantity(), l.GetUnit(), note)
		}
		tw.Flush()
		fmt.Fprintf(w, "  estimate %d¢ on %s", m.GetEstimatedCents(), m.GetRateCardVersion())
		if m.WithinStandingEnvelope != nil && !m.GetWithinStandingEnvelope() {
			fmt.Fprint(w, ", over the spending ceiling")
		}
		fmt.Fprintln(w)
	}

	pol := p.GetPolicy()
	fmt.Fprintf(w, "\nDecision: %s", enumName(pol.GetDecision()))
	if len(pol.GetRequiredApprovals()) > 0 {
		var names []string
		for _, a := range pol.GetRequiredApprovals() {
			names = append(names, approvalText(a))
		}
		fmt.Fprintf(w, " (needs %s)", strings.Join(names, ", "))
	}
	fmt.Fprintln(w)
	for _, r := range pol.GetReasons() {
		fmt.Fprintf(w, "  %s\n", r)
	}
	return nil
}

// needsUser reports whether authorizing a plan needs the end user's own approval (their
// session), which an application's key cannot give.
func needsUser(p *svcv1.Plan) bool {
	return p.GetPolicy().GetDecision() == svcv1.PolicyDecision_POLICY_DECISION_STEP_UP_REQUIRED &&
		slices.Contains(p.GetPolicy().GetRequiredApprovals(), svcv1.Approval_APPROVAL_HUMAN_USER)
}

// writeNextSteps prints, for a plan that can be authorized, the commands that authorize and
// apply it, runnable as printed (cf.commandLine).
func writeNextSteps(w io.Writer, cf *clientFlags, p *svcv1.Plan, intro string) {
	if st := p.GetState(); st != svcv1.PlanState_PLAN_STATE_VALIDATED && st != svcv1.PlanState_PLAN_STATE_DRAFT {
		return
	}
	user := needsUser(p)
	fmt.Fprintf(w, "\n%s\n", intro)
	if user {
		fmt.Fprintln(w, "  (it needs the end user's approval: their session authorizes it, not an API key)")
	}
	fmt.Fprintf(w, "  %s\n", cf.commandLine(user, "plan", "authorize", p.GetPlanId(), "--hash", p.GetHash()))
	fmt.Fprintf(w, "  %s\n", cf.commandLine(false, "apply", p.GetPlanId()))
}

// approvalText says what a required approval asks for, in words.
func approvalText(a svcv1.Approval) string {
	switch a {
	case svcv1.Approval_APPROVAL_HUMAN_USER:
		return "the end user's own approval"
	case svcv1.Approval_APPROVAL_DEVELOPER_OWNER:
		return "the approval of the application's owner"
	case svcv1.Approval_APPROVAL_CEILING_INCREASE:
		return "a higher spending ceiling"
	case svcv1.Approval_APPROVAL_SCOPE_STEP_UP:
		return "a wider grant for the application"
	}
	return enumName(a)
}

// maxReasons is how many reasons a class line lists; the rest are summed up.
const maxReasons = 4

// writeReasons writes a class's most common reasons under its line, most objects first. When a
// class has more distinct reasons than fit, reasons are grouped by their first signal (the text
// before the first ", " or " (").
func writeReasons(tw io.Writer, reasons map[string]int) {
	if len(reasons) > maxReasons {
		grouped := map[string]int{}
		for r, n := range reasons {
			head, _, cut := strings.Cut(r, ", ")
			head, _, cut2 := strings.Cut(head, " (")
			if cut || cut2 {
				head += ", ..."
			}
			grouped[head] += n
		}
		reasons = grouped
	}
	keys := sortedKeys(reasons)
	slices.SortStableFunc(keys, func(a, b string) int { return reasons[b] - reasons[a] })
	for i, r := range keys {
		if i == maxReasons {
			rest := 0
			for _, k := range keys[i:] {
				rest += reasons[k]
			}
			other := "other reasons"
			if len(keys)-i == 1 {
				other = "other reason"
			}
			fmt.Fprintf(tw, "  \t%s\t\t  and %d %s\n", count(rest), len(keys)-i, other)
			return
		}
		fmt.Fprintf(tw, "  \t%s\t\t  %s\n", count(reasons[r]), r)
	}
}

func renderPlanList(w io.Writer, plans []*svcv1.Plan) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLAN\tINTENT\tSTATE\tOBJECTS\tREMOVE\tCREATED")
	for _, p := range plans {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.GetPlanId(), enumName(p.GetIntent()), enumName(p.GetState()),
			count(len(p.GetObjects())), bytesIEC(p.GetProjection().GetBytesToRemove()), p.GetCreatedAt().AsTime().Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, cmp.Compare)
	return keys
}
