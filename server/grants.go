package server

import (
	"slices"

	"svc.dev/svc"

	"svc.dev/svc/plan"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
)

// scope is the layer's scope for a request: the caller's tenant, who they are and what their
// key and connection grant them. The scope decides every authorization on the resources a
// call names; handlers check none themselves.
func (s *Server) scope(c *Caller) *svc.Scope {
	a := svc.Access{Actor: c.Actor(), Grant: grantOf(c)}
	if c.Connection != nil {
		a.Sources = c.Connection.Grant.SourceIDs
	}
	return s.core.Tenant(c.Tenant).As(a)
}

// grant is what the caller may do: everything for the user themself; for a key, its scopes,
// intersected with its connection's grant.
func grantOf(c *Caller) plan.Grant {
	if c.Key == nil {
		return plan.Grant{}
	}
	ops := slices.Clone(c.Key.Scopes)
	if c.Connection != nil {
		ops = slices.DeleteFunc(ops, func(op string) bool { return !c.Connection.Grant.Allows(op) })
	}
	return plan.Grant{OperationClasses: rpc.NonNil(ops)}
}

// billing is the commercial context of a live developer key, without usage (planBilling adds
// it); test mode and end users are never billed.
func billingOf(c *Caller) *plan.Billing {
	if c.Key == nil || c.Key.Mode != platform.ModeLive {
		return nil
	}
	return &plan.Billing{CeilingCents: DefaultCeilingCents, CanBill: slices.Contains(c.Key.Scopes, "billable_execute")}
}
