package connectflow

import (
	"context"
	"net/http"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/server/internal/page"
	"svc.dev/svc/server/internal/rpc"
)

// A user's own provider authorization (docs/connect.md "A user's own sources"): the signed-in
// user asks to connect an account at a provider (svc sources connect PROVIDER); svc answers
// with a page to open in a browser, where the same user, signed in, continues to the provider;
// the provider's callback connects the source. It is a connect session with no application:
// the same state, PKCE, callback and sealing as the consent page's, and no grant.

// ownApp stands for the application on the pages of a user's own provider authorization.
var ownApp = &platform.Application{Name: "svc"}

// createProviderAuthorization starts a user's own provider authorization
// (POST /v1/provider-authorizations). The provider needs an OAuth configuration on the server;
// test mode, which works on simulated data, connects no real account.
func (f *Flow) createProviderAuthorization(ctx context.Context, req *svcv1.CreateProviderAuthorizationRequest) (*svcv1.ProviderAuthorization, error) {
	c := rpc.From(ctx)
	name := providers.Name(rpc.EnumWire(req.GetProvider()))
	if c.Tenant.Mode == platform.ModeTest {
		return nil, rpc.Invalid("provider", "cannot be connected in test mode, which works on simulated sources; connect it without Svc-Mode: test")
	}
	if _, ok := f.oauthProvider(name); !ok {
		return nil, rpc.Invalid("provider", "cannot be connected through OAuth: this server has no OAuth configuration for it (svc serve --oauth-config); local folders and buckets connect with POST /v1/sources")
	}
	csn, err := f.cfg.Sessions.StartOwn(ctx, c.User.ID, c.Tenant.Mode, string(name))
	if err != nil {
		return nil, err
	}
	return f.authorizationProto(rpc.HTTPRequest(ctx), csn), nil
}

// getProviderAuthorization reads one of the signed-in user's own provider authorizations, in
// the session's mode; anything else is not found.
func (f *Flow) getProviderAuthorization(ctx context.Context, req *svcv1.GetProviderAuthorizationRequest) (*svcv1.ProviderAuthorization, error) {
	c := rpc.From(ctx)
	csn, err := f.cfg.Sessions.Session(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if !csn.Own() || csn.UserID != c.User.ID || csn.Mode != c.Tenant.Mode {
		return nil, platform.ErrNotFound
	}
	return f.authorizationProto(rpc.HTTPRequest(ctx), csn), nil
}

func (f *Flow) authorizationProto(r *http.Request, c *platform.ConnectSession) *svcv1.ProviderAuthorization {
	out := &svcv1.ProviderAuthorization{
		Id:        c.ID,
		Provider:  svcv1.Provider(rpc.EnumNumber(svcv1.Provider(0).Descriptor(), c.Provider)),
		Url:       f.cfg.Edge.PublicBase(r) + consentPath(c.ID),
		Status:    svcv1.ProviderAuthorizationStatus_PROVIDER_AUTHORIZATION_STATUS_PENDING,
		CreatedAt: timestamppb.New(c.CreatedAt),
		ExpiresAt: timestamppb.New(c.ExpiresAt),
	}
	switch c.StatusAt(f.cfg.Now()) {
	case platform.ConnectApproved:
		out.Status = svcv1.ProviderAuthorizationStatus_PROVIDER_AUTHORIZATION_STATUS_CONNECTED
	case platform.ConnectExpired:
		out.Status = svcv1.ProviderAuthorizationStatus_PROVIDER_AUTHORIZATION_STATUS_EXPIRED
	}
	if n := len(c.ConnectedSourceIDs); n > 0 {
		out.SourceId = proto.String(c.ConnectedSourceIDs[n-1])
	}
	if c.ProviderError != "" {
		out.Error = proto.String(c.ProviderError)
	}
	return out
}

// ownDecided shows a user's own provider authorization that is over; it reports whether it did.
func (f *Flow) ownDecided(w http.ResponseWriter, cr *consentRequest) bool {
	label := f.providerLabel(providers.Name(cr.csn.Provider))
	switch cr.csn.Status {
	case platform.ConnectPending:
		return false
	case platform.ConnectApproved:
		page.Message(w, f.log, http.StatusOK, label+" is connected", "Your "+label+" account is connected to svc. You can close this window and go back to where you started.")
	case platform.ConnectExpired:
		page.Message(w, f.log, http.StatusGone, "This request has expired", "Requests to connect an account are valid for 30 minutes. Start again with svc sources connect.")
	default:
		page.Message(w, f.log, http.StatusConflict, "Already decided", "This request is over. Start again with svc sources connect.")
	}
	return true
}

// ownPage is the page of a pending provider authorization: who is signed in, which provider,
// and a button that continues there (a CSRF-checked POST, like the consent page's).
func (f *Flow) ownPage(w http.ResponseWriter, r *http.Request, cr *consentRequest) {
	csn := cr.csn
	label := f.providerLabel(providers.Name(csn.Provider))
	v := &page.View{Title: "Connect " + label, App: ownApp.Name, Action: consentPath(csn.ID), Token: csn.ConsentToken(cr.token),
		User: cr.user.Email, Expires: csn.ExpiresAt.UTC().Format("15:04 UTC"), Provider: label, Own: true}
	if code := r.URL.Query().Get("provider_error"); code != "" {
		v.Error = label + " did not connect (" + errorCode(code) + "). You can try again."
	}
	f.consentHeaders(w, cr)
	page.Render(w, f.log, http.StatusOK, "authorize", v)
}
