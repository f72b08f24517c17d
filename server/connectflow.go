package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/server/internal/connectflow"
)

// The connect flow (docs/connect.md) lives in server/internal/connectflow: an application
// starts a connect session with its key, the end user decides on the consent page, possibly
// connecting a new source at a provider through OAuth on the way, and an approval becomes a
// connection whose grant the edge enforces. This file wires it to the edge.

// OAuthProvider is how svc asks an end user's permission at a provider when they connect a
// source of that provider: the OAuth 2.0 authorization code flow with PKCE (S256). The
// callback is {BaseURL}/v1/connect/{provider}/callback; register it with the provider.
type OAuthProvider struct {
	// AuthURL and TokenURL are the provider's authorization and token endpoints.
	AuthURL, TokenURL string
	// ClientID and ClientSecret are svc's client credentials at the provider. The secret is
	// configuration: it is never logged nor stored (svc serve gives it to the vendor
	// connectors at each open, builtin.Options.Defaults, so they can refresh tokens).
	ClientID, ClientSecret string
	// AuthParams are extra parameters of the authorization URL (default for the vendor
	// connectors: what makes the provider issue a refresh token, DefaultAuthParams).
	AuthParams map[string]string
	// Scopes are the provider scopes asked for.
	Scopes []string
	// Kind is the kind of source the provider gives ("mail", "files"); default "mail" for
	// *_mail providers, else "files".
	Kind string
	// DisplayName names the provider to end users (default: from its name, "Vendor A Mail").
	DisplayName string
}

// DefaultAuthParams are the authorization URL parameters a vendor needs to issue a refresh
// token (Microsoft's comes with the offline_access scope instead).
var DefaultAuthParams = connectflow.DefaultAuthParams

// newConnectFlow makes the connect flow over the server's store and services.
func (s *Server) newConnectFlow() *connectflow.Flow {
	oauth := make(map[providers.Name]connectflow.OAuthProvider, len(s.cfg.OAuth))
	for name, p := range s.cfg.OAuth {
		oauth[name] = connectflow.OAuthProvider(p)
	}
	return connectflow.New(connectflow.Config{
		Sessions:   platform.NewConnectFlow(s.store, s.devs, s.sealer, s.cfg.Now),
		Accounts:   s.accounts,
		Developers: s.devs,
		Sources:    flowSources{s},
		Edge:       flowEdge{s},
		OAuth:      oauth,
		LocalRoots: s.cfg.LocalRoots,
		Dev:        s.cfg.Dev,
		Now:        s.cfg.Now,
		Log:        s.log,
	})
}

// registerConnectFlow installs the connect flow's RPCs: each decodes, calls the flow once and
// encodes.
func (s *Server) registerConnectFlow() {
	handle(s, svcv1connect.ConnectionServiceCreateConnectSessionProcedure, func(ctx context.Context, req *svcv1.CreateConnectSessionRequest) (*svcv1.ConnectSession, error) {
		return s.flow.CreateSession(ctx, flowCaller(ctx), httpRequestFrom(ctx), req)
	})
	handle(s, svcv1connect.ConnectionServiceListConnectionsProcedure, func(ctx context.Context, req *svcv1.ListConnectionsRequest) (*svcv1.ListConnectionsResponse, error) {
		after, limit, binding, err := s.pageStart(ctx, svcv1connect.ConnectionServiceListConnectionsProcedure, req)
		if err != nil {
			return nil, err
		}
		data, last, err := s.flow.ListConnections(ctx, flowCaller(ctx), after, limit)
		if err != nil {
			return nil, err
		}
		return &svcv1.ListConnectionsResponse{Data: data, NextCursor: s.nextCursor(binding, last)}, nil
	})
	handle(s, svcv1connect.ConnectionServiceGetConnectionProcedure, func(ctx context.Context, req *svcv1.ConnectionRequest) (*svcv1.Connection, error) {
		return s.flow.GetConnection(ctx, flowCaller(ctx), req.GetId())
	})
	handle(s, svcv1connect.ConnectionServiceRevokeConnectionProcedure, func(ctx context.Context, req *svcv1.ConnectionRequest) (*svcv1.Connection, error) {
		return s.flow.RevokeConnection(ctx, flowCaller(ctx), req.GetId())
	})
	handle(s, svcv1connect.SourceServiceCreateSourceProcedure, func(ctx context.Context, req *svcv1.CreateSourceRequest) (*svcv1.Source, error) {
		return s.flow.CreateSource(ctx, flowCaller(ctx), req)
	})
	handle(s, svcv1connect.SourceServiceCreateProviderAuthorizationProcedure, func(ctx context.Context, req *svcv1.CreateProviderAuthorizationRequest) (*svcv1.ProviderAuthorization, error) {
		return s.flow.CreateProviderAuthorization(ctx, flowCaller(ctx), httpRequestFrom(ctx), req)
	})
	handle(s, svcv1connect.SourceServiceGetProviderAuthorizationProcedure, func(ctx context.Context, req *svcv1.GetProviderAuthorizationRequest) (*svcv1.ProviderAuthorization, error) {
		return s.flow.GetProviderAuthorization(ctx, flowCaller(ctx), httpRequestFrom(ctx), req.GetId())
	})
	handle(s, svcv1connect.ConnectServiceProviderCallbackProcedure, func(ctx context.Context, req *svcv1.ProviderCallbackRequest) (*svcv1.Redirect, error) {
		return s.flow.ProviderCallback(ctx, flowCaller(ctx), httpRequestFrom(ctx), req)
	})
}

// flowCaller is the request's caller as the connect flow sees it.
func flowCaller(ctx context.Context) connectflow.Caller {
	c := callerFrom(ctx)
	return connectflow.Caller{RequestID: c.RequestID, Key: c.Key, User: c.User, SessionToken: c.SessionToken, Tenant: c.Tenant}
}

// flowEdge is the edge as the connect flow needs it.
type flowEdge struct{ s *Server }

func (e flowEdge) Audit(ctx context.Context, appID, action, target string, detail map[string]any) {
	e.s.auditChange(ctx, appID, action, target, detail)
}

func (e flowEdge) Emit(ctx context.Context, tenant platform.Tenant, typ, source, subject string, data map[string]any, apps ...string) {
	e.s.emit(ctx, tenant, typ, source, subject, data, apps...)
}

// WithCaller makes c the request's caller. An RPC's caller is updated in place, so the edge
// sees who the flow found (the provider callback's signed-in user).
func (e flowEdge) WithCaller(ctx context.Context, c connectflow.Caller) context.Context {
	if cur := callerFrom(ctx); cur != nil {
		cur.User, cur.SessionToken = c.User, c.SessionToken
		if c.Tenant != (platform.Tenant{}) {
			cur.Tenant = c.Tenant
		}
		return ctx
	}
	return context.WithValue(ctx, callerKey{}, &Caller{RequestID: c.RequestID, User: c.User, SessionToken: c.SessionToken,
		Tenant: c.Tenant, Header: http.Header{}})
}

func (e flowEdge) RateLimit(w http.ResponseWriter, r *http.Request) bool {
	return e.s.rateHeaders(w, r)
}
func (e flowEdge) CheckOrigin(r *http.Request) error    { return e.s.csrf.Check(r) }
func (e flowEdge) SecureCookies(r *http.Request) bool   { return e.s.secureCookies(r) }
func (e flowEdge) PublicBase(r *http.Request) string    { return e.s.publicBase(r) }
func (e flowEdge) RequestID(ctx context.Context) string { return requestIDFrom(ctx) }

// flowSources are the tenant's sources as the connect flow needs them.
type flowSources struct{ s *Server }

func (f flowSources) Connect(ctx context.Context, tenant platform.Tenant, spec SourceSpec) (*svcv1.Source, error) {
	return f.s.ConnectSource(ctx, tenant, spec)
}
func (f flowSources) Get(ctx context.Context, tenant, id string) (*svcv1.Source, error) {
	return f.s.sources.Get(ctx, tenant, id)
}
func (f flowSources) Update(ctx context.Context, tenant, id string, fn func(*svcv1.Source) error) error {
	return f.s.sources.Update(ctx, tenant, id, fn)
}
func (f flowSources) Probe(ctx context.Context, spec SourceSpec) error {
	p, err := f.s.providers.Open(ctx, spec.Provider, spec.Config)
	if err != nil {
		return fmt.Errorf("open %s: %w", spec.Provider, err)
	}
	defer providers.CloseProvider(p)
	if _, err := p.List(ctx, providers.ListRequest{SourceRef: spec.SourceRef, PageSize: 1}); err != nil {
		return fmt.Errorf("list %s: %w", spec.Provider, err)
	}
	return nil
}
func (f flowSources) Scan(ctx context.Context, tenant string, fn func(*svcv1.Source) bool) error {
	return f.s.sources.Scan(ctx, tenant, fn)
}

// publicBase is the externally visible origin: BaseURL if configured, else the request's.
func (s *Server) publicBase(r *http.Request) string {
	if s.cfg.BaseURL != "" {
		return strings.TrimRight(s.cfg.BaseURL, "/")
	}
	scheme := "http"
	if r != nil && r.TLS != nil {
		scheme = "https"
	}
	host := "localhost"
	if r != nil && r.Host != "" {
		host = r.Host
	}
	return scheme + "://" + host
}

// markReauth records that a source's credentials stopped working (the provider answered
// providers.ErrPermission): the source becomes reauth_required, its opened provider is
// dropped, and svc.source.reauth_required is emitted once. A source already revoked or
// disconnected is left alone.
func (s *Server) markReauth(ctx context.Context, tenant platform.Tenant, sourceID string) error {
	return s.core.Tenant(tenant).MarkReauth(ctx, sourceID)
}
