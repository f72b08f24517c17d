package webhooktest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
)

// RunStoreTests is the conformance suite of webhook.Store: run it against every
// implementation (the bbolt store runs it with a fresh file per test).
func RunStoreTests(t *testing.T, newStore func(t *testing.T) webhook.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	app := id.NewAt("app", t0)

	newEndpoint := func(appID string) *webhook.Endpoint {
		return &webhook.Endpoint{ID: id.NewAt("whk", t0), AppID: appID, URL: "https://example.com/hook",
			EventTypes: []string{"svc.plan.*"}, Mode: platform.ModeTest, Status: webhook.StatusActive,
			Secrets: []webhook.SealedSecret{{Sealed: []byte{1, 2, 3}, CreatedAt: t0}}, CreatedAt: t0, UpdatedAt: t0}
	}
	// A JSON envelope with characters a JSON store might re-escape, already escaped the way
	// the engine escapes them.
	envelope := func(evtID string) json.RawMessage {
		return json.RawMessage(fmt.Sprintf(`{"specversion":"1.0","id":%q,"data":{"html":"\u003cb\u003e \u0026 \u2028"}}`, evtID))
	}

	t.Run("webhooks", func(t *testing.T) {
		s := newStore(t)
		a, b := newEndpoint(app), newEndpoint(app)
		other := newEndpoint(id.NewAt("app", t0))
		for _, w := range []*webhook.Endpoint{a, b, other} {
			if err := s.CreateWebhook(ctx, w); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Webhook(ctx, a.ID)
		if err != nil || got.URL != a.URL || got.Mode != a.Mode || !slices.Equal(got.Secrets[0].Sealed, a.Secrets[0].Sealed) {
			t.Fatalf("Webhook = %+v, %v", got, err)
		}
		got.URL = "https://changed.example"
		if again, _ := s.Webhook(ctx, a.ID); again.URL != a.URL {
			t.Error("the store shares the record it returned")
		}
		if _, err := s.Webhook(ctx, id.NewAt("whk", t0)); !errors.Is(err, platform.ErrNotFound) {
			t.Errorf("missing webhook: %v, want platform.ErrNotFound", err)
		}
		list, err := s.Webhooks(ctx, app)
		if err != nil || len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
			t.Fatalf("Webhooks = %v, %v; want a, b in creation order", list, err)
		}
		all, err := s.AllWebhooks(ctx)
		if err != nil || len(all) != 3 {
			t.Fatalf("AllWebhooks = %d, %v", len(all), err)
		}
		up, err := s.UpdateWebhook(ctx, a.ID, func(w *webhook.Endpoint) error { w.Status = webhook.StatusPaused; return nil })
		if err != nil || up.Status != webhook.StatusPaused {
			t.Fatalf("UpdateWebhook = %v, %v", up, err)
		}
		boom := errors.New("boom")
		if _, err := s.UpdateWebhook(ctx, a.ID, func(w *webhook.Endpoint) error { w.URL = "x"; return boom }); !errors.Is(err, boom) {
			t.Errorf("UpdateWebhook error from fn: %v", err)
		}
		if got, _ := s.Webhook(ctx, a.ID); got.URL != a.URL || got.Status != webhook.StatusPaused {
			t.Errorf("after a failed update: %+v", got)
		}
		if _, err := s.UpdateWebhook(ctx, id.NewAt("whk", t0), func(*webhook.Endpoint) error { return nil }); !errors.Is(err, platform.ErrNotFound) {
			t.Errorf("update missing: %v", err)
		}
	})

	t.Run("queue", func(t *testing.T) {
		s := newStore(t)
		w := newEndpoint(app)
		if err := s.CreateWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
		var ids []string
		var q []webhook.QueuedEvent
		for range 25 {
			e := id.NewAt("evt", t0)
			ids = append(ids, e)
			q = append(q, webhook.QueuedEvent{WebhookID: w.ID, EventID: e, Event: envelope(e), QueuedAt: t0})
		}
		q = append(q, webhook.QueuedEvent{WebhookID: id.NewAt("whk", t0), EventID: ids[0], Event: envelope(ids[0]), QueuedAt: t0})
		if err := s.Enqueue(ctx, q[:10]); err != nil {
			t.Fatal(err)
		}
		if err := s.Enqueue(ctx, q[5:]); err != nil { // overlaps: replaces, no duplicates
			t.Fatal(err)
		}
		got, err := s.Queued(ctx, w.ID, 20)
		if err != nil || len(got) != 20 {
			t.Fatalf("Queued = %d, %v; want 20", len(got), err)
		}
		for i, g := range got {
			if g.EventID != ids[i] || string(g.Event) != string(envelope(ids[i])) {
				t.Fatalf("Queued[%d] = %s %s, want %s in id order, bytes unchanged", i, g.EventID, g.Event, ids[i])
			}
		}
		d := &webhook.Delivery{ID: id.NewAt("dlv", t0), WebhookID: w.ID, EventIDs: ids[:20], Status: webhook.DeliveryPending,
			Attempts: []webhook.Attempt{}, NextAttemptAt: &t0, CreatedAt: t0, UpdatedAt: t0}
		for _, g := range got {
			d.Events = append(d.Events, g.Event)
		}
		if err := s.CreateDelivery(ctx, d); err != nil {
			t.Fatal(err)
		}
		rest, err := s.Queued(ctx, w.ID, 20)
		if err != nil || len(rest) != 5 || rest[0].EventID != ids[20] {
			t.Fatalf("after CreateDelivery the queue holds %d, %v; want the last 5", len(rest), err)
		}
		back, err := s.Delivery(ctx, d.ID)
		if err != nil || len(back.Events) != 20 || string(back.Events[3]) != string(d.Events[3]) {
			t.Fatalf("Delivery = %v, %v; events must come back byte for byte", back, err)
		}
		orphan := *d
		orphan.ID, orphan.WebhookID = id.NewAt("dlv", t0), id.NewAt("whk", t0)
		if err := s.CreateDelivery(ctx, &orphan); !errors.Is(err, platform.ErrNotFound) {
			t.Errorf("delivery for a missing webhook: %v, want platform.ErrNotFound", err)
		}
	})

	t.Run("deliveries", func(t *testing.T) {
		s := newStore(t)
		w, other := newEndpoint(app), newEndpoint(app)
		for _, e := range []*webhook.Endpoint{w, other} {
			if err := s.CreateWebhook(ctx, e); err != nil {
				t.Fatal(err)
			}
		}
		var ds []*webhook.Delivery
		for i := range 7 {
			at := t0.Add(time.Duration(i) * time.Second)
			e := id.NewAt("evt", at)
			d := &webhook.Delivery{ID: id.NewAt("dlv", at), WebhookID: w.ID, EventIDs: []string{e}, Status: webhook.DeliveryPending,
				Attempts: []webhook.Attempt{}, NextAttemptAt: &at, CreatedAt: at, UpdatedAt: at, Events: []json.RawMessage{envelope(e)}}
			if err := s.CreateDelivery(ctx, d); err != nil {
				t.Fatal(err)
			}
			ds = append(ds, d)
		}
		od := *ds[0]
		od.ID, od.WebhookID = id.NewAt("dlv", t0), other.ID
		if err := s.CreateDelivery(ctx, &od); err != nil {
			t.Fatal(err)
		}
		ds[1].Status, ds[1].NextAttemptAt = webhook.DeliverySucceeded, nil
		ds[1].Attempts = []webhook.Attempt{{At: t0, ResponseStatus: 204, DurationMillis: 3}}
		ds[2].Status, ds[2].NextAttemptAt, ds[2].LastError = webhook.DeliveryDead, nil, "HTTP 500"
		next := t0.Add(time.Minute)
		ds[3].Status, ds[3].NextAttemptAt = webhook.DeliveryFailed, &next
		for _, d := range ds[1:4] {
			if err := s.UpdateDelivery(ctx, d); err != nil {
				t.Fatal(err)
			}
		}
		got, err := s.Delivery(ctx, ds[1].ID)
		if err != nil || got.Status != webhook.DeliverySucceeded || len(got.Attempts) != 1 || got.Attempts[0].ResponseStatus != 204 || got.NextAttemptAt != nil {
			t.Fatalf("updated delivery = %+v, %v", got, err)
		}
		page, err := s.Deliveries(ctx, w.ID, "", 3)
		if err != nil || len(page) != 3 || page[0].ID != ds[6].ID || page[2].ID != ds[4].ID {
			t.Fatalf("first page = %v, %v; want the 3 newest", ids(page), err)
		}
		page, err = s.Deliveries(ctx, w.ID, page[2].ID, 10)
		if err != nil || len(page) != 4 || page[0].ID != ds[3].ID || page[3].ID != ds[0].ID {
			t.Fatalf("second page = %v, %v", ids(page), err)
		}
		active, err := s.ActiveDeliveries(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{ds[0].ID, ds[3].ID, ds[4].ID, ds[5].ID, ds[6].ID, od.ID}
		if got := ids(active); !sameSet(got, want) {
			t.Fatalf("ActiveDeliveries = %v, want %v (pending and failed only)", got, want)
		}
		missing := *ds[0]
		missing.ID = id.NewAt("dlv", t0)
		if err := s.UpdateDelivery(ctx, &missing); !errors.Is(err, platform.ErrNotFound) {
			t.Errorf("update missing delivery: %v", err)
		}

		if err := s.Enqueue(ctx, []webhook.QueuedEvent{{WebhookID: w.ID, EventID: id.NewAt("evt", t0), Event: envelope("x"), QueuedAt: t0}}); err != nil {
			t.Fatal(err)
		}
		if err := s.DeleteWebhook(ctx, w.ID); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Delivery(ctx, ds[0].ID); !errors.Is(err, platform.ErrNotFound) {
			t.Errorf("delivery of a deleted webhook: %v", err)
		}
		if q, _ := s.Queued(ctx, w.ID, 10); len(q) != 0 {
			t.Errorf("queue of a deleted webhook holds %d", len(q))
		}
		if active, _ := s.ActiveDeliveries(ctx); !sameSet(ids(active), []string{od.ID}) {
			t.Errorf("after delete, active = %v", ids(active))
		}
		if err := s.DeleteWebhook(ctx, w.ID); !errors.Is(err, platform.ErrNotFound) {
			t.Errorf("delete twice: %v", err)
		}
		if err := s.Enqueue(ctx, []webhook.QueuedEvent{{WebhookID: w.ID, EventID: id.NewAt("evt", t0), Event: envelope("x"), QueuedAt: t0}}); err != nil {
			t.Errorf("enqueue for a deleted webhook must be dropped, not fail: %v", err)
		}
		if q, _ := s.Queued(ctx, w.ID, 10); len(q) != 0 {
			t.Errorf("queue of a deleted webhook holds %d", len(q))
		}
	})

	t.Run("prune", func(t *testing.T) {
		s := newStore(t)
		w := newEndpoint(app)
		if err := s.CreateWebhook(ctx, w); err != nil {
			t.Fatal(err)
		}
		old, cutoff := t0.Add(-40*24*time.Hour), t0.Add(-30*24*time.Hour)
		mk := func(at time.Time, st webhook.DeliveryStatus) *webhook.Delivery {
			d := &webhook.Delivery{ID: id.NewAt("dlv", at), WebhookID: w.ID, EventIDs: []string{}, Status: st,
				Attempts: []webhook.Attempt{}, CreatedAt: at, UpdatedAt: at, Events: []json.RawMessage{}}
			if err := s.CreateDelivery(ctx, d); err != nil {
				t.Fatal(err)
			}
			return d
		}
		oldOK, oldDead := mk(old, webhook.DeliverySucceeded), mk(old.Add(time.Minute), webhook.DeliveryDead)
		oldFailed := mk(old.Add(2*time.Minute), webhook.DeliveryFailed) // still retrying: kept
		recent := mk(t0, webhook.DeliverySucceeded)
		if n, err := s.PruneDeliveries(ctx, cutoff, 1); err != nil || n != 1 {
			t.Fatalf("prune limit 1: %d, %v", n, err)
		}
		if _, err := s.Delivery(ctx, oldOK.ID); !errors.Is(err, platform.ErrNotFound) {
			t.Errorf("the oldest final delivery was not pruned first: %v", err)
		}
		if n, err := s.PruneDeliveries(ctx, cutoff, 10); err != nil || n != 1 {
			t.Fatalf("prune: %d, %v", n, err)
		}
		left, _ := s.Deliveries(ctx, w.ID, "", 10)
		if !sameSet(ids(left), []string{oldFailed.ID, recent.ID}) {
			t.Errorf("after pruning, deliveries %v, want the failed and the recent one (not %s)", ids(left), oldDead.ID)
		}
		if n, _ := s.PruneDeliveries(ctx, cutoff, 10); n != 0 {
			t.Errorf("pruned %d more", n)
		}
	})
}

func ids(ds []*webhook.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
