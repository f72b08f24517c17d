package plan_test

import (
	"errors"
	"slices"
	"testing"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
)

func TestEstimate(t *testing.T) {
	pr := &svcv1.Projection{BytesToPreserve: 20e9, BytesToTransfer: 0}
	// Within every allowance.
	m := plan.Estimate(&svcv1.Projection{BytesToPreserve: 5e9}, &plan.Billing{CeilingCents: 10000})
	if m.EstimatedCents != 0 || !m.IncludedAllowanceApplied || !m.GetWithinStandingEnvelope() || m.RateCardVersion != "developer-2026-09" || len(m.Lines) != 4 {
		t.Fatalf("within allowance: %v", m)
	}
	// Past every allowance: 1 plan 10c, 1 execution 50c, 20 GB transferred 300c, 20 GB-month 80c.
	m = plan.Estimate(pr, &plan.Billing{CeilingCents: 10000, Usage: plan.Usage{Plans: 100, Executions: 25, TransferredBytes: 50e9, StoredByteMonths: 10e9}})
	want := map[string]int64{"plans": 10, "executions": 50, "data_transferred": 300, "developer_storage": 80}
	for _, l := range m.Lines {
		if l.EstimatedCents != want[l.Meter] || l.IncludedInAllowance {
			t.Errorf("%s: %d cents (included %v), want %d", l.Meter, l.EstimatedCents, l.IncludedInAllowance, want[l.Meter])
		}
	}
	if m.EstimatedCents != 440 || m.IncludedAllowanceApplied {
		t.Fatalf("total %d", m.EstimatedCents)
	}
	// Straddling the allowance: 45 GB used + 20 GB = 15 GB over -> 225 cents.
	m = plan.Estimate(pr, &plan.Billing{CeilingCents: 100, SpentCents: 0, Usage: plan.Usage{Plans: 100, Executions: 25, TransferredBytes: 45e9, StoredByteMonths: 10e9}})
	if l := m.Lines[2]; l.Meter != "data_transferred" || l.EstimatedCents != 225 {
		t.Fatalf("straddle: %v", l)
	}
	if m.GetWithinStandingEnvelope() {
		t.Fatal("355 cents does not fit a 100-cent ceiling")
	}
}

func TestDecide(t *testing.T) {
	app := &svcv1.Actor{Type: svcv1.ActorType_ACTOR_TYPE_DEVELOPER_APPLICATION, PrincipalId: "key_1"}
	removing := func(n int, preserved bool) *svcv1.Plan {
		p := &svcv1.Plan{Actor: app, OperationClasses: []svcv1.OperationClass{1, 2, 4},
			SourceMarkers: []*svcv1.SourceMarker{{SourceId: "src_a"}}}
		for range n {
			acts := []svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_TRASH}
			if preserved {
				acts = append([]svcv1.PlanAction{svcv1.PlanAction_PLAN_ACTION_PRESERVE}, acts...)
			}
			p.Objects = append(p.Objects, &svcv1.PlanObject{Actions: acts, PreservationElected: preserved, ExpectedSizeBytes: 10})
		}
		return p
	}
	connected := map[string]svcv1.SourceStatus{"src_a": svcv1.SourceStatus_SOURCE_STATUS_CONNECTED}
	all := plan.Grant{OperationClasses: []string{"discover", "preserve", "remove"}}
	cases := []struct {
		name string
		p    *svcv1.Plan
		d    plan.Decision
		want svcv1.PolicyDecision
		appr []svcv1.Approval
	}{
		{"allow", removing(10, true), plan.Decision{SourceStatus: connected, Grant: all}, svcv1.PolicyDecision_POLICY_DECISION_ALLOW, nil},
		{"deny: source needs reauth", removing(1, true), plan.Decision{SourceStatus: map[string]svcv1.SourceStatus{"src_a": svcv1.SourceStatus_SOURCE_STATUS_REAUTH_REQUIRED}}, svcv1.PolicyDecision_POLICY_DECISION_DENY, nil},
		{"deny: app removes without preserving", removing(1, false), plan.Decision{SourceStatus: connected, Grant: all}, svcv1.PolicyDecision_POLICY_DECISION_DENY, nil},
		{"scope step-up", removing(1, true), plan.Decision{SourceStatus: connected, Grant: plan.Grant{OperationClasses: []string{"discover", "preserve"}}}, svcv1.PolicyDecision_POLICY_DECISION_STEP_UP_REQUIRED, []svcv1.Approval{svcv1.Approval_APPROVAL_SCOPE_STEP_UP}},
		{"human approval over the removal limit", removing(1001, true), plan.Decision{SourceStatus: connected, Grant: all}, svcv1.PolicyDecision_POLICY_DECISION_STEP_UP_REQUIRED, []svcv1.Approval{svcv1.Approval_APPROVAL_HUMAN_USER}},
		{"the user's approval satisfies it", removing(1001, true), plan.Decision{SourceStatus: connected, Grant: all, Approvals: plan.Approvals{HumanUser: true}}, svcv1.PolicyDecision_POLICY_DECISION_ALLOW, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pol := plan.Decide(c.p, c.d)
			if pol.Decision != c.want || !slices.Equal(pol.RequiredApprovals, c.appr) || len(pol.Reasons) == 0 || pol.PolicyVersion != plan.PolicyVersion {
				t.Fatalf("got %v %v %v", pol.Decision, pol.RequiredApprovals, pol.Reasons)
			}
		})
	}
	// Money: over the ceiling, and charges without billable_execute.
	p := removing(1, true)
	p.Meter = &svcv1.PlanMeter{EstimatedCents: 500, WithinStandingEnvelope: new(bool)}
	pol := plan.Decide(p, plan.Decision{SourceStatus: connected, Grant: all, Billing: &plan.Billing{CeilingCents: 100}})
	if !slices.Equal(pol.RequiredApprovals, []svcv1.Approval{svcv1.Approval_APPROVAL_CEILING_INCREASE, svcv1.Approval_APPROVAL_DEVELOPER_OWNER}) {
		t.Fatalf("billing approvals %v", pol.RequiredApprovals)
	}
}

func TestStates(t *testing.T) {
	all := []svcv1.PlanState{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	allowed := map[[2]svcv1.PlanState]bool{}
	for _, pair := range [][2]svcv1.PlanState{
		{1, 2}, {1, 10}, {1, 11}, {1, 8}, {1, 9},
		{2, 3}, {2, 10}, {2, 11}, {2, 8}, {2, 9},
		{3, 4}, {3, 11}, {3, 8}, {3, 9},
		{4, 5}, {4, 6}, {4, 7},
		{5, 6}, {5, 7},
	} {
		allowed[pair] = true
	}
	for _, from := range all {
		for _, to := range all {
			p := &svcv1.Plan{State: from}
			err := plan.Transition(p, to)
			if allowed[[2]svcv1.PlanState{from, to}] {
				if err != nil || p.State != to {
					t.Errorf("%v -> %v refused: %v", from, to, err)
				}
			} else if !errors.Is(err, plan.ErrInvalidState) || p.State != from {
				t.Errorf("%v -> %v allowed", from, to)
			}
		}
	}
	for _, s := range []svcv1.PlanState{6, 7, 8, 9, 10, 11} {
		if !plan.Final(s) {
			t.Errorf("%v is not final", s)
		}
	}
}
