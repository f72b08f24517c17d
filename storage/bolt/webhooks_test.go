package bolt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/platform/webhook/webhooktest"
	"svc.dev/svc/storage/bolt"
)

// The bbolt webhook store passes the webhook engine's conformance suite.
func TestWebhookStoreConformance(t *testing.T) {
	webhooktest.RunStoreTests(t, func(t *testing.T) webhook.Store {
		db, err := bolt.Open(filepath.Join(t.TempDir(), "svc.db"))
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

// EventsExtra stores the events and their queue entries together.
func TestEventsExtraStoresLogAndQueueTogether(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	ws := db.Webhooks()
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	ep := &webhook.Endpoint{ID: "whk_01JD0000000000000000000009", AppID: "app_01JD0000000000000000000009", Mode: platform.ModeTest,
		URL: "https://example.com/hook", EventTypes: []string{"*"}, Status: webhook.StatusActive, CreatedAt: now}
	if err := ws.CreateWebhook(ctx, ep); err != nil {
		t.Fatal(err)
	}
	log := bolt.NewCollection(db, "events", func() *svcv1.Event { return &svcv1.Event{} })
	ev := &svcv1.Event{Id: "evt_01JD0000000000000000000001", Type: "svc.plan.created", Specversion: "1.0"}
	items := []bolt.Item[*svcv1.Event]{{Tenant: "test:usr_1", ID: ev.Id, Value: ev}, {Tenant: "app:" + ep.AppID + ":test", ID: ev.Id, Value: ev}}
	queue := []webhook.QueuedEvent{
		{WebhookID: ep.ID, EventID: ev.Id, Event: json.RawMessage(`{}`), QueuedAt: now},
		{WebhookID: "whk_01JD000000000000000000GONE", EventID: ev.Id, Event: json.RawMessage(`{}`), QueuedAt: now}, // deleted: dropped
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	x, err := bolt.EventsExtra(log, items, queue)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Apply(cancelled, x); err == nil {
		t.Fatal("published with a cancelled context")
	}
	if q, _ := ws.Queued(ctx, ep.ID, 10); len(q) != 0 {
		t.Fatalf("a failed publication queued %d events", len(q))
	}
	if err := db.Apply(ctx, x); err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if _, err := log.Get(ctx, it.Tenant, ev.Id); err != nil {
			t.Fatalf("event not in %s: %v", it.Tenant, err)
		}
	}
	if q, _ := ws.Queued(ctx, ep.ID, 10); len(q) != 1 || q[0].EventID != ev.Id {
		t.Fatalf("queued %v", q)
	}
}

// A change and its extras are stored together or not at all.
func TestExtrasGoWithTheirChange(t *testing.T) {
	db, _ := open(t)
	ctx := context.Background()
	jobs := bolt.NewCollection(db, "jobs", func() *svcv1.Job { return &svcv1.Job{} })
	log := bolt.NewCollection(db, "events", func() *svcv1.Event { return &svcv1.Event{} })
	event := func(id string) bolt.Extra {
		x, err := bolt.EventsExtra(log, []bolt.Item[*svcv1.Event]{{Tenant: "t", ID: id, Value: &svcv1.Event{Id: id}}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return x
	}
	usage := bolt.UsageExtra([]bolt.UsageDelta{{Scope: "org:o", Month: "2026-11", Meter: "plans", Quantity: 1}})
	if err := jobs.PutWith(ctx, "t", "job_1", &svcv1.Job{Id: "job_1"}, event("evt_1"), usage); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("refused")
	if err := jobs.UpdateWith(ctx, "t", "job_1", func(*svcv1.Job) error { return refused }, event("evt_2"), usage); !errors.Is(err, refused) {
		t.Fatalf("update: %v", err)
	}
	if err := jobs.UpdateWith(ctx, "t", "job_1", func(j *svcv1.Job) error { j.Progress = 50; return nil }, event("evt_3")); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"evt_1": true, "evt_2": false, "evt_3": true} {
		if _, err := log.Get(ctx, "t", id); (err == nil) != want {
			t.Errorf("%s stored: %v, want %v", id, err == nil, want)
		}
	}
	if u, _ := db.Usage(ctx, "org:o", "2026-11"); u["plans"] != 1 {
		t.Errorf("usage %v, want the one put's", u)
	}
	if j, _ := jobs.Get(ctx, "t", "job_1"); j.GetProgress() != 50 {
		t.Errorf("job %v", j)
	}
}
