package server

import (
	"net/http"
	"slices"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
)

// grantReaches reports whether a connection's grant covers every source a resource touches.
func (c *Caller) grantReaches(markers []*svcv1.SourceMarker) bool {
	if c.Connection == nil {
		return true
	}
	for _, m := range markers {
		if !c.Connection.Grant.AllowsSource(m.GetSourceId()) {
			return false
		}
	}
	return true
}

// sourceInGrant answers 403 for a source outside a connection's grant.
func (c *Caller) sourceInGrant(id string) error {
	if c.Connection != nil && !c.Connection.Grant.AllowsSource(id) {
		return newProblem(http.StatusForbidden, codeForbidden, "The connection's grant does not include source "+id+".")
	}
	return nil
}

// grant is what the caller may do: everything for the user themself; for a key, its scopes,
// intersected with its connection's grant.
func (c *Caller) grant() plan.Grant {
	if c.Key == nil {
		return plan.Grant{}
	}
	ops := slices.Clone(c.Key.Scopes)
	if c.Connection != nil {
		ops = slices.DeleteFunc(ops, func(op string) bool { return !c.Connection.Grant.Allows(op) })
	}
	return plan.Grant{OperationClasses: nonNil(ops)}
}

// billing is the commercial context of a live developer key, without usage (planBilling adds
// it); test mode and end users are never billed.
func (c *Caller) billing() *plan.Billing {
	if c.Key == nil || c.Key.Mode != platform.ModeLive {
		return nil
	}
	return &plan.Billing{CeilingCents: DefaultCeilingCents, CanBill: slices.Contains(c.Key.Scopes, "billable_execute")}
}
