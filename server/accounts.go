package server

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

func (s *Server) signUp(ctx context.Context, req *svcv1.SignUpRequest) (*svcv1.Account, error) {
	locale := ""
	if req.Locale != nil {
		locale = wire.EnumString(req.GetLocale().Descriptor(), req.GetLocale().Number())
	}
	u, token, err := s.accounts.SignUp(ctx, req.GetEmail(), req.GetPassword(), req.DisplayName, locale)
	if err != nil {
		return nil, err
	}
	s.setSessionCookie(ctx, token, s.accounts.SessionTTL())
	return s.account(ctx, u)
}

func (s *Server) signIn(ctx context.Context, req *svcv1.SignInRequest) (*svcv1.Account, error) {
	u, token, err := s.accounts.SignIn(ctx, req.GetEmail(), req.GetPassword())
	if err != nil {
		return nil, err
	}
	s.setSessionCookie(ctx, token, s.accounts.SessionTTL())
	return s.account(ctx, u)
}

func (s *Server) signOut(ctx context.Context, _ *emptypb.Empty) (*emptypb.Empty, error) {
	c := rpc.From(ctx)
	if err := s.accounts.SignOut(ctx, c.SessionToken); err != nil {
		return nil, err
	}
	s.setSessionCookie(ctx, "", -1)
	return &emptypb.Empty{}, nil
}

// setSessionCookie sets (or, with a negative ttl, clears) the session cookie: HttpOnly,
// SameSite=Lax, Secure when the request came over TLS or the base URL is https.
func (s *Server) setSessionCookie(ctx context.Context, token string, ttl time.Duration) {
	c := rpc.From(ctx)
	r := rpc.HTTPRequest(ctx)
	ck := &http.Cookie{Name: platform.SessionCookie, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.secureCookies(r), MaxAge: int(ttl.Seconds())}
	if ttl < 0 {
		ck.MaxAge = -1
	}
	c.Header.Add("Set-Cookie", ck.String())
}

func (s *Server) getAccount(ctx context.Context, _ *svcv1.GetAccountRequest) (*svcv1.Account, error) {
	return s.account(ctx, rpc.From(ctx).User)
}

func (s *Server) updateAccount(ctx context.Context, req *svcv1.UpdateAccountRequest) (*svcv1.Account, error) {
	var change platform.AccountChange
	change.DisplayName = req.DisplayName
	if req.Locale != nil {
		l := wire.EnumString(req.GetLocale().Descriptor(), req.GetLocale().Number())
		change.Locale = &l
	}
	u, err := s.accounts.Update(ctx, rpc.From(ctx).User.ID, change)
	if err != nil {
		return nil, err
	}
	return s.account(ctx, u)
}

// account renders a user as the spec's Account, counting what the user has stored in the
// tenant the request acts on (live, or test with Svc-Mode: test): connected sources (neither
// revoked nor disconnected) and the vault's bytes of distinct content.
func (s *Server) account(ctx context.Context, u *platform.User) (*svcv1.Account, error) {
	t := platform.Tenant{Owner: u.ID, Mode: platform.ModeLive}
	if c := rpc.From(ctx); c != nil && c.Tenant.Owner == u.ID {
		t = c.Tenant
	}
	sources, err := s.sources.Count(ctx, t.String(), func(src *svcv1.Source) bool {
		return src.GetStatus() != svcv1.SourceStatus_SOURCE_STATUS_REVOKED && src.GetStatus() != svcv1.SourceStatus_SOURCE_STATUS_DISCONNECTED
	})
	if err != nil {
		return nil, err
	}
	vaultBytes, err := s.vault.Usage(ctx, t.String())
	if err != nil {
		return nil, err
	}
	a := &svcv1.Account{
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
		a.Developer = &svcv1.AccountDeveloper{OrgIds: u.OrgIDs}
	}
	return a, nil
}
