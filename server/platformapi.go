package server

import (
	"context"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/server/internal/platformapi"
)

// newWebhooks starts the delivery engine on the server's store.
func (s *Server) newWebhooks(ctx context.Context) (*webhook.Engine, error) {
	return webhook.New(ctx, s.store.Webhooks(), webhook.Options{
		Leases: s.webhookLeases(), // replicas: one delivers each webhook's events
		Poll:   s.leaseRenewal(),
		Sealer: s.sealer,
		Dev:    s.cfg.Dev,
		Now:    s.cfg.Now,
		Logger: s.log,
		// Live deliveries are metered by the store, in the transaction that records their
		// success (store.Webhooks.UpdateDelivery).
		OnDisabled: func(ep *webhook.Endpoint) {
			app, err := s.devs.Application(context.Background(), ep.AppID)
			if err != nil {
				return
			}
			s.emit(context.Background(), platform.Tenant{Owner: app.OrgID, Mode: ep.Mode}, event.WebhookDisabled, "/v1/webhooks", ep.ID,
				map[string]any{"webhook_id": ep.ID, "reason": ep.DisabledReason})
		},
	})
}

// newPlatformAPI returns the handlers of the platform's endpoints over the server's parts.
func (s *Server) newPlatformAPI() *platformapi.API {
	return &platformapi.API{
		Accounts: s.accounts, Devs: s.devs, Webhooks: s.webhooks, Meter: s.meter, Pager: s.pager,
		Audit: s.auditor, AuditLog: s.auditLog, AuditFlush: s.audit.Flush, Now: s.cfg.Now, Log: s.log,
		Emit: s.emit, Holdings: s.holdings, SecureCookies: s.secureCookies,
		Biller: s.biller, PortalKey: s.exportKey, PublicBase: s.publicBase, RateHeaders: s.rateHeaders,
	}
}

// holdings counts what a tenant holds for its Account: connected sources (neither revoked
// nor disconnected) and the vault's bytes of distinct content.
func (s *Server) holdings(ctx context.Context, t platform.Tenant) (int, int64, error) {
	sources, err := s.sources.Count(ctx, t.String(), func(src *svcv1.Source) bool {
		return src.GetStatus() != svcv1.SourceStatus_SOURCE_STATUS_REVOKED && src.GetStatus() != svcv1.SourceStatus_SOURCE_STATUS_DISCONNECTED
	})
	if err != nil {
		return 0, 0, err
	}
	vaultBytes, err := s.vault.Usage(ctx, t.String())
	return sources, vaultBytes, err
}
