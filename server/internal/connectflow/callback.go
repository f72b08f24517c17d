package connectflow

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"golang.org/x/oauth2"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/vendorhttp"
	"svc.dev/svc/server/internal/rpc"
)

// ProviderCallback completes a provider authorization (spec #18): the state must be the one
// issued to this browser session for this provider (single use, 10 minutes); the code is
// exchanged with the PKCE verifier; the token goes, sealed, into a new source's configuration.
// The browser goes back to the consent page, which offers the new source ticked (or, for a
// user's own connect session, says it is connected).
//
// The endpoint is public: it never answers 401 nor asks for a credential (a provider's redirect
// is no place for one). The browser's session cookie, when it has one, is what the state is
// bound to; without it the state is not one this browser is waiting for. Once found, the
// signed-in user is the request's caller.
func (f *Flow) providerCallback(ctx context.Context, req *svcv1.ProviderCallbackRequest) (*svcv1.Redirect, error) {
	c, r := rpc.From(ctx), rpc.HTTPRequest(ctx)
	badState := rpc.Invalid("state", "is not a state this browser session is waiting for (unknown, expired, already used, or issued to another session)")
	if r == nil {
		return nil, badState
	}
	c.SessionToken = sessionToken(r)
	user, err := f.cfg.Accounts.Authenticate(ctx, c.SessionToken)
	if errors.Is(err, platform.ErrUnauthenticated) {
		return nil, badState
	}
	if err != nil {
		return nil, err
	}
	c.User = user
	name := providers.Name(rpc.EnumWire(req.GetProvider()))
	rec, verifier, err := f.cfg.Sessions.FinishOAuth(ctx, req.GetState(), c.SessionToken, string(name))
	if errors.Is(err, platform.ErrOAuthState) {
		return nil, badState
	}
	if err != nil {
		return nil, err
	}
	back := func(q url.Values) *svcv1.Redirect {
		loc := f.cfg.Edge.PublicBase(r) + consentPath(rec.ConnectSessionID)
		if len(q) > 0 {
			loc += "?" + q.Encode()
		}
		return &svcv1.Redirect{Location: loc}
	}
	if req.GetError() != "" {
		return f.refused(ctx, back, rec.ConnectSessionID, errorCode(req.GetError())), nil
	}
	if req.GetCode() == "" {
		return nil, rpc.Invalid("code", "is required when the provider reports no error")
	}
	csn, err := f.cfg.Sessions.Session(ctx, rec.ConnectSessionID)
	if err != nil {
		return nil, err
	}
	if csn.Status != platform.ConnectPending {
		return back(nil), nil // the consent page says what happened
	}
	p, ok := f.oauthProvider(name)
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
		f.log.WarnContext(ctx, "oauth code exchange failed", "provider", name, "request_id", c.RequestID, "error_code", code)
		return f.refused(ctx, back, csn.ID, code), nil
	}
	src, err := f.connectOAuthSource(ctx, platform.Tenant{Owner: c.User.ID, Mode: csn.Mode}, name, p, tok)
	if err != nil {
		f.log.ErrorContext(ctx, "connect oauth source", "provider", name, "request_id", c.RequestID, "err", err)
		return f.refused(ctx, back, csn.ID, "connect_failed"), nil
	}
	if csn.Own() {
		// A user's own provider authorization ends with its source: nothing is left to decide.
		_, err = f.cfg.Sessions.Connected(ctx, csn.ID, src.Id)
	} else {
		_, err = f.cfg.Sessions.AddSource(ctx, csn.ID, src.Id)
	}
	if err != nil {
		return nil, err
	}
	return back(url.Values{"connected": {src.Id}}), nil
}

// refused is the way back to the page after the provider refused or the connection failed: a
// user's own provider authorization also records the code, for the one waiting on it.
func (f *Flow) refused(ctx context.Context, back func(url.Values) *svcv1.Redirect, csnID, code string) *svcv1.Redirect {
	if err := f.cfg.Sessions.RefusedOwn(ctx, csnID, code); err != nil {
		f.log.ErrorContext(ctx, "record provider refusal", "connect_session_id", csnID, "err", err)
	}
	return back(url.Values{"provider_error": {code}})
}

// sessionToken is the browser's svc_session cookie, or "".
func sessionToken(r *http.Request) string {
	ck, err := r.Cookie(platform.SessionCookie)
	if err != nil {
		return ""
	}
	return ck.Value
}

// connectOAuthSource records a source for a provider token. The token is part of the
// source's configuration, which Sources.Connect stores sealed.
func (f *Flow) connectOAuthSource(ctx context.Context, tenant platform.Tenant, name providers.Name, p OAuthProvider, tok *oauth2.Token) (*svcv1.Source, error) {
	cfg := vendorhttp.TokenConfig(tok)
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
	display := f.providerLabel(name)
	if email != "" {
		display += " (" + email + ")"
	}
	src, err := f.cfg.Sources.Connect(ctx, tenant, svc.SourceSpec{Provider: name, SourceRef: account, Config: cfg, Kind: kind, DisplayName: display, Email: email})
	if err != nil {
		return nil, err
	}
	if scope, _ := tok.Extra("scope").(string); scope != "" {
		err := f.cfg.Sources.Update(ctx, tenant.String(), src.Id, func(x *svcv1.Source) error {
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
