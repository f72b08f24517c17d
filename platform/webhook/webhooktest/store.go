// Package webhooktest supports tests of code that uses package webhook: an in-memory Store,
// and RunStoreTests, the conformance suite every webhook.Store implementation must pass.
package webhooktest

import (
	"context"
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
)

// Store is an in-memory webhook.Store. The zero value is not usable; call NewStore. It copies
// records in and out, as a real store does, so tests catch code that relies on aliasing.
type Store struct {
	mu         sync.Mutex
	webhooks   map[string]*webhook.Endpoint
	queues     map[string]*queue // by webhook id
	deliveries map[string]*webhook.Delivery

	// Fail, if set, is called at the start of every method with its name; a non-nil result
	// is returned as that method's error (fault injection).
	Fail func(method string) error
}

var _ webhook.Store = (*Store)(nil)

// queue is a webhook's queued events: ids in order (including some already taken, skipped
// and trimmed lazily) and the events still queued.
type queue struct {
	ids    []string
	events map[string]webhook.QueuedEvent
}

func (q *queue) add(e webhook.QueuedEvent) {
	if _, ok := q.events[e.EventID]; !ok {
		i := len(q.ids)
		if i > 0 && q.ids[i-1] >= e.EventID {
			i, _ = slices.BinarySearch(q.ids, e.EventID)
		}
		if i == len(q.ids) || q.ids[i] != e.EventID {
			q.ids = slices.Insert(q.ids, i, e.EventID)
		}
	}
	q.events[e.EventID] = e
}

func (q *queue) first(limit int) []webhook.QueuedEvent {
	for len(q.ids) > 0 {
		if _, ok := q.events[q.ids[0]]; ok {
			break
		}
		q.ids = q.ids[1:]
	}
	var out []webhook.QueuedEvent
	for _, id := range q.ids {
		if len(out) == limit {
			break
		}
		if e, ok := q.events[id]; ok {
			e.Event = slices.Clone(e.Event)
			out = append(out, e)
		}
	}
	return out
}

// NewStore returns an empty store.
func NewStore() *Store {
	return &Store{
		webhooks:   map[string]*webhook.Endpoint{},
		queues:     map[string]*queue{},
		deliveries: map[string]*webhook.Delivery{},
	}
}

func (s *Store) fail(method string) error {
	if s.Fail != nil {
		return s.Fail(method)
	}
	return nil
}

func cloneTime(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	c := *t
	return &c
}

func cloneEndpoint(w *webhook.Endpoint) *webhook.Endpoint {
	c := *w
	c.EventTypes = slices.Clone(w.EventTypes)
	c.Secrets = make([]webhook.SealedSecret, len(w.Secrets))
	for i, sec := range w.Secrets {
		c.Secrets[i] = webhook.SealedSecret{Sealed: slices.Clone(sec.Sealed), CreatedAt: sec.CreatedAt, ExpiresAt: cloneTime(sec.ExpiresAt)}
	}
	return &c
}

func cloneDelivery(d *webhook.Delivery) *webhook.Delivery {
	c := *d
	c.EventIDs = slices.Clone(d.EventIDs)
	c.Attempts = slices.Clone(d.Attempts)
	if c.Attempts == nil {
		c.Attempts = []webhook.Attempt{}
	}
	c.NextAttemptAt = cloneTime(d.NextAttemptAt)
	c.Events = make([]json.RawMessage, len(d.Events))
	for i, ev := range d.Events {
		c.Events[i] = slices.Clone(ev)
	}
	return &c
}

// CreateWebhook implements webhook.Store.
func (s *Store) CreateWebhook(ctx context.Context, w *webhook.Endpoint) error {
	if err := s.fail("CreateWebhook"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhooks[w.ID] = cloneEndpoint(w)
	return nil
}

// Webhook implements webhook.Store.
func (s *Store) Webhook(ctx context.Context, id string) (*webhook.Endpoint, error) {
	if err := s.fail("Webhook"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.webhooks[id]
	if !ok {
		return nil, platform.ErrNotFound
	}
	return cloneEndpoint(w), nil
}

// UpdateWebhook implements webhook.Store.
func (s *Store) UpdateWebhook(ctx context.Context, id string, fn func(*webhook.Endpoint) error) (*webhook.Endpoint, error) {
	if err := s.fail("UpdateWebhook"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w, ok := s.webhooks[id]
	if !ok {
		return nil, platform.ErrNotFound
	}
	c := cloneEndpoint(w)
	if err := fn(c); err != nil {
		return nil, err
	}
	s.webhooks[id] = cloneEndpoint(c)
	return c, nil
}

// DeleteWebhook implements webhook.Store.
func (s *Store) DeleteWebhook(ctx context.Context, id string) error {
	if err := s.fail("DeleteWebhook"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.webhooks[id]; !ok {
		return platform.ErrNotFound
	}
	delete(s.webhooks, id)
	delete(s.queues, id)
	for k, d := range s.deliveries {
		if d.WebhookID == id {
			delete(s.deliveries, k)
		}
	}
	return nil
}

func (s *Store) list(keep func(*webhook.Endpoint) bool) []*webhook.Endpoint {
	var out []*webhook.Endpoint
	for _, w := range s.webhooks {
		if keep(w) {
			out = append(out, cloneEndpoint(w))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Webhooks implements webhook.Store.
func (s *Store) Webhooks(ctx context.Context, appID string) ([]*webhook.Endpoint, error) {
	if err := s.fail("Webhooks"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list(func(w *webhook.Endpoint) bool { return w.AppID == appID }), nil
}

// AllWebhooks implements webhook.Store.
func (s *Store) AllWebhooks(ctx context.Context) ([]*webhook.Endpoint, error) {
	if err := s.fail("AllWebhooks"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.list(func(*webhook.Endpoint) bool { return true }), nil
}

// Enqueue implements webhook.Store.
func (s *Store) Enqueue(ctx context.Context, events []webhook.QueuedEvent) error {
	if err := s.fail("Enqueue"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range events {
		if _, ok := s.webhooks[q.WebhookID]; !ok {
			continue
		}
		qu := s.queues[q.WebhookID]
		if qu == nil {
			qu = &queue{events: map[string]webhook.QueuedEvent{}}
			s.queues[q.WebhookID] = qu
		}
		q.Event = slices.Clone(q.Event)
		qu.add(q)
	}
	return nil
}

// Queued implements webhook.Store.
func (s *Store) Queued(ctx context.Context, webhookID string, limit int) ([]webhook.QueuedEvent, error) {
	if err := s.fail("Queued"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	qu := s.queues[webhookID]
	if qu == nil {
		return nil, nil
	}
	return qu.first(limit), nil
}

// QueueLen returns how many events wait in a webhook's queue.
func (s *Store) QueueLen(webhookID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if qu := s.queues[webhookID]; qu != nil {
		return len(qu.events)
	}
	return 0
}

// CreateDelivery implements webhook.Store.
func (s *Store) CreateDelivery(ctx context.Context, d *webhook.Delivery) error {
	if err := s.fail("CreateDelivery"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.webhooks[d.WebhookID]; !ok {
		return platform.ErrNotFound
	}
	s.deliveries[d.ID] = cloneDelivery(d)
	if qu := s.queues[d.WebhookID]; qu != nil {
		for _, id := range d.EventIDs {
			delete(qu.events, id)
		}
	}
	return nil
}

// UpdateDelivery implements webhook.Store.
func (s *Store) UpdateDelivery(ctx context.Context, d *webhook.Delivery) error {
	if err := s.fail("UpdateDelivery"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.deliveries[d.ID]; !ok {
		return platform.ErrNotFound
	}
	s.deliveries[d.ID] = cloneDelivery(d)
	return nil
}

// Delivery implements webhook.Store.
func (s *Store) Delivery(ctx context.Context, id string) (*webhook.Delivery, error) {
	if err := s.fail("Delivery"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.deliveries[id]
	if !ok {
		return nil, platform.ErrNotFound
	}
	return cloneDelivery(d), nil
}

// Deliveries implements webhook.Store.
func (s *Store) Deliveries(ctx context.Context, webhookID, before string, limit int) ([]*webhook.Delivery, error) {
	if err := s.fail("Deliveries"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*webhook.Delivery
	for _, d := range s.deliveries {
		if d.WebhookID == webhookID && (before == "" || d.ID < before) {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	if len(out) > limit {
		out = out[:limit]
	}
	for i, d := range out {
		out[i] = cloneDelivery(d)
	}
	return out, nil
}

// ActiveDeliveries implements webhook.Store.
func (s *Store) ActiveDeliveries(ctx context.Context) ([]*webhook.Delivery, error) {
	if err := s.fail("ActiveDeliveries"); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*webhook.Delivery
	for _, d := range s.deliveries {
		if !d.Status.Final() {
			out = append(out, cloneDelivery(d))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// PruneDeliveries implements webhook.Store.
func (s *Store) PruneDeliveries(ctx context.Context, createdBefore time.Time, limit int) (int, error) {
	if err := s.fail("PruneDeliveries"); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var old []*webhook.Delivery
	for _, d := range s.deliveries {
		if d.Status.Final() && d.CreatedAt.Before(createdBefore) {
			old = append(old, d)
		}
	}
	sort.Slice(old, func(i, j int) bool { return old[i].ID < old[j].ID })
	if len(old) > limit {
		old = old[:limit]
	}
	for _, d := range old {
		delete(s.deliveries, d.ID)
	}
	return len(old), nil
}

// Dump returns the JSON of everything stored, as a store writing JSON records would keep it
// (tests check that no secret appears in it).
func (s *Store) Dump() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var b strings.Builder
	for _, w := range s.webhooks {
		j, _ := json.Marshal(w)
		b.Write(j)
		b.WriteByte('\n')
	}
	for _, d := range s.deliveries {
		j, _ := json.Marshal(d)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}
