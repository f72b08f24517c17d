package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	svcv1 "svc.dev/svc/gen/svc/v1"
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
		Audit:      s.auditor,
		Pager:      s.pager,
		OAuth:      oauth,
		LocalRoots: s.cfg.LocalRoots,
		Dev:        s.cfg.Dev,
		Now:        s.cfg.Now,
		Log:        s.log,
	})
}

// registerConnectFlow installs the connect flow's RPCs.
func (s *Server) registerConnectFlow() { s.install(s.flow.Handlers()) }

// flowEdge is the edge as the connect flow needs it.
type flowEdge struct{ s *Server }

func (e flowEdge) Emit(ctx context.Context, tenant platform.Tenant, typ, source, subject string, data map[string]any, apps ...string) {
	e.s.emit(ctx, tenant, typ, source, subject, data, apps...)
}

func (e flowEdge) RateLimit(w http.ResponseWriter, r *http.Request) bool {
	return e.s.rateHeaders(w, r)
}
func (e flowEdge) CheckOrigin(r *http.Request) error  { return e.s.csrf.Check(r) }
func (e flowEdge) SecureCookies(r *http.Request) bool { return e.s.secureCookies(r) }
func (e flowEdge) PublicBase(r *http.Request) string  { return e.s.publicBase(r) }

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
