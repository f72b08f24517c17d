package server

import (
	"context"
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/oauth2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/vendorhttp"
	"svc.dev/svc/server/internal/rpc"
)

// The connect flow (docs/connect.md): an application starts a connect session with its key,
// the end user decides on the consent page (connectpages.go), possibly connecting a new
// source at a provider through OAuth on the way, and an approval becomes a connection whose
// grant the edge enforces on every call the application makes with connection_id.

// Event types of the connect flow (the catalogue's names).

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
var DefaultAuthParams = map[providers.Name]map[string]string{
	providers.VendorAMail:  {"access_type": "offline", "prompt": "consent"},
	providers.VendorAFiles: {"access_type": "offline", "prompt": "consent"},
	providers.VendorCFiles: {"token_access_type": "offline"},
}

// authCodeOptions are the options of the authorization URL for provider name.
func (p OAuthProvider) authCodeOptions(name providers.Name, verifier string) []oauth2.AuthCodeOption {
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier)}
	params := p.AuthParams
	if params == nil {
		params = DefaultAuthParams[name]
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		opts = append(opts, oauth2.SetAuthURLParam(k, params[k]))
	}
	return opts
}

func (p OAuthProvider) oauth2(redirectURL string) *oauth2.Config {
	return &oauth2.Config{ClientID: p.ClientID, ClientSecret: p.ClientSecret, RedirectURL: redirectURL, Scopes: p.Scopes,
		Endpoint: oauth2.Endpoint{AuthURL: p.AuthURL, TokenURL: p.TokenURL}}
}

// oauthProvider returns the OAuth configuration of a provider, if it has one.
func (s *Server) oauthProvider(name providers.Name) (OAuthProvider, bool) {
	p, ok := s.cfg.OAuth[name]
	return p, ok && p.AuthURL != "" && p.TokenURL != "" && p.ClientID != ""
}

// providerLabel names a provider to end users.
func (s *Server) providerLabel(name providers.Name) string {
	if p, ok := s.cfg.OAuth[name]; ok && p.DisplayName != "" {
		return p.DisplayName
	}
	words := strings.Split(string(name), "_")
	for i, w := range words {
		if len(w) == 1 {
			w = strings.ToUpper(w)
		}
		if w != "" {
			words[i] = strings.ToUpper(w[:1]) + w[1:]
		}
	}
	return strings.Join(words, " ")
}

// oauthTimeout bounds a token exchange with a provider.
const oauthTimeout = 15 * time.Second

// registerConnectFlow installs the connect flow's RPCs.
func (s *Server) registerConnectFlow() {
	handle(s, svcv1connect.ConnectionServiceCreateConnectSessionProcedure, s.createConnectSession)
	handle(s, svcv1connect.ConnectionServiceListConnectionsProcedure, s.listConnections)
	handle(s, svcv1connect.ConnectionServiceGetConnectionProcedure, s.getConnection)
	handle(s, svcv1connect.ConnectionServiceRevokeConnectionProcedure, s.revokeConnection)
	handle(s, svcv1connect.ConnectServiceProviderCallbackProcedure, s.providerCallback)
}

// connectFlow is the platform's connect flow over the server's store (it holds no state of
// its own, so making one per request costs nothing).
func (s *Server) connectFlow() *platform.ConnectFlow {
	return platform.NewConnectFlow(s.store, s.devs, s.sealer, s.cfg.Now)
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

func consentPath(csnID string) string { return "/connect/" + csnID }

func (s *Server) createConnectSession(ctx context.Context, req *svcv1.CreateConnectSessionRequest) (*svcv1.ConnectSession, error) {
	c := rpc.From(ctx)
	r := platform.ConnectRequest{RedirectURI: req.GetRedirectUri(), OperationClasses: rpc.OpClasses(req.GetOperationClasses()),
		SourceIDs: req.GetSourceIds(), State: req.GetState()}
	if req.Provider != nil {
		// Test mode is simulated and unbilled: a real account connected there could be
		// cleaned up for free, and the spec promises test mode works on simulated data.
		if c.Key.Mode == platform.ModeTest {
			return nil, rpc.Invalid("provider", "cannot be connected in test mode, which works on simulated sources; start the session with a live key to connect a provider account")
		}
		name := providers.Name(rpc.EnumWire(req.GetProvider()))
		if _, ok := s.oauthProvider(name); !ok {
			return nil, rpc.Invalid("provider", "cannot be connected through the consent page: this server has no OAuth configuration for it")
		}
		r.Provider = string(name)
	}
	csn, err := s.connectFlow().Start(ctx, c.Key, r)
	if errors.Is(err, platform.ErrRedirectURI) {
		return nil, rpc.Invalid("redirect_uri", "is not one of the application's redirect_uris")
	}
	if err != nil {
		return nil, err
	}
	s.auditor.Change(ctx, csn.AppID, "connect_session.created", csn.ID, map[string]any{"mode": string(csn.Mode),
		"operation_classes": rpc.Strings(csn.OperationClasses), "redirect_uri": csn.RedirectURI})
	return s.connectSessionProto(rpc.HTTPRequest(ctx), csn), nil
}

func (s *Server) connectSessionProto(r *http.Request, c *platform.ConnectSession) *svcv1.ConnectSession {
	out := &svcv1.ConnectSession{
		Id:               c.ID,
		ApplicationId:    c.AppID,
		Mode:             svcv1.KeyMode(rpc.EnumNumber(svcv1.KeyMode(0).Descriptor(), string(c.Mode))),
		Url:              s.publicBase(r) + consentPath(c.ID),
		Status:           svcv1.ConnectSessionStatus(rpc.EnumNumber(svcv1.ConnectSessionStatus(0).Descriptor(), c.StatusAt(s.cfg.Now()))),
		RedirectUri:      c.RedirectURI,
		OperationClasses: rpc.OpEnums(c.OperationClasses),
		SourceIds:        rpc.NonNil(c.SourceIDs),
		CreatedAt:        timestamppb.New(c.CreatedAt),
		ExpiresAt:        timestamppb.New(c.ExpiresAt),
	}
	if c.Provider != "" {
		p := svcv1.Provider(rpc.EnumNumber(svcv1.Provider(0).Descriptor(), c.Provider))
		out.Provider = &p
	}
	if c.State != "" {
		out.State = proto.String(c.State)
	}
	if c.ConnectionID != "" {
		out.ConnectionId = proto.String(c.ConnectionID)
	}
	return out
}

func connectionProto(c *platform.Connection) *svcv1.Connection {
	status := svcv1.ConnectionStatus_CONNECTION_STATUS_ACTIVE
	if c.RevokedAt != nil {
		status = svcv1.ConnectionStatus_CONNECTION_STATUS_REVOKED
	}
	out := &svcv1.Connection{
		Id:            c.ID,
		ApplicationId: c.AppID,
		UserId:        c.UserID,
		Mode:          svcv1.KeyMode(rpc.EnumNumber(svcv1.KeyMode(0).Descriptor(), string(c.Mode))),
		Status:        status,
		Grant:         &svcv1.Grant{Id: c.Grant.ID, OperationClasses: rpc.OpEnums(c.Grant.OperationClasses), SourceIds: rpc.NonNil(c.Grant.SourceIDs)},
		CreatedAt:     timestamppb.New(c.CreatedAt),
	}
	if c.RevokedAt != nil {
		out.RevokedAt = timestamppb.New(*c.RevokedAt)
	}
	return out
}

// seesConnection reports whether the caller may see a connection: the end user's own in the
// session's mode, or the application's own in the key's mode. Anything else is not found.
func seesConnection(c *Caller, conn *platform.Connection) bool {
	switch {
	case c.User != nil:
		return conn.UserID == c.User.ID && conn.Mode == c.Tenant.Mode
	case c.Key != nil:
		return conn.AppID == c.Key.AppID && conn.Mode == c.Key.Mode
	}
	return false
}

func (s *Server) listConnections(ctx context.Context, req *svcv1.ListConnectionsRequest) (*svcv1.ListConnectionsResponse, error) {
	after, limit, binding, err := s.pager.Start(ctx, svcv1connect.ConnectionServiceListConnectionsProcedure, req)
	if err != nil {
		return nil, err
	}
	c := rpc.From(ctx)
	var conns []*platform.Connection
	if c.Key != nil {
		conns, err = s.devs.ConnectionsOfApp(ctx, c.Key.AppID)
	} else {
		conns, err = s.devs.ConnectionsOfUser(ctx, c.User.ID)
	}
	if err != nil {
		return nil, err
	}
	conns = slices.DeleteFunc(conns, func(x *platform.Connection) bool { return !seesConnection(c, x) })
	// Ids are ULIDs: descending id order is newest first, and the cursor is the last id seen.
	slices.SortFunc(conns, func(a, b *platform.Connection) int { return strings.Compare(b.ID, a.ID) })
	out := &svcv1.ListConnectionsResponse{Data: []*svcv1.Connection{}}
	for _, conn := range conns {
		if after != "" && conn.ID >= after {
			continue
		}
		if len(out.Data) == limit {
			out.NextCursor = s.pager.Next(binding, out.Data[len(out.Data)-1].Id)
			break
		}
		out.Data = append(out.Data, connectionProto(conn))
	}
	return out, nil
}

// visibleConnection returns a connection the caller may see, revoked or not.
func (s *Server) visibleConnection(ctx context.Context, connID string) (*platform.Connection, error) {
	conn, err := s.devs.LookupConnection(ctx, connID)
	if err != nil {
		return nil, err
	}
	if !seesConnection(rpc.From(ctx), conn) {
		return nil, platform.ErrNotFound
	}
	return conn, nil
}

func (s *Server) getConnection(ctx context.Context, req *svcv1.ConnectionRequest) (*svcv1.Connection, error) {
	conn, err := s.visibleConnection(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	return connectionProto(conn), nil
}

// revokeConnection revokes a connection for its end user or its application. It takes effect
// with the next request: the edge resolves connection_id on every call and refuses revoked
// connections.
func (s *Server) revokeConnection(ctx context.Context, req *svcv1.ConnectionRequest) (*svcv1.Connection, error) {
	if _, err := s.visibleConnection(ctx, req.GetId()); err != nil {
		return nil, err
	}
	conn, changed, err := s.devs.Revoke(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if changed {
		by := "user"
		if rpc.From(ctx).Key != nil {
			by = "application"
		}
		s.auditor.Change(ctx, conn.AppID, "connection.revoked", conn.ID, map[string]any{"revoked_by": by})
		// The application no longer reaches the user's tenant, so emit's audience would miss
		// it: name it explicitly.
		s.emitToApp(ctx, conn.Tenant(), conn.AppID, event.ConnectionRevoked, "/v1/connections", conn.ID, map[string]any{
			"connection_id": conn.ID, "application_id": conn.AppID, "revoked_by": by})
	}
	return connectionProto(conn), nil
}

// emitToApp is emit for an event whose application must hear of it even though it no longer
// reaches the tenant (a revoked connection): it also goes to that application's stream and
// webhooks.
func (s *Server) emitToApp(ctx context.Context, tenant platform.Tenant, appID, typ, source, subject string, data map[string]any) {
	s.emit(ctx, tenant, typ, source, subject, data, appID)
}

// providerCallback completes a provider authorization (spec #18): the state must be the one
// issued to this browser session for this provider (single use, 10 minutes); the code is
// exchanged with the PKCE verifier; the token goes, sealed, into a new source's configuration.
// The browser goes back to the consent page, which offers the new source ticked.
//
// The endpoint is public: it never answers 401 nor asks for a credential (a provider's redirect
// is no place for one). The browser's session cookie, when it has one, is what the state is
// bound to; without it the state is not one this browser is waiting for.
func (s *Server) providerCallback(ctx context.Context, req *svcv1.ProviderCallbackRequest) (*svcv1.Redirect, error) {
	c := rpc.From(ctx)
	r := rpc.HTTPRequest(ctx)
	badState := rpc.Invalid("state", "is not a state this browser session is waiting for (unknown, expired, already used, or issued to another session)")
	if r == nil {
		return nil, badState
	}
	c.SessionToken = sessionToken(r.Header)
	user, err := s.accounts.Authenticate(ctx, c.SessionToken)
	if errors.Is(err, platform.ErrUnauthenticated) {
		return nil, badState
	}
	if err != nil {
		return nil, err
	}
	c.User = user
	name := providers.Name(rpc.EnumWire(req.GetProvider()))
	rec, verifier, err := s.connectFlow().FinishOAuth(ctx, req.GetState(), c.SessionToken, string(name))
	if errors.Is(err, platform.ErrOAuthState) {
		return nil, badState
	}
	if err != nil {
		return nil, err
	}
	back := func(q url.Values) *svcv1.Redirect {
		loc := s.publicBase(r) + consentPath(rec.ConnectSessionID)
		if len(q) > 0 {
			loc += "?" + q.Encode()
		}
		return &svcv1.Redirect{Location: loc}
	}
	if req.GetError() != "" {
		return back(url.Values{"provider_error": {errorCode(req.GetError())}}), nil
	}
	if req.GetCode() == "" {
		return nil, rpc.Invalid("code", "is required when the provider reports no error")
	}
	csn, err := s.connectFlow().Session(ctx, rec.ConnectSessionID)
	if err != nil {
		return nil, err
	}
	if csn.Status != platform.ConnectPending {
		return back(nil), nil // the consent page says what happened
	}
	p, ok := s.oauthProvider(name)
	if !ok {
		return back(url.Values{"provider_error": {"not_configured"}}), nil
	}
	xctx, cancel := context.WithTimeout(ctx, oauthTimeout)
	defer cancel()
	xctx = context.WithValue(xctx, oauth2.HTTPClient, &http.Client{Timeout: oauthTimeout})
	tok, err := p.oauth2(rec.RedirectURL).Exchange(xctx, req.GetCode(), oauth2.VerifierOption(verifier))
	if err != nil {
		// The provider's answer may echo secrets: log the kind of failure only.
		var re *oauth2.RetrieveError
		code := "exchange_failed"
		if errors.As(err, &re) && re.ErrorCode != "" {
			code = errorCode(re.ErrorCode)
		}
		s.log.WarnContext(ctx, "oauth code exchange failed", "provider", name, "request_id", c.RequestID, "error_code", code)
		return back(url.Values{"provider_error": {code}}), nil
	}
	src, err := s.connectOAuthSource(ctx, platform.Tenant{Owner: c.User.ID, Mode: csn.Mode}, name, p, tok)
	if err != nil {
		s.log.ErrorContext(ctx, "connect oauth source", "provider", name, "request_id", c.RequestID, "err", err)
		return back(url.Values{"provider_error": {"connect_failed"}}), nil
	}
	if _, err := s.connectFlow().AddSource(ctx, csn.ID, src.Id); err != nil {
		return nil, err
	}
	return back(url.Values{"connected": {src.Id}}), nil
}

// connectOAuthSource records a source for a provider token. The token is part of the
// source's configuration, which ConnectSource stores sealed.
func (s *Server) connectOAuthSource(ctx context.Context, tenant platform.Tenant, name providers.Name, p OAuthProvider, tok *oauth2.Token) (*svcv1.Source, error) {
	cfg := providers.Config{vendorhttp.KeyAccessToken: tok.AccessToken, vendorhttp.KeyTokenType: tok.Type()}
	if tok.RefreshToken != "" {
		cfg[vendorhttp.KeyRefreshToken] = tok.RefreshToken
	}
	if !tok.Expiry.IsZero() {
		cfg[vendorhttp.KeyExpiry] = tok.Expiry.UTC().Format(time.RFC3339)
	}
	account, _ := tok.Extra("account_id").(string)
	email, _ := tok.Extra("email").(string)
	if account == "" {
		account = email
	}
	if account == "" {
		account = "default"
	}
	kind := p.Kind
	if kind == "" {
		kind = "files"
		if strings.HasSuffix(string(name), "_mail") {
			kind = "mail"
		}
	}
	display := s.providerLabel(name)
	if email != "" {
		display += " (" + email + ")"
	}
	src, err := s.ConnectSource(ctx, tenant, SourceSpec{Provider: name, SourceRef: account, Config: cfg, Kind: kind, DisplayName: display, Email: email})
	if err != nil {
		return nil, err
	}
	if scope, _ := tok.Extra("scope").(string); scope != "" {
		err := s.sources.Update(ctx, tenant.String(), src.Id, func(x *svcv1.Source) error {
			x.GrantedScopes = strings.Fields(scope)
			src = x
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return src, nil
}

// errorCode keeps an OAuth error code printable and short ("access_denied"), since it is
// shown back to the user.
func errorCode(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() == 40 {
			break
		}
		if r == '_' || r == '-' || r == '.' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "error"
	}
	return b.String()
}

// markReauth records that a source's credentials stopped working (the provider answered
// providers.ErrPermission): the source becomes reauth_required, its opened provider is
// dropped, and svc.source.reauth_required is emitted once. A source already revoked or
// disconnected is left alone.
func (s *Server) markReauth(ctx context.Context, tenant platform.Tenant, sourceID string) error {
	return s.core.Tenant(tenant).MarkReauth(ctx, sourceID)
}
