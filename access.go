package svc

import (
	"context"
	"errors"
	"fmt"
	"slices"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/plan"
	"svc.dev/svc/storage"
)

// ErrUnsupported is returned (wrapped) when the store lacks what an operation needs.
var ErrUnsupported = errors.New("unsupported")

// Access is who a scope acts as and what they may reach. The zero Access is the tenant's
// owner acting for themself: every source, every operation class.
//
// A scope made with As decides every authorization itself, once per call, on every resource
// the call names (the sources, destinations, plans, executions, receipts and vault objects in
// its arguments), so a host (the API server, an embedding program acting for a connection, a
// tool) passes the caller's access and never checks a grant of its own.
type Access struct {
	// Actor is who asks (nil: the tenant's owner, as a user).
	Actor *svcv1.Actor
	// Grant limits the operation classes (zero: all).
	Grant plan.Grant
	// Sources, when not empty, limits a delegated grant to these sources: a resource touching
	// any other source is refused (CodeForbidden); lists leave such resources out.
	Sources []string
}

// limited reports whether the access is limited to some sources.
func (a Access) limited() bool { return len(a.Sources) > 0 }

// allowsSource reports whether the access reaches a source.
func (a Access) allowsSource(id string) bool { return !a.limited() || slices.Contains(a.Sources, id) }

// As returns the scope acting with access a on the same tenant.
func (s *Scope) As(a Access) *Scope { return &Scope{c: s.c, t: s.t, access: a} }

// AccessOf is the access the scope acts with.
func (s *Scope) AccessOf() Access { return s.access }

// reachesSource refuses a source outside the grant.
func (s *Scope) reachesSource(id string) error {
	if !s.access.allowsSource(id) {
		return refused(CodeForbidden, "The connection's grant does not include source "+id+".")
	}
	return nil
}

// reaches reports whether the grant reaches every source a resource touches.
func (s *Scope) reaches(markers []*svcv1.SourceMarker) bool {
	for _, m := range markers {
		if !s.access.allowsSource(m.GetSourceId()) {
			return false
		}
	}
	return true
}

// reachesAll refuses a resource (what: "plan", "execution", "receipt") whose plan touches a
// source outside the grant.
func (s *Scope) reachesAll(markers []*svcv1.SourceMarker, what string) error {
	if !s.reaches(markers) {
		return refused(CodeForbidden, "The connection's grant does not include every source of this "+what+".")
	}
	return nil
}

// reachesPlanOf refuses a resource of plan planID (an execution, a receipt) when the grant
// does not reach every source of the plan; without a source grant nothing is read.
func (s *Scope) reachesPlanOf(ctx context.Context, planID, what string) error {
	if !s.access.limited() {
		return nil
	}
	p, err := s.c.store.Plans().Header(ctx, s.key(), planID)
	if err != nil {
		return err
	}
	return s.reachesAll(p.GetSourceMarkers(), what)
}

// allowsOperations refuses a plan whose operation classes the grant does not include.
func (s *Scope) allowsOperations(p *svcv1.Plan) error {
	ops := s.access.Grant.OperationClasses
	if ops == nil {
		return nil
	}
	for _, op := range p.GetOperationClasses() {
		if !slices.Contains(ops, enumWire(op)) {
			return refused(CodeForbidden, "The key's scopes and the connection's grant do not include "+enumWire(op)+".")
		}
	}
	return nil
}

// grantOr is g, or the scope's grant when g is zero.
func (s *Scope) grantOr(g plan.Grant) plan.Grant {
	if g.OperationClasses == nil {
		return s.access.Grant
	}
	return g
}

// actorOr is a, or the scope's actor, or the tenant's owner.
func (s *Scope) actorOr(a *svcv1.Actor) *svcv1.Actor {
	if a != nil {
		return a
	}
	return s.actor(s.access.Actor)
}

// resources are the store's listable resources; a store that keeps none (an embedder's own
// minimal Store) cannot list.
func (c *core) resources() (storage.Resources, error) {
	if c.hosted == nil {
		return nil, fmt.Errorf("list: the store does not keep listable resources (storage.Hosted): %w", ErrUnsupported)
	}
	return c.hosted.Resources(), nil
}
