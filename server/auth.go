package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
)

// authenticate finds the caller's credential and checks the endpoint accepts it. A public
// endpoint ignores credentials altogether.
func (s *Server) authenticate(ctx context.Context, m *method, in incoming, caller *Caller) *rpc.Problem {
	if m.public() {
		return nil
	}
	if authz := in.header.Get("Authorization"); authz != "" {
		secret, ok := strings.CutPrefix(authz, "Bearer ")
		if !ok {
			return rpc.NewProblem(http.StatusUnauthorized, rpc.CodeUnauthenticated, "Authorization must be a Bearer API key.")
		}
		key, err := s.devs.AuthenticateKey(ctx, strings.TrimSpace(secret))
		if err != nil {
			return rpc.FromError(err)
		}
		caller.Key = key
		if !m.accepts(svcv1.Credential_CREDENTIAL_API_KEY) {
			return rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "This endpoint requires a signed-in user, not an API key.")
		}
		return nil
	}
	if token := sessionToken(in.header); token != "" {
		u, err := s.accounts.Authenticate(ctx, token)
		if err != nil {
			return rpc.FromError(err)
		}
		caller.User, caller.SessionToken = u, token
		if !m.accepts(svcv1.Credential_CREDENTIAL_SESSION) {
			return rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "This endpoint requires a developer API key.")
		}
		return nil
	}
	return rpc.NewProblem(http.StatusUnauthorized, rpc.CodeUnauthenticated, "A valid credential is required: an API key in Authorization: Bearer, or the svc_session cookie.")
}

func sessionToken(h http.Header) string {
	r := http.Request{Header: h}
	c, err := r.Cookie(platform.SessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// resolveTenant decides which tenant the request acts on and enforces key scopes and
// connection grants. A developer key reaches an end user's tenant only through a connection
// of its own application and mode, within the connection's grant.
//
// A session acts on the user's live tenant, or on their test tenant with the header
// Svc-Mode: test (how a user reviews and approves what a test-mode application planned).
func (s *Server) resolveTenant(ctx context.Context, m *method, header http.Header, req proto.Message, caller *Caller) *rpc.Problem {
	connID := ""
	if m.connectionField != nil {
		connID = req.ProtoReflect().Get(m.connectionField).String()
	}
	op := m.endpoint.GetOperationClass()
	switch {
	case caller.User != nil:
		if connID != "" {
			return rpc.Invalid("connection_id", "is only accepted with a developer API key")
		}
		if m.endpoint.GetAddressedById() {
			return s.resolveByID(ctx, m, req, caller)
		}
		mode := platform.ModeLive
		switch m := header.Get("Svc-Mode"); m {
		case "", "live":
		case "test":
			mode = platform.ModeTest
		default:
			return rpc.Invalid("Svc-Mode", "must be test or live")
		}
		caller.Tenant = platform.Tenant{Owner: caller.User.ID, Mode: mode}
	case caller.Key != nil:
		k := caller.Key
		if op != "" && !slices.Contains(k.Scopes, op) {
			return rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "The API key's scopes do not include "+op+".")
		}
		if connID == "" && m.endpoint.GetAddressedById() {
			return s.resolveByID(ctx, m, req, caller)
		}
		if connID == "" {
			if m.endpoint.GetConnectionScoped() {
				return rpc.Invalid("connection_id", "is required with a developer API key")
			}
			caller.Tenant = platform.Tenant{Owner: k.OrgID, Mode: k.Mode}
			return nil
		}
		conn, err := s.devs.Connection(ctx, k, connID)
		if errors.Is(err, platform.ErrNotFound) {
			return rpc.NewProblem(http.StatusNotFound, rpc.CodeNotFound, "The connection does not exist.")
		}
		if err != nil {
			return rpc.FromError(err)
		}
		if op != "" && !conn.Grant.Allows(op) {
			return rpc.NewProblem(http.StatusForbidden, rpc.CodeForbidden, "The connection's grant does not include "+op+".")
		}
		caller.Connection = conn
		caller.Tenant = conn.Tenant()
	}
	return nil
}

// secureCookies reports whether cookies must be Secure: the request came over TLS, or the
// server's external origin is https (TLS ends at a proxy in front of svc).
func (s *Server) secureCookies(r *http.Request) bool {
	return (r != nil && r.TLS != nil) || strings.HasPrefix(strings.ToLower(s.cfg.BaseURL), "https://")
}

// parseTenant reads a tenant's string form ("live:usr_...").
func parseTenant(s string) (platform.Tenant, error) { return svc.ParseTenant(s) }
