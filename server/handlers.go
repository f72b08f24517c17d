package server

import (
	"context"
	"net/http"
	"svc.dev/svc/store"
	"time"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/wire"
)

// register installs the implemented methods; every other method answers 501.
func (s *Server) register() {
	handle(s, svcv1connect.AccountServiceSignUpProcedure, s.signUp)
	handle(s, svcv1connect.AccountServiceSignInProcedure, s.signIn)
	handle(s, svcv1connect.AccountServiceSignOutProcedure, s.signOut)
	handle(s, svcv1connect.AccountServiceGetAccountProcedure, s.getAccount)
	handle(s, svcv1connect.AccountServiceUpdateAccountProcedure, s.updateAccount)
	handle(s, svcv1connect.AccountServiceDeleteAccountProcedure, s.deleteAccount)
	handle(s, svcv1connect.AccountServiceExportAccountProcedure, s.exportAccount)
	handle(s, svcv1connect.JobServiceGetJobProcedure, s.getJob)
	handle(s, svcv1connect.JobServiceListJobsProcedure, s.listJobs)
	handle(s, svcv1connect.JobServiceCancelJobProcedure, s.cancelJob)
	handle(s, svcv1connect.BillingServiceCreatePortalSessionProcedure, s.createPortalSession)
	handle(s, svcv1connect.DeveloperServiceCreateOrganizationProcedure, s.createOrganization)
	handle(s, svcv1connect.PlanServiceListPlansProcedure, s.listPlans)
	handle(s, svcv1connect.PlanServiceCreatePlanProcedure, s.createPlan)
	handle(s, svcv1connect.PlanServiceGetPlanProcedure, s.getPlan)
	handle(s, svcv1connect.PlanServiceListPlanObjectsProcedure, s.listPlanObjects)
	handle(s, svcv1connect.PlanServiceAuthorizePlanProcedure, s.authorizePlan)
	handle(s, svcv1connect.PlanServiceCancelPlanProcedure, s.cancelPlan)
	handle(s, svcv1connect.SourceServiceListSourcesProcedure, s.listSources)
	handle(s, svcv1connect.SourceServiceGetSourceProcedure, s.getSource)
	handle(s, svcv1connect.SourceServiceUpdateSourcePolicyProcedure, s.updateSourcePolicy)
	handle(s, svcv1connect.DestinationServiceCreateDestinationProcedure, s.createDestination)
	handle(s, svcv1connect.DestinationServiceListDestinationsProcedure, s.listDestinations)
	handle(s, svcv1connect.DestinationServiceGetDestinationProcedure, s.getDestination)
	handle(s, svcv1connect.ExecutionServiceListExecutionsProcedure, s.listExecutions)
	handle(s, svcv1connect.DeveloperServiceCreateApplicationProcedure, s.createApplication)
	handle(s, svcv1connect.DeveloperServiceListApplicationsProcedure, s.listApplications)
	handle(s, svcv1connect.DeveloperServiceGetApplicationProcedure, s.getApplication)
	handle(s, svcv1connect.DeveloperServiceCreateKeyProcedure, s.createKey)
	handle(s, svcv1connect.DeveloperServiceListKeysProcedure, s.listKeys)
	handle(s, svcv1connect.DeveloperServiceRotateKeyProcedure, s.rotateKey)
	handle(s, svcv1connect.DeveloperServiceRevokeKeyProcedure, s.revokeKey)
	handle(s, svcv1connect.DeveloperServiceListApplicationAuditProcedure, s.listApplicationAudit)
	handle(s, svcv1connect.EventServiceListEventsProcedure, s.listEvents)
	handle(s, svcv1connect.WebhookServiceListWebhooksProcedure, s.listWebhooks)
	handle(s, svcv1connect.WebhookServiceCreateWebhookProcedure, s.createWebhook)
	handle(s, svcv1connect.WebhookServiceGetWebhookProcedure, s.getWebhook)
	handle(s, svcv1connect.WebhookServiceUpdateWebhookProcedure, s.updateWebhook)
	handle(s, svcv1connect.WebhookServiceDeleteWebhookProcedure, s.deleteWebhook)
	handle(s, svcv1connect.WebhookServiceRotateWebhookSecretProcedure, s.rotateWebhookSecret)
	handle(s, svcv1connect.WebhookServiceListDeliveriesProcedure, s.listDeliveries)
	handle(s, svcv1connect.WebhookServiceSendTestEventProcedure, s.sendTestEvent)
	handle(s, svcv1connect.ReceiptServiceGetReceiptProcedure, s.getReceipt)
	handle(s, svcv1connect.ReceiptServiceRestoreReceiptProcedure, s.restoreReceipt)
	handle(s, svcv1connect.VaultServiceListVaultObjectsProcedure, s.listVaultObjects)
	handle(s, svcv1connect.VaultServiceGetVaultObjectProcedure, s.getVaultObject)
	handle(s, svcv1connect.VaultServiceGetVaultObjectContentProcedure, s.getVaultObjectContent)
	handle(s, svcv1connect.VaultServiceExportManifestsProcedure, s.exportManifests)
	handle(s, svcv1connect.VaultServiceRestoreVaultObjectProcedure, s.restoreVaultObject)
	handle(s, svcv1connect.VaultServiceSearchVaultProcedure, s.searchVault)
	handle(s, svcv1connect.UsageServiceGetUsageProcedure, s.getUsage)
	handle(s, svcv1connect.UsageServiceGetApplicationUsageProcedure, s.getApplicationUsage)
	handle(s, svcv1connect.UsageServiceSetCeilingProcedure, s.setCeiling)
	handle(s, svcv1connect.ExecutionServiceGetExecutionProcedure, s.getExecution)
	handle(s, svcv1connect.ExecutionServiceExecutePlanProcedure, s.executePlan)
	handle(s, svcv1connect.ExecutionServiceCancelExecutionProcedure, s.cancelExecution)
	s.registerConnectFlow()
}

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
	c := callerFrom(ctx)
	if err := s.accounts.SignOut(ctx, c.SessionToken); err != nil {
		return nil, err
	}
	s.setSessionCookie(ctx, "", -1)
	return &emptypb.Empty{}, nil
}

// setSessionCookie sets (or, with a negative ttl, clears) the session cookie: HttpOnly,
// SameSite=Lax, Secure when the request came over TLS or the base URL is https.
func (s *Server) setSessionCookie(ctx context.Context, token string, ttl time.Duration) {
	c := callerFrom(ctx)
	r := httpRequestFrom(ctx)
	ck := &http.Cookie{Name: platform.SessionCookie, Value: token, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.secureCookies(r), MaxAge: int(ttl.Seconds())}
	if ttl < 0 {
		ck.MaxAge = -1
	}
	c.Header.Add("Set-Cookie", ck.String())
}

func (s *Server) getAccount(ctx context.Context, _ *svcv1.GetAccountRequest) (*svcv1.Account, error) {
	return s.account(ctx, callerFrom(ctx).User)
}

func (s *Server) updateAccount(ctx context.Context, req *svcv1.UpdateAccountRequest) (*svcv1.Account, error) {
	var change platform.AccountChange
	change.DisplayName = req.DisplayName
	if req.Locale != nil {
		l := wire.EnumString(req.GetLocale().Descriptor(), req.GetLocale().Number())
		change.Locale = &l
	}
	u, err := s.accounts.Update(ctx, callerFrom(ctx).User.ID, change)
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
	if c := callerFrom(ctx); c != nil && c.Tenant.Owner == u.ID {
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
		Locale:           svcv1.Locale(enumNumber(svcv1.Locale_LOCALE_EN.Descriptor(), u.Locale)),
		Status:           svcv1.AccountStatus(enumNumber(svcv1.AccountStatus_ACCOUNT_STATUS_ACTIVE.Descriptor(), u.Status)),
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

func (s *Server) createOrganization(ctx context.Context, req *svcv1.CreateOrganizationRequest) (*svcv1.Organization, error) {
	o, err := s.accounts.CreateOrg(ctx, callerFrom(ctx).User.ID, req.GetName())
	if err != nil {
		return nil, err
	}
	return &svcv1.Organization{Id: o.ID, Name: o.Name, Status: o.Status, CreatedAt: timestamppb.New(o.CreatedAt)}, nil
}

func (s *Server) listPlans(ctx context.Context, req *svcv1.ListPlansRequest) (*svcv1.ListPlansResponse, error) {
	after, limit, binding, err := s.pageStart(ctx, svcv1connect.PlanServiceListPlansProcedure, req)
	if err != nil {
		return nil, err
	}
	c := callerFrom(ctx)
	keep := func(p *svcv1.Plan) bool {
		if req.State != nil && p.GetState() != req.GetState() {
			return false
		}
		if req.Intent != nil && p.GetIntent() != req.GetIntent() {
			return false
		}
		return c.grantReaches(p.GetSourceMarkers())
	}
	page, err := s.plans.Headers().List(ctx, c.Tenant.String(), after, limit, keep)
	if err != nil {
		return nil, err
	}
	res := &svcv1.ListPlansResponse{Data: nonNil(page.Items), NextCursor: s.nextCursor(binding, page.Last)}
	if c.REST {
		if small, err := s.plans.FillSmall(ctx, c.Tenant.String(), page.Items, store.InlineObjects); small || err != nil {
			return res, err
		}
		s.streamPlans(ctx, res, page.Items) // big plans: one chunk of objects in memory at a time
		return res, nil
	}
	for _, p := range page.Items {
		if err := s.plans.Fill(ctx, c.Tenant.String(), p); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// grantReaches reports whether a connection's grant covers every source a resource touches.
func (c *Caller) grantReaches(markers []*svcv1.SourceMarker) bool {
	if c.Connection == nil {
		return true
	}
	for _, m := range markers {
		if !c.Connection.Grant.AllowsSource(m.GetSourceId()) {
			return false
		}
	}
	return true
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// enumNumber returns the number of the enum value whose wire string is s (0 if none).
func enumNumber(ed protoreflect.EnumDescriptor, s string) protoreflect.EnumNumber {
	n, _ := wire.ParseEnum(ed, s)
	return n
}

// enumWire is an enum value's wire string.
func enumWire(e protoreflect.Enum) string { return wire.EnumString(e.Descriptor(), e.Number()) }
