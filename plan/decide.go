package plan

import (
	"fmt"
	"slices"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
)

// PolicyVersion names the decision rules below (policyVersion in plans and receipts).
const PolicyVersion = "svc-policy-2026-11"

// Without the end user's approval, an application or agent may remove at most this much in
// one plan.
const (
	DelegatedRemovalObjects = 1000
	DelegatedRemovalBytes   = 5 << 30 // 5 GiB
)

// Approvals are what an authorizer brings: the end user approving in person, or the
// developer organization's owner.
type Approvals struct {
	HumanUser, DeveloperOwner bool
}

// Decision is what the decision is taken from besides the plan.
type Decision struct {
	// SourceStatus is each planned source's status.
	SourceStatus map[string]svcv1.SourceStatus
	Grant        Grant
	Billing      *Billing
	Approvals    Approvals
}

// Decide takes the policy decision for a plan:
//
//   - deny when a source is not connected, or when an application or agent would remove content
//     without preserving it first;
//   - step_up_required when the plan needs operation classes the grant lacks (scope_step_up), an
//     application or agent removes more than DelegatedRemovalObjects objects or
//     DelegatedRemovalBytes bytes (human_user), the estimate would pass the spending ceiling
//     (ceiling_increase), or a key without billable_execute would incur charges (developer_owner);
//   - allow otherwise.
//
// Approvals given satisfy human_user and developer_owner; scope and ceiling need the grant or
// the ceiling changed.
func Decide(p *svcv1.Plan, d Decision) *svcv1.PlanPolicy {
	pol := &svcv1.PlanPolicy{PolicyVersion: PolicyVersion, DecisionId: id.New("dec"), Reasons: []string{}, RequiredApprovals: []svcv1.Approval{}}
	var deny []string
	for _, m := range p.GetSourceMarkers() {
		if st := d.SourceStatus[m.GetSourceId()]; st != svcv1.SourceStatus_SOURCE_STATUS_UNSPECIFIED && st != svcv1.SourceStatus_SOURCE_STATUS_CONNECTED {
			deny = append(deny, fmt.Sprintf("source %s is %s; reconnect it first", m.GetSourceId(), enumString(st)))
		}
	}
	delegated := p.GetActor().GetType() != svcv1.ActorType_ACTOR_TYPE_USER
	var removeObjects, removeBytes int64
	unpreserved := false
	for _, o := range p.GetObjects() {
		if slices.Contains(o.Actions, trash) || slices.Contains(o.Actions, moveTo) {
			removeObjects++
			removeBytes += o.ExpectedSizeBytes
			unpreserved = unpreserved || !o.PreservationElected
		}
	}
	if delegated && unpreserved {
		deny = append(deny, "applications and agents may not remove content without preserving it first")
	}
	if len(deny) > 0 {
		pol.Decision, pol.Reasons = svcv1.PolicyDecision_POLICY_DECISION_DENY, deny
		return pol
	}

	need := func(a svcv1.Approval, reason string) {
		pol.RequiredApprovals = append(pol.RequiredApprovals, a)
		pol.Reasons = append(pol.Reasons, reason)
	}
	if d.Grant.OperationClasses != nil {
		var missing []string
		for _, op := range p.GetOperationClasses() {
			if s := enumString(op); !slices.Contains(d.Grant.OperationClasses, s) {
				missing = append(missing, s)
			}
		}
		if len(missing) > 0 {
			need(svcv1.Approval_APPROVAL_SCOPE_STEP_UP, fmt.Sprintf("the grant does not include %v", missing))
		}
	}
	if delegated && !d.Approvals.HumanUser && (removeObjects > DelegatedRemovalObjects || removeBytes > DelegatedRemovalBytes) {
		need(svcv1.Approval_APPROVAL_HUMAN_USER, fmt.Sprintf("removes %d objects (%.1f GiB); an application may remove at most %d objects or %d GiB without the user's approval",
			removeObjects, float64(removeBytes)/(1<<30), DelegatedRemovalObjects, DelegatedRemovalBytes>>30))
	}
	if b, m := d.Billing, p.GetMeter(); b != nil && m != nil {
		// Against the spend and ceiling now, not when the plan was built: raising the ceiling
		// satisfies ceiling_increase without a new plan.
		if b.SpentCents+m.GetEstimatedCents() > b.CeilingCents {
			need(svcv1.Approval_APPROVAL_CEILING_INCREASE, fmt.Sprintf("the estimate of %d cents would pass the spending ceiling (%d of %d cents spent this month)",
				m.GetEstimatedCents(), b.SpentCents, b.CeilingCents))
		}
		if m.GetEstimatedCents() > 0 && !b.CanBill && !d.Approvals.DeveloperOwner {
			need(svcv1.Approval_APPROVAL_DEVELOPER_OWNER, "the plan incurs charges and the key lacks billable_execute")
		}
	}
	if len(pol.RequiredApprovals) > 0 {
		pol.Decision = svcv1.PolicyDecision_POLICY_DECISION_STEP_UP_REQUIRED
		return pol
	}
	pol.Decision = svcv1.PolicyDecision_POLICY_DECISION_ALLOW
	pol.Reasons = append(pol.Reasons, "within the grant, the delegated removal limits and the spending ceiling")
	return pol
}
