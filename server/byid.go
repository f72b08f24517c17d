package server

import (
	"context"
	"errors"
	"net/http"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/storage"
)

// Resources addressed by id (docs/api.md). An endpoint marked (svc.v1.endpoint).addressed_by_id
// names an end user's resource by the id in its path. Called without connection_id, the id
// resolves to the tenant that holds it, and then:
//
//   - a session reaches it when the tenant is the signed-in user's, live or test;
//   - a developer key reaches it in its own organization's tenant of its mode, or in an end
//     user's tenant of its mode through an active connection of its application to that user
//     whose grant includes the endpoint's operation class (and, where the grant names sources,
//     the resource's sources: a handler's 403 for a source outside the grant becomes 404).
//
// Anything else is 404 not_found, never 403, and costs what a miss costs: the same store
// reads happen whether the id exists or not.

// errByIDNotFound is the answer for an id the caller may not reach, whatever the reason.
func errByIDNotFound() *rpc.Problem {
	return rpc.NewProblem(http.StatusNotFound, rpc.CodeNotFound, "The resource does not exist.")
}

// resolveByID sets the caller's tenant (and connection) from the resource id in req.
func (s *Server) resolveByID(ctx context.Context, m *method, req proto.Message, caller *Caller) *rpc.Problem {
	caller.ByID = true
	rid := ""
	if f := m.desc.Input().Fields().ByName("id"); f != nil {
		rid = req.ProtoReflect().Get(f).String()
	}
	ref, err := s.store.OwnerOf(ctx, rid)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		return rpc.FromError(err)
	}
	tenant, perr := parseTenant(ref)
	found := err == nil && perr == nil
	switch {
	case caller.User != nil:
		if !found || tenant.Owner != caller.User.ID {
			return errByIDNotFound()
		}
		caller.Tenant = tenant
		return nil
	case caller.Key != nil:
		k := caller.Key
		// Read the application's connections to the owner whether or not the id exists (to
		// no one on a miss): a miss and a refusal cost the same, one index read.
		owner := ""
		if found {
			owner = tenant.Owner
		}
		conns, err := s.store.ConnectionsOfAppUser(ctx, k.AppID, owner)
		if err != nil {
			return rpc.FromError(err)
		}
		if !found || tenant.Mode != k.Mode {
			return errByIDNotFound()
		}
		if tenant.Owner == k.OrgID {
			caller.Tenant = tenant
			return nil
		}
		conn := connectionFor(conns, k, tenant, m.endpoint.GetOperationClass())
		if conn == nil {
			return errByIDNotFound()
		}
		caller.Connection, caller.Tenant = conn, tenant
		return nil
	}
	return errByIDNotFound()
}

// connectionFor picks the application's active connection to the tenant's user in the key's
// mode whose grant includes op: one unlimited to sources if there is one, else the oldest.
func connectionFor(conns []*platform.Connection, k *platform.APIKey, tenant platform.Tenant, op string) *platform.Connection {
	var pick *platform.Connection
	for _, c := range conns {
		if c.AppID != k.AppID || c.Mode != k.Mode || c.RevokedAt != nil || c.Status == platform.ConnectionRevoked ||
			c.Tenant() != tenant || (op != "" && !c.Grant.Allows(op)) {
			continue
		}
		if len(c.Grant.SourceIDs) == 0 {
			return c
		}
		if pick == nil || c.CreatedAt.Before(pick.CreatedAt) {
			pick = c
		}
	}
	return pick
}

// hideForbidden turns a handler's 403 forbidden (a grant that does not reach the resource's
// sources) into the 404 of an id the caller cannot reach. Policy decisions (action_denied,
// step_up_required) are answers about a resource the caller can see, and stay.
func hideForbidden(c *Caller, p *rpc.Problem) *rpc.Problem {
	if c != nil && c.ByID && p.Status == http.StatusForbidden && p.Code == rpc.CodeForbidden {
		return errByIDNotFound()
	}
	return p
}
