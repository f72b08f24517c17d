package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/platform/webhook/webhooktest"
	"svc.dev/svc/store"
)

// The bbolt webhook store passes the webhook engine's conformance suite.
func TestWebhookStoreConformance(t *testing.T) {
	webhooktest.RunStoreTests(t, func(t *testing.T) webhook.Store {
		db, err := store.Open(filepath.Join(t.TempDir(), "svc.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.Webhooks()
	})
}

// A live delivery is metered once, in the transaction that records its success: retrying
// the update, failures and test-mode deliveries add nothing.
func TestSucceededLiveDeliveriesAreMeteredOnce(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	if err := db.CreateUser(ctx, &platform.User{ID: "usr_01JD0000000000000000000001", Email: "a@example.com"}); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateOrg(ctx, &platform.Org{ID: "org_01JD0000000000000000000001", Name: "o", OwnerID: "usr_01JD0000000000000000000001"}); err != nil {
		t.Fatal(err)
	}
	app := &platform.Application{ID: "app_01JD0000000000000000000001", OrgID: "org_01JD0000000000000000000001", Name: "a"}
	if err := db.CreateApplication(ctx, app); err != nil {
		t.Fatal(err)
	}
	ws := db.Webhooks()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	month := platform.Month(now)
	for i, mode := range []platform.Mode{platform.ModeLive, platform.ModeTest} {
		ep := &webhook.Endpoint{ID: fmt.Sprintf("whk_01JD000000000000000000000%d", i), AppID: app.ID, Mode: mode,
			URL: "https://example.com/hook", EventTypes: []string{"*"}, Status: webhook.StatusActive, CreatedAt: now}
		if err := ws.CreateWebhook(ctx, ep); err != nil {
			t.Fatal(err)
		}
		d := &webhook.Delivery{ID: fmt.Sprintf("dlv_01JD000000000000000000000%d", i), WebhookID: ep.ID,
			EventIDs: []string{}, Status: webhook.DeliveryPending, CreatedAt: now, UpdatedAt: now, Events: []json.RawMessage{}}
		if err := ws.CreateDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
		for _, st := range []webhook.DeliveryStatus{webhook.DeliveryFailed, webhook.DeliverySucceeded, webhook.DeliverySucceeded} {
			d.Status = st
			if err := ws.UpdateDelivery(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, scope := range []string{"org:" + app.OrgID, "app:" + app.ID} {
		u, err := db.Usage(ctx, scope, month)
		if err != nil {
			t.Fatal(err)
		}
		if got := u[platform.MeterWebhookDeliveries]; got != 1 {
			t.Errorf("%s: %v webhook deliveries metered, want 1 (the live one, once)", scope, got)
		}
	}
}
