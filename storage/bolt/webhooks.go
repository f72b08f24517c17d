package bolt

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	bbolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
)

// Buckets of the webhook engine's records.
const (
	bWebhooks         = "webhooks"
	bWebhookQueue     = "webhook_queue"      // webhook id / event id -> queued event
	bDeliveries       = "webhook_deliveries" // delivery id -> delivery
	bDeliveriesByHook = "webhook_deliveries_by_webhook"
	bActiveDeliveries = "webhook_deliveries_active"
)

// Webhooks is the webhook engine's storage on bbolt (it implements webhook.Store).
type Webhooks struct{ db *DB }

// Webhooks returns the webhook store of this database.
func (db *DB) Webhooks() *Webhooks { return &Webhooks{db: db} }

var _ webhook.Store = (*Webhooks)(nil)

func (w *Webhooks) CreateWebhook(ctx context.Context, e *webhook.Endpoint) error {
	return w.db.update(func(tx *bbolt.Tx) error { return putJSON(tx, bWebhooks, e.ID, e) })
}

func (w *Webhooks) Webhook(ctx context.Context, id string) (*webhook.Endpoint, error) {
	var e webhook.Endpoint
	if err := w.db.view(func(tx *bbolt.Tx) error { return getJSON(tx, bWebhooks, id, &e, platform.ErrNotFound) }); err != nil {
		return nil, err
	}
	return &e, nil
}

func (w *Webhooks) UpdateWebhook(ctx context.Context, id string, fn func(*webhook.Endpoint) error) (*webhook.Endpoint, error) {
	return updateJSON(w.db, ctx, bWebhooks, id, fn)
}

// deletePrefix removes every key of a bucket that starts with prefix.
func deletePrefix(tx *bbolt.Tx, name, prefix string) error {
	b, err := bucket(tx, name)
	if err != nil {
		return err
	}
	var doomed [][]byte
	c := b.Cursor()
	for k, _ := c.Seek([]byte(prefix)); k != nil && strings.HasPrefix(string(k), prefix); k, _ = c.Next() {
		doomed = append(doomed, slices.Clone(k))
	}
	for _, k := range doomed {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

func (w *Webhooks) DeleteWebhook(ctx context.Context, id string) error {
	return w.db.update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, bWebhooks)
		if err != nil {
			return err
		}
		if b.Get([]byte(id)) == nil {
			return platform.ErrNotFound
		}
		if err := b.Delete([]byte(id)); err != nil {
			return err
		}
		if err := deletePrefix(tx, bWebhookQueue, id+"/"); err != nil {
			return err
		}
		idx, err := bucket(tx, bDeliveriesByHook)
		if err != nil {
			return err
		}
		ds, _ := bucket(tx, bDeliveries)
		act, _ := bucket(tx, bActiveDeliveries)
		c := idx.Cursor()
		var doomed [][]byte
		for k, _ := c.Seek([]byte(id + "/")); k != nil && strings.HasPrefix(string(k), id+"/"); k, _ = c.Next() {
			doomed = append(doomed, slices.Clone(k))
		}
		for _, k := range doomed {
			dlv := strings.TrimPrefix(string(k), id+"/")
			ds.Delete([]byte(dlv))
			act.Delete([]byte(dlv))
			idx.Delete(k)
		}
		return nil
	})
}

func (w *Webhooks) scanWebhooks(keep func(*webhook.Endpoint) bool) ([]*webhook.Endpoint, error) {
	var out []*webhook.Endpoint
	err := w.db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bWebhooks))
		if b == nil {
			return nil
		}
		return b.ForEach(func(_, v []byte) error {
			var e webhook.Endpoint
			if err := json.Unmarshal(v, &e); err != nil {
				return err
			}
			if keep(&e) {
				out = append(out, &e)
			}
			return nil
		})
	})
	return out, err
}

func (w *Webhooks) Webhooks(ctx context.Context, appID string) ([]*webhook.Endpoint, error) {
	return w.scanWebhooks(func(e *webhook.Endpoint) bool { return e.AppID == appID })
}

func (w *Webhooks) AllWebhooks(ctx context.Context) ([]*webhook.Endpoint, error) {
	return w.scanWebhooks(func(*webhook.Endpoint) bool { return true })
}

func (w *Webhooks) Enqueue(ctx context.Context, events []webhook.QueuedEvent) error {
	return w.db.update(func(tx *bbolt.Tx) error { return enqueueTx(tx, events) })
}

func enqueueTx(tx *bbolt.Tx, events []webhook.QueuedEvent) error {
	hooks, err := bucket(tx, bWebhooks)
	if err != nil {
		return err
	}
	for _, ev := range events {
		if hooks.Get([]byte(ev.WebhookID)) == nil {
			continue // deleted meanwhile
		}
		if err := putJSON(tx, bWebhookQueue, ev.WebhookID+"/"+ev.EventID, ev); err != nil {
			return err
		}
	}
	return nil
}

// PruneDeliveries implements webhook.Store. Delivery ids are ULIDs, so the deliveries bucket
// is in creation order and the walk stops at the first one created at or after createdBefore.
func (w *Webhooks) PruneDeliveries(ctx context.Context, createdBefore time.Time, limit int) (int, error) {
	n := 0
	err := w.db.update(func(tx *bbolt.Tx) error {
		ds := tx.Bucket([]byte(bDeliveries))
		if ds == nil {
			return nil
		}
		idx, err := bucket(tx, bDeliveriesByHook)
		if err != nil {
			return err
		}
		var doomed []webhook.Delivery
		c := ds.Cursor()
		for k, v := c.First(); k != nil && len(doomed) < limit; k, v = c.Next() {
			var d webhook.Delivery
			if err := json.Unmarshal(v, &d); err != nil {
				return fmt.Errorf("delivery %s: %w", k, err)
			}
			if !d.CreatedAt.Before(createdBefore) {
				if t, err := id.Time(string(k)); err == nil && !t.Before(createdBefore) {
					break // every later id is newer
				}
				continue
			}
			if d.Status.Final() {
				doomed = append(doomed, d)
			}
		}
		for _, d := range doomed {
			if err := ds.Delete([]byte(d.ID)); err != nil {
				return err
			}
			if err := idx.Delete([]byte(d.WebhookID + "/" + d.ID)); err != nil {
				return err
			}
		}
		n = len(doomed)
		return nil
	})
	return n, err
}

// Apply writes extras on their own, in one transaction shared with concurrent calls.
func (db *DB) Apply(ctx context.Context, extras ...Extra) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return db.batch(func(tx *bbolt.Tx) error { return applyExtras(tx, extras) }) // retried as a whole: puts only
}

// EventsExtra writes events to a log and their webhook queue entries within the transaction of
// a change (PutWith, UpdateWith): the change, its events and their deliveries are stored
// together or not at all.
func EventsExtra[T proto.Message](log *Collection[T], items []Item[T], queue []webhook.QueuedEvent) (Extra, error) {
	enc := make([][]byte, len(items))
	for i, it := range items {
		if i > 0 && proto.Message(it.Value) == proto.Message(items[i-1].Value) {
			enc[i] = enc[i-1] // one event in several streams is encoded once
			continue
		}
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(it.Value)
		if err != nil {
			return Extra{}, fmt.Errorf("encode %s %s: %w", log.bucket, it.ID, err)
		}
		enc[i] = data
	}
	return Extra{func(tx *bbolt.Tx) error {
		b, err := bucket(tx, log.bucket)
		if err != nil {
			return err
		}
		for i, it := range items {
			if err := b.Put(resourceKey(it.Tenant, it.ID), enc[i]); err != nil {
				return err
			}
		}
		return enqueueTx(tx, queue)
	}}, nil
}

func (w *Webhooks) Queued(ctx context.Context, webhookID string, limit int) ([]webhook.QueuedEvent, error) {
	var out []webhook.QueuedEvent
	prefix := []byte(webhookID + "/")
	err := w.db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bWebhookQueue))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, v := c.Seek(prefix); k != nil && prefixed(k, prefix) && len(out) < limit; k, v = c.Next() {
			var ev webhook.QueuedEvent
			if err := json.Unmarshal(v, &ev); err != nil {
				return err
			}
			out = append(out, ev)
		}
		return nil
	})
	return out, err
}

func putDelivery(tx *bbolt.Tx, d *webhook.Delivery) error {
	if err := putJSON(tx, bDeliveries, d.ID, d); err != nil {
		return err
	}
	idx, err := bucket(tx, bDeliveriesByHook)
	if err != nil {
		return err
	}
	if err := idx.Put([]byte(d.WebhookID+"/"+d.ID), []byte{}); err != nil {
		return err
	}
	act, err := bucket(tx, bActiveDeliveries)
	if err != nil {
		return err
	}
	if d.Status.Final() {
		return act.Delete([]byte(d.ID))
	}
	return act.Put([]byte(d.ID), []byte{})
}

func (w *Webhooks) CreateDelivery(ctx context.Context, d *webhook.Delivery) error {
	return w.db.update(func(tx *bbolt.Tx) error {
		var e webhook.Endpoint
		if err := getJSON(tx, bWebhooks, d.WebhookID, &e, platform.ErrNotFound); err != nil {
			return err
		}
		q, err := bucket(tx, bWebhookQueue)
		if err != nil {
			return err
		}
		for _, id := range d.EventIDs {
			if err := q.Delete([]byte(d.WebhookID + "/" + id)); err != nil {
				return err
			}
		}
		return putDelivery(tx, d)
	})
}

// UpdateDelivery replaces a stored delivery. A delivery of a live webhook that becomes
// succeeded is metered (webhook_deliveries, for the webhook's application and its
// organization, in the month of d.UpdatedAt) in the same transaction, so each is counted
// exactly once whatever crashes.
func (w *Webhooks) UpdateDelivery(ctx context.Context, d *webhook.Delivery) error {
	return w.db.update(func(tx *bbolt.Tx) error {
		var old webhook.Delivery
		if err := getJSON(tx, bDeliveries, d.ID, &old, platform.ErrNotFound); err != nil {
			return err
		}
		if err := putDelivery(tx, d); err != nil {
			return err
		}
		if old.Status == webhook.DeliverySucceeded || d.Status != webhook.DeliverySucceeded {
			return nil
		}
		var ep webhook.Endpoint
		if err := getJSON(tx, bWebhooks, d.WebhookID, &ep, platform.ErrNotFound); err != nil {
			return err
		}
		if ep.Mode != platform.ModeLive {
			return nil
		}
		var app platform.Application
		if err := getJSON(tx, bApps, ep.AppID, &app, platform.ErrNotFound); errors.Is(err, platform.ErrNotFound) {
			return nil // nobody to bill; the delivery is still recorded
		} else if err != nil {
			return fmt.Errorf("meter delivery %s: %w", d.ID, err)
		}
		month := platform.Month(d.UpdatedAt)
		return addUsageTx(tx, []UsageDelta{
			{Scope: "org:" + app.OrgID, Month: month, Meter: platform.MeterWebhookDeliveries, Quantity: 1},
			{Scope: "app:" + app.ID, Month: month, Meter: platform.MeterWebhookDeliveries, Quantity: 1},
		})
	})
}

func (w *Webhooks) Delivery(ctx context.Context, id string) (*webhook.Delivery, error) {
	var d webhook.Delivery
	if err := w.db.view(func(tx *bbolt.Tx) error { return getJSON(tx, bDeliveries, id, &d, platform.ErrNotFound) }); err != nil {
		return nil, err
	}
	return &d, nil
}

func (w *Webhooks) Deliveries(ctx context.Context, webhookID, before string, limit int) ([]*webhook.Delivery, error) {
	var out []*webhook.Delivery
	prefix := webhookID + "/"
	err := w.db.view(func(tx *bbolt.Tx) error {
		idx := tx.Bucket([]byte(bDeliveriesByHook))
		if idx == nil {
			return nil
		}
		ds := tx.Bucket([]byte(bDeliveries))
		c := idx.Cursor()
		var k []byte
		if before == "" {
			if k, _ = c.Seek([]byte(webhookID + "0")); k == nil { // '0' follows '/'
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
		} else {
			if k, _ = c.Seek([]byte(prefix + before)); k == nil {
				k, _ = c.Last()
			} else {
				k, _ = c.Prev()
			}
		}
		for ; k != nil && strings.HasPrefix(string(k), prefix) && len(out) < limit; k, _ = c.Prev() {
			var d webhook.Delivery
			v := ds.Get([]byte(strings.TrimPrefix(string(k), prefix)))
			if v == nil {
				continue
			}
			if err := json.Unmarshal(v, &d); err != nil {
				return err
			}
			out = append(out, &d)
		}
		return nil
	})
	return out, err
}

func (w *Webhooks) ActiveDeliveries(ctx context.Context) ([]*webhook.Delivery, error) {
	var out []*webhook.Delivery
	err := w.db.view(func(tx *bbolt.Tx) error {
		act := tx.Bucket([]byte(bActiveDeliveries))
		if act == nil {
			return nil
		}
		ds := tx.Bucket([]byte(bDeliveries))
		return act.ForEach(func(k, _ []byte) error {
			var d webhook.Delivery
			v := ds.Get(k)
			if v == nil {
				return nil
			}
			if err := json.Unmarshal(v, &d); err != nil {
				return err
			}
			out = append(out, &d)
			return nil
		})
	})
	return out, err
}
