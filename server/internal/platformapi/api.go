// Package platformapi serves the developer platform's and the account's endpoints: sign-up
// and sessions, organizations, applications and their keys and audit log, webhooks, usage
// and the spending ceiling, and the billing portal. Each handler decodes nothing itself (the
// edge did), makes its one check of the caller, calls the platform, and returns the message.
package platformapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/gen/svc/v1/svcv1connect"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/billing"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/server/internal/rpc"
	"svc.dev/svc/storage"
)

// API holds what the platform's endpoints use. The server makes one and installs Handlers.
type API struct {
	Accounts *platform.Accounts
	Devs     *platform.Developers
	Webhooks *webhook.Engine
	Meter    *platform.Meter
	Pager    rpc.Pager
	Audit    rpc.Audit
	// AuditLog reads applications' audit entries; AuditFlush first writes what Audit holds.
	AuditLog   storage.Records[*svcv1.AuditEntry]
	AuditFlush func()
	Now        func() time.Time
	Log        *slog.Logger
	// Emit announces an event to a tenant's stream and webhooks.
	Emit func(ctx context.Context, tenant platform.Tenant, typ, source, subject string, data map[string]any, also ...string)
	// Holdings counts a tenant's connected sources and its vault's bytes (the Account's).
	Holdings func(ctx context.Context, t platform.Tenant) (sources int, vaultBytes int64, err error)
	// SecureCookies reports whether the session cookie of a response to r is Secure.
	SecureCookies func(r *http.Request) bool
	// Biller is the payment processor, or nil: then the portal is svc's own page, whose URLs
	// PortalKey signs.
	Biller    *billing.Biller
	PortalKey []byte
	// PublicBase is the base URL clients reach the server at, for links.
	PublicBase func(r *http.Request) string
	// RateHeaders applies the anonymous allowance to a plain HTTP route; false when refused.
	RateHeaders func(w http.ResponseWriter, r *http.Request) bool
}

// Handlers returns the implementation of each procedure the API serves, by procedure.
func (a *API) Handlers() map[string]rpc.Handler {
	return map[string]rpc.Handler{
		svcv1connect.AccountServiceSignUpProcedure:                 rpc.Handle(a.signUp),
		svcv1connect.AccountServiceSignInProcedure:                 rpc.Handle(a.signIn),
		svcv1connect.AccountServiceSignOutProcedure:                rpc.Handle(a.signOut),
		svcv1connect.AccountServiceGetAccountProcedure:             rpc.Handle(a.getAccount),
		svcv1connect.AccountServiceUpdateAccountProcedure:          rpc.Handle(a.updateAccount),
		svcv1connect.BillingServiceCreatePortalSessionProcedure:    rpc.Handle(a.createPortalSession),
		svcv1connect.DeveloperServiceCreateOrganizationProcedure:   rpc.Handle(a.createOrganization),
		svcv1connect.DeveloperServiceCreateApplicationProcedure:    rpc.Handle(a.createApplication),
		svcv1connect.DeveloperServiceListApplicationsProcedure:     rpc.Handle(a.listApplications),
		svcv1connect.DeveloperServiceGetApplicationProcedure:       rpc.Handle(a.getApplication),
		svcv1connect.DeveloperServiceCreateKeyProcedure:            rpc.Handle(a.createKey),
		svcv1connect.DeveloperServiceListKeysProcedure:             rpc.Handle(a.listKeys),
		svcv1connect.DeveloperServiceRotateKeyProcedure:            rpc.Handle(a.rotateKey),
		svcv1connect.DeveloperServiceRevokeKeyProcedure:            rpc.Handle(a.revokeKey),
		svcv1connect.DeveloperServiceListApplicationAuditProcedure: rpc.Handle(a.listApplicationAudit),
		svcv1connect.WebhookServiceListWebhooksProcedure:           rpc.Handle(a.listWebhooks),
		svcv1connect.WebhookServiceCreateWebhookProcedure:          rpc.Handle(a.createWebhook),
		svcv1connect.WebhookServiceGetWebhookProcedure:             rpc.Handle(a.getWebhook),
		svcv1connect.WebhookServiceUpdateWebhookProcedure:          rpc.Handle(a.updateWebhook),
		svcv1connect.WebhookServiceDeleteWebhookProcedure:          rpc.Handle(a.deleteWebhook),
		svcv1connect.WebhookServiceRotateWebhookSecretProcedure:    rpc.Handle(a.rotateWebhookSecret),
		svcv1connect.WebhookServiceListDeliveriesProcedure:         rpc.Handle(a.listDeliveries),
		svcv1connect.WebhookServiceSendTestEventProcedure:          rpc.Handle(a.sendTestEvent),
		svcv1connect.UsageServiceGetUsageProcedure:                 rpc.Handle(a.getUsage),
		svcv1connect.UsageServiceGetApplicationUsageProcedure:      rpc.Handle(a.getApplicationUsage),
		svcv1connect.UsageServiceSetCeilingProcedure:               rpc.Handle(a.setCeiling),
	}
}

// Routes installs the platform's plain HTTP routes.
func (a *API) Routes(mux *http.ServeMux) {
	mux.HandleFunc("GET /v1/billing/portal/page", a.servePortalPage)
}
