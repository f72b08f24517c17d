package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/billing"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/storage"
)

// Webhooks keeps webhooks (table webhooks), their queues (webhook_queue) and deliveries
// (webhook_deliveries).
func (s *Store) Webhooks() webhook.Store { return &webhooks{s} }

type webhooks struct{ s *Store }

var _ webhook.Store = (*webhooks)(nil)

func putWebhook(ctx context.Context, q querier, e *webhook.Endpoint) error {
	return upsertJSON(ctx, q, "webhooks", e, []string{"id", "app_id"}, e.ID, e.AppID)
}

func (w *webhooks) CreateWebhook(ctx context.Context, e *webhook.Endpoint) error {
	return putWebhook(ctx, w.s.pool, e)
}

func (w *webhooks) Webhook(ctx context.Context, id string) (*webhook.Endpoint, error) {
	return getJSON[webhook.Endpoint](ctx, w.s.pool, "webhooks", "id", id, false)
}

func (w *webhooks) UpdateWebhook(ctx context.Context, id string, fn func(*webhook.Endpoint) error) (*webhook.Endpoint, error) {
	return updateJSON(ctx, w.s, "webhooks", "id", id, fn, func(tx pgx.Tx, e *webhook.Endpoint) error { return putWebhook(ctx, tx, e) })
}

// DeleteWebhook removes the webhook; its queue and deliveries go with it (ON DELETE CASCADE).
func (w *webhooks) DeleteWebhook(ctx context.Context, id string) error {
	tag, err := w.s.pool.Exec(ctx, "DELETE FROM webhooks WHERE id = $1", id)
	if err != nil {
		return fmt.Errorf("delete webhook %s: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("webhook %s: %w", id, platform.ErrNotFound)
	}
	return nil
}

func (w *webhooks) Webhooks(ctx context.Context, appID string) ([]*webhook.Endpoint, error) {
	out, err := listJSON[webhook.Endpoint](ctx, w.s.pool, "SELECT body FROM webhooks WHERE app_id = $1 ORDER BY id", appID)
	if err != nil {
		return nil, fmt.Errorf("webhooks of %s: %w", appID, err)
	}
	return out, nil
}

func (w *webhooks) AllWebhooks(ctx context.Context) ([]*webhook.Endpoint, error) {
	out, err := listJSON[webhook.Endpoint](ctx, w.s.pool, "SELECT body FROM webhooks ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("webhooks: %w", err)
	}
	return out, nil
}

func (w *webhooks) Enqueue(ctx context.Context, events []webhook.QueuedEvent) error {
	return w.s.inTx(ctx, func(tx pgx.Tx) error { return enqueue(ctx, tx, events) })
}

// enqueue queues events in tx; an event for a webhook that no longer exists is dropped.
func enqueue(ctx context.Context, tx pgx.Tx, events []webhook.QueuedEvent) error {
	for _, ev := range events {
		b, err := jsonMarshal(ev)
		if err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO webhook_queue (webhook_id, event_id, body)
			SELECT $1, $2, $3 WHERE EXISTS (SELECT 1 FROM webhooks WHERE id = $1)
			ON CONFLICT (webhook_id, event_id) DO UPDATE SET body = EXCLUDED.body`, ev.WebhookID, ev.EventID, b)
		if err != nil {
			return fmt.Errorf("queue event %s for %s: %w", ev.EventID, ev.WebhookID, err)
		}
	}
	return nil
}

func (w *webhooks) Queued(ctx context.Context, webhookID string, limit int) ([]webhook.QueuedEvent, error) {
	out, err := listJSON[webhook.QueuedEvent](ctx, w.s.pool,
		"SELECT body FROM webhook_queue WHERE webhook_id = $1 ORDER BY event_id LIMIT $2", webhookID, limit)
	if err != nil {
		return nil, fmt.Errorf("queue of %s: %w", webhookID, err)
	}
	evs := make([]webhook.QueuedEvent, len(out))
	for i, e := range out {
		evs[i] = *e
	}
	return evs, nil
}

func putDelivery(ctx context.Context, q querier, d *webhook.Delivery) error {
	return upsertJSON(ctx, q, "webhook_deliveries", d, []string{"id", "webhook_id", "final", "created_at"},
		d.ID, d.WebhookID, d.Status.Final(), d.CreatedAt)
}

// CreateDelivery stores the delivery and takes its events off the queue, in one transaction.
func (w *webhooks) CreateDelivery(ctx context.Context, d *webhook.Delivery) error {
	return w.s.inTx(ctx, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, "SELECT 1 FROM webhooks WHERE id = $1 FOR SHARE", d.WebhookID).Scan(&one); errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("webhook %s: %w", d.WebhookID, platform.ErrNotFound)
		} else if err != nil {
			return fmt.Errorf("create delivery: %w", err)
		}
		if _, err := tx.Exec(ctx, "DELETE FROM webhook_queue WHERE webhook_id = $1 AND event_id = ANY($2)", d.WebhookID, d.EventIDs); err != nil {
			return fmt.Errorf("create delivery: %w", err)
		}
		return putDelivery(ctx, tx, d)
	})
}

// UpdateDelivery replaces a delivery and, when a live webhook's delivery becomes succeeded,
// meters it for the application and its organization in the same transaction, so it is
// counted once whatever crashes.
func (w *webhooks) UpdateDelivery(ctx context.Context, d *webhook.Delivery) error {
	return w.s.inTx(ctx, func(tx pgx.Tx) error {
		old, err := getJSON[webhook.Delivery](ctx, tx, "webhook_deliveries", "id", d.ID, true)
		if err != nil {
			return err
		}
		if err := putDelivery(ctx, tx, d); err != nil {
			return err
		}
		if old.Status == webhook.DeliverySucceeded || d.Status != webhook.DeliverySucceeded {
			return nil
		}
		ep, err := getJSON[webhook.Endpoint](ctx, tx, "webhooks", "id", d.WebhookID, false)
		if err != nil {
			return err
		}
		if ep.Mode != platform.ModeLive {
			return nil
		}
		app, err := getJSON[platform.Application](ctx, tx, "applications", "id", ep.AppID, false)
		if errors.Is(err, platform.ErrNotFound) {
			return nil // nobody to bill; the delivery is still recorded
		} else if err != nil {
			return fmt.Errorf("meter delivery %s: %w", d.ID, err)
		}
		month := platform.Month(d.UpdatedAt)
		return addUsage(ctx, tx, []storage.UsageDelta{
			{Scope: "org:" + app.OrgID, Month: month, Meter: platform.MeterWebhookDeliveries, Quantity: 1},
			{Scope: "app:" + app.ID, Month: month, Meter: platform.MeterWebhookDeliveries, Quantity: 1},
		})
	})
}

func (w *webhooks) Delivery(ctx context.Context, id string) (*webhook.Delivery, error) {
	return getJSON[webhook.Delivery](ctx, w.s.pool, "webhook_deliveries", "id", id, false)
}

func (w *webhooks) Deliveries(ctx context.Context, webhookID, before string, limit int) ([]*webhook.Delivery, error) {
	out, err := listJSON[webhook.Delivery](ctx, w.s.pool, `SELECT body FROM webhook_deliveries
		WHERE webhook_id = $1 AND ($2 = '' OR id < $2) ORDER BY id DESC LIMIT $3`, webhookID, before, limit)
	if err != nil {
		return nil, fmt.Errorf("deliveries of %s: %w", webhookID, err)
	}
	return out, nil
}

func (w *webhooks) ActiveDeliveries(ctx context.Context) ([]*webhook.Delivery, error) {
	out, err := listJSON[webhook.Delivery](ctx, w.s.pool, "SELECT body FROM webhook_deliveries WHERE NOT final ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("active deliveries: %w", err)
	}
	return out, nil
}

func (w *webhooks) PruneDeliveries(ctx context.Context, createdBefore time.Time, limit int) (int, error) {
	tag, err := w.s.pool.Exec(ctx, `DELETE FROM webhook_deliveries WHERE id IN (
		SELECT id FROM webhook_deliveries WHERE final AND created_at < $1 ORDER BY id LIMIT $2)`, createdBefore, limit)
	if err != nil {
		return 0, fmt.Errorf("prune deliveries: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// EventsWrite records events in their streams and queues them for webhooks, in the
// transaction of the change they announce.
func (s *Store) EventsWrite(items []storage.Item[*svcv1.Event], queue []webhook.QueuedEvent) (storage.Write, error) {
	enc := make([][]byte, len(items))
	for i, it := range items {
		b, err := encode("event", it.Value)
		if err != nil {
			return nil, err
		}
		enc[i] = b
	}
	return &write{func(ctx context.Context, tx pgx.Tx) error {
		for i, it := range items {
			_, err := tx.Exec(ctx, `INSERT INTO events (tenant, id, type, body) VALUES ($1, $2, $3, $4)
				ON CONFLICT (tenant, id) DO UPDATE SET type = EXCLUDED.type, body = EXCLUDED.body`, it.Tenant, it.ID, it.Value.GetType(), enc[i])
			if err != nil {
				return fmt.Errorf("write event %s: %w", it.ID, err)
			}
		}
		return enqueue(ctx, tx, queue)
	}}, nil
}

// Billing keeps what the payment processor made (table billing).
func (s *Store) Billing() billing.Store { return billingStore{s} }

type billingStore struct{ s *Store }

func (b billingStore) get(ctx context.Context, key string) (string, error) {
	var v string
	err := b.s.pool.QueryRow(ctx, "SELECT value FROM billing WHERE key = $1", key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", fmt.Errorf("billing %s: %w", key, billing.ErrNotFound)
	} else if err != nil {
		return "", fmt.Errorf("read billing %s: %w", key, err)
	}
	return v, nil
}

func (b billingStore) put(ctx context.Context, key, value string) error {
	if _, err := b.s.pool.Exec(ctx, `INSERT INTO billing (key, value) VALUES ($1, $2)
		ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`, key, value); err != nil {
		return fmt.Errorf("write billing %s: %w", key, err)
	}
	return nil
}

func (b billingStore) Customer(ctx context.Context, orgID string) (string, error) {
	return b.get(ctx, "customer/"+orgID)
}

func (b billingStore) PutCustomer(ctx context.Context, orgID, customerID string) error {
	return b.put(ctx, "customer/"+orgID, customerID)
}

func (b billingStore) InvoiceItem(ctx context.Context, orgID, month, meter string) (string, error) {
	return b.get(ctx, "item/"+orgID+"/"+month+"/"+meter)
}

func (b billingStore) PutInvoiceItem(ctx context.Context, orgID, month, meter, itemID string) error {
	return b.put(ctx, "item/"+orgID+"/"+month+"/"+meter, itemID)
}
