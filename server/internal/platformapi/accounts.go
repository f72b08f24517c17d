package platformapi

import (
	"context"
	"net/http"
	"time"

	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/wire"
)

func (a *API) signUp(ctx context.Context, req *svcv1.SignUpRequest) (*svcv1.Account, error) {
	locale := ""
	if req.Locale != nil {
		locale = wire.EnumString(req.GetLocale().Descriptor(), req.GetLocale().Number())
	}
	u, token, err := a.Accounts.SignUp(ctx, req.GetEmail(), req.GetPassword(), req.DisplayName, locale)
	if err != nil {
		return nil, err
	}
	a.setSessionCookie(ctx, token, a.Accounts.SessionTTL())
	return a.Account(ctx, u)
}

func (a *API) signIn(ctx context.Context, req *svcv1.SignInRequest) (*svcv1.Account, error) {
	u, token, err := a.Accounts.SignIn(ctx, req.GetEmail(), req.GetPassword())
	if err != nil {
		return nil, err
	}
	a.setSessionCookie(ctx, token, a.Accounts.SessionTTL())
	return a.Account(ctx, u)
}

func (a *API) signOut(ctx context.Context, _ *emptypb.Empty) (*emptypb.Empty, error) {
	c := rpc.From(ctx)
	if err := a.Accounts.SignOut(ctx, c.SessionToken); err != nil {
		return nil, err
	}
	a.setSessionCookie(ctx, "", -1)
	return &emptypb.Empty{}, nil
}

// setSessionCookie sets (or, with a negative ttl, clears) the session cookie: HttpOnly,
// SameSite=Lax, Secure when the request came over TLS or the base URL is https.
func (a *API) setSessionCookie(ctx context.Context, token string, ttl time.Duration) {
	c := rpc.From(ctx)
	r := rpc.HTTPRequest(ctx)
	ck := &http.Cookie{Name: platform.SessionCookie, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: a.SecureCookies(r), MaxAge: int(ttl.Seconds())}
	if ttl < 0 {
		ck.MaxAge = -1
	}
	c.Header.Add("Set-Cookie", ck.String())
}

func (a *API) getAccount(ctx context.Context, _ *svcv1.GetAccountRequest) (*svcv1.Account, error) {
	return a.Account(ctx, rpc.From(ctx).User)
}

func (a *API) updateAccount(ctx context.Context, req *svcv1.UpdateAccountRequest) (*svcv1.Account, error) {
	var change platform.AccountChange
	change.DisplayName = req.DisplayName
	if req.Locale != nil {
		l := wire.EnumString(req.GetLocale().Descriptor(), req.GetLocale().Number())
		change.Locale = &l
	}
	u, err := a.Accounts.Update(ctx, rpc.From(ctx).User.ID, change)
	if err != nil {
		return nil, err
	}
	return a.Account(ctx, u)
}

// account renders a user as the spec's Account, counting what the user has stored in the
// tenant the request acts on (live, or test with Svc-Mode: test): connected sources (neither
// revoked nor disconnected) and the vault's bytes of distinct content.
func (a *API) Account(ctx context.Context, u *platform.User) (*svcv1.Account, error) {
	t := platform.Tenant{Owner: u.ID, Mode: platform.ModeLive}
	if c := rpc.From(ctx); c != nil && c.Tenant.Owner == u.ID {
		t = c.Tenant
	}
	sources, vaultBytes, err := a.Holdings(ctx, t)
	if err != nil {
		return nil, err
	}
	acct := &svcv1.Account{
		Id:               u.ID,
		Email:            u.Email,
		DisplayName:      u.DisplayName,
		Locale:           svcv1.Locale(rpc.EnumNumber(svcv1.Locale_LOCALE_EN.Descriptor(), u.Locale)),
		Status:           svcv1.AccountStatus(rpc.EnumNumber(svcv1.AccountStatus_ACCOUNT_STATUS_ACTIVE.Descriptor(), u.Status)),
		Plan:             u.Plan,
		CreatedAt:        timestamppb.New(u.CreatedAt),
		SourcesConnected: int64(sources),
		VaultBytes:       vaultBytes,
	}
	if len(u.OrgIDs) > 0 {
		acct.Developer = &svcv1.AccountDeveloper{OrgIds: u.OrgIDs}
	}
	return acct, nil
}
