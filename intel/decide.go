package intel

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Errors of decisions and meter actions.
var (
	// ErrInvalidDecision is returned when a decision is not keep, stop or remind, or remind has
	// no time in the future.
	ErrInvalidDecision = errors.New("intel: invalid decision")
	// ErrInvalidAction is returned for an unknown meter action or a set_limit without a limit.
	ErrInvalidAction = errors.New("intel: invalid action")
	// ErrNoMechanism is returned by intervene when svc has no mechanism to act on the service
	// (the edge answers 409).
	ErrNoMechanism = errors.New("intel: no mechanism to intervene")
)

// Exclusion reasons a stop plan carries (the spec's plan exclusion reasons).
const UnsupportedCapability = "unsupported_capability"

// StopPlan is what a plan needs to stop a trial's mail or subscription: either a one-click
// unsubscribe (RFC 8058) svc can perform, or an exclusion saying exactly what the user must do.
type StopPlan struct {
	// Intent is "unsubscribe" when svc can act (OneClick is set), else "".
	Intent string
	// OneClick is the RFC 8058 request: POST URL with body "List-Unsubscribe=One-Click".
	OneClick *OneClick
	// Excluded is set when svc cannot act: Reason unsupported_capability, Detail what to do.
	Excluded *Exclusion
}

// OneClick is an RFC 8058 one-click unsubscribe request.
type OneClick struct {
	URL  string // the https URI of List-Unsubscribe
	Body string // "List-Unsubscribe=One-Click"
	Ref  string // the Message-ID of the message that offered it
}

// Exclusion is a plan exclusion.
type Exclusion struct {
	Reason string
	Detail string
}

// DecisionOutcome is what deciding on a trial produced: the trial with its decision, the
// action to take ("none", "unsubscribe", "remind"), and what a plan or reminder needs.
type DecisionOutcome struct {
	Trial  Trial
	Action string
	Stop   *StopPlan  // for stop
	Remind *time.Time // for remind: when to fire the reminder event and webhook
}

// Decide records the user's decision on a trial. Stop produces what a plan needs (an
// unsubscribe of intent "unsubscribe" when the service supports one-click, else an exclusion
// with unsupported_capability); remind needs a time after now.
func Decide(t Trial, d Decision, remindAt, now time.Time) (DecisionOutcome, error) {
	out := DecisionOutcome{Trial: t, Action: "none"}
	switch d {
	case Keep:
		out.Trial.RemindAt = nil
	case Stop:
		out.Action = "unsubscribe"
		out.Stop = stopPlan(t)
		out.Trial.RemindAt = nil
	case Remind:
		if remindAt.IsZero() || !remindAt.After(now) {
			return DecisionOutcome{}, fmt.Errorf("%w: remind needs remind_at in the future", ErrInvalidDecision)
		}
		out.Action = "remind"
		out.Trial.RemindAt = ptr(remindAt.UTC())
		out.Remind = out.Trial.RemindAt
	default:
		return DecisionOutcome{}, fmt.Errorf("%w: %q", ErrInvalidDecision, d)
	}
	out.Trial.Decision = d
	out.Trial.LastUpdated = now.UTC()
	return out, nil
}

func stopPlan(t Trial) *StopPlan {
	u := t.Unsubscribe
	if u.OneClick && strings.HasPrefix(u.URL, "https://") {
		return &StopPlan{Intent: "unsubscribe", OneClick: &OneClick{URL: u.URL, Body: "List-Unsubscribe=One-Click", Ref: u.Ref}}
	}
	return &StopPlan{Excluded: &Exclusion{Reason: UnsupportedCapability,
		Detail: fmt.Sprintf("%s does not offer one-click unsubscribe (RFC 8058); %s", t.Service, CancelInstructions(t))}}
}

// CancelInstructions says what the user must do to end a trial themself: where to cancel it and
// by when, and that stopping its mail does not stop its billing.
func CancelInstructions(t Trial) string {
	u := t.Unsubscribe
	detail := fmt.Sprintf("cancel the trial in your %s account", t.Service)
	switch {
	case u.Manage != "":
		detail += " at " + u.Manage
	case t.ServiceDomain != "":
		detail += " at " + t.ServiceDomain
	}
	if t.EndsAt != nil {
		detail += " before " + t.EndsAt.Format("January 2, 2006")
	}
	detail += "; stopping its mail does not stop its billing."
	return detail
}

// Act applies a user's action to a meter. Explain fills Explanation from the evidence; set_limit
// needs limitCents and recomputes the next threshold against it; intervene returns
// ErrNoMechanism (mail gives svc no way to change a subscription).
func Act(m Meter, a Action, limitCents *int64, now time.Time) (Meter, error) {
	switch a {
	case Watch, Ignore:
	case Explain:
		m.Explanation = ExplainMeter(m)
	case SetLimit:
		if limitCents == nil || *limitCents < 0 {
			return Meter{}, fmt.Errorf("%w: set_limit needs limit_cents", ErrInvalidAction)
		}
		m.LimitCents = ptr(*limitCents)
		m.NextThresholdCents = ptr(*limitCents)
		m.ProjectedThresholdAt = nil
		m.EvidenceLevel = honestLevel(m)
	case Intervene:
		if !m.InterventionCapable {
			return Meter{}, ErrNoMechanism
		}
	default:
		return Meter{}, fmt.Errorf("%w: %q", ErrInvalidAction, a)
	}
	m.Action = a
	m.LastUpdated = now.UTC()
	return m, nil
}

// ExplainMeter says in plain words what a meter found and what shows it.
func ExplainMeter(m Meter) string {
	var b strings.Builder
	period := string(m.BillingPeriod)
	if m.BillingPeriod == Unknown {
		period = "recurring"
	}
	fmt.Fprintf(&b, "%s bills you on a %s basis", m.Service, period)
	if m.CurrentPeriodCostCents != nil {
		fmt.Fprintf(&b, "; the last bill was %s", money(*m.CurrentPeriodCostCents))
	}
	if m.PreviousPeriodCostCents != nil {
		fmt.Fprintf(&b, " (the one before, %s)", money(*m.PreviousPeriodCostCents))
	}
	b.WriteString(". ")
	what := map[TrapType]string{
		MeteredOverage:       "You are paying for usage beyond what your plan includes",
		TeaserExpiration:     "Your introductory price ends and the regular price follows",
		RenewalJump:          "Your price went up at renewal, or is announced to",
		FreeCreditExhaustion: "Free credits have been paying for your usage and are running out",
		SeatGrowth:           "You are paying for more seats bill after bill",
		AutoUpgrade:          "The service moved you to a more expensive plan by itself",
		Surcharge:            "Your bill carries fees beyond the price and tax",
		VariableBill:         "Your bill changes a lot from one period to the next",
		NoTrap:               "No billing trap was found",
	}[m.TrapType]
	b.WriteString(what)
	if m.PrimaryDriver != "" {
		b.WriteString(": " + m.PrimaryDriver)
	}
	b.WriteString(". ")
	if m.ProjectedPeriodCostCents != nil {
		fmt.Fprintf(&b, "Estimated next bill: %s", money(*m.ProjectedPeriodCostCents))
		if m.ProjectedThresholdAt != nil {
			fmt.Fprintf(&b, " (from %s)", m.ProjectedThresholdAt.Format("January 2, 2006"))
		}
		b.WriteString("; this is an estimate, not a bill. ")
	}
	for _, e := range m.Evidence {
		if e.Kind == KindEmail && e.Excerpt != "" {
			fmt.Fprintf(&b, "Mail of %s says: %q. ", e.ObservedAt.Format("January 2, 2006"), e.Excerpt)
			break
		}
	}
	return strings.TrimSpace(b.String())
}
