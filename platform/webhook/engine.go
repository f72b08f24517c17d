package webhook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/id"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/event"
	"svc.dev/svc/wire"
)

// Limits of the engine (the spec's, and the ones it leaves open).
const (
	// MaxBatch is the most events one delivery carries (spec: 20 per request).
	MaxBatch = 20
	// MaxBatchBytes bounds a delivery's body; a batch is cut short rather than exceed it
	// (a single larger event is still sent alone).
	MaxBatchBytes = 1 << 20
	// AckTimeout is how long a receiver has to answer with a 2xx (spec: 10 seconds).
	AckTimeout = 10 * time.Second
	// SecretOverlap is how long the previous secret keeps signing after a rotation.
	SecretOverlap = 24 * time.Hour
	// MaxWebhooksPerApp bounds an application's webhooks.
	MaxWebhooksPerApp = 50
	// MaxEventTypes bounds a webhook's event_types.
	MaxEventTypes = 100
)

// Options configure an Engine. Zero fields take defaults; Sealer is required.
type Options struct {
	// Sealer seals signing secrets before they reach the Store.
	Sealer *platform.Sealer
	// Dev allows receivers on loopback (svc serve --dev). Private, link-local, metadata and
	// other internal addresses stay refused.
	Dev bool
	// Now is the clock; default time.Now. Tests pass a fake and drive the engine with Tick.
	Now func() time.Time
	// Resolver resolves URL hosts at registration; default net.DefaultResolver. Connections
	// are always checked on the address actually dialled, whatever this resolves.
	Resolver Resolver
	// Timeout is how long a receiver has to answer; default AckTimeout.
	Timeout time.Duration
	// PerWebhook bounds the requests in flight to one webhook; default 4. A slow receiver
	// holds at most this many of MaxInFlight.
	PerWebhook int
	// MaxInFlight bounds the requests in flight in total; default 256.
	MaxInFlight int
	// KeepFailing turns off disabling a webhook whose deliveries failed for the whole retry
	// span.
	KeepFailing bool
	// OnFinal, if set, is called once a delivery has succeeded or died and that is stored
	// (usage metering counts live deliveries here). It runs on a delivery goroutine: keep it
	// short.
	OnFinal func(ep *Endpoint, d *Delivery)
	// OnDisabled, if set, is called after the engine disabled a webhook whose deliveries
	// kept failing (the server emits svc.webhook.disabled).
	OnDisabled func(ep *Endpoint)
	// DeliveryRetention is how long succeeded and dead deliveries stay listed (GET
	// /v1/webhooks/{id}/deliveries) before they are pruned; default DefaultDeliveryRetention.
	DeliveryRetention time.Duration
	// Logger gets delivery failures of the engine itself (store errors); default discards.
	// Secrets and payloads are never logged.
	Logger *slog.Logger
	// Leases, when set, hand each webhook's deliveries to one engine among replicas (see
	// Leases); nil: this engine delivers for every webhook.
	Leases Leases
	Poll   time.Duration // with Leases, how often leases are renewed and taken (holdLeases)
}

// Engine keeps webhooks and delivers events to them. Its methods are safe for concurrent use.
type Engine struct {
	store    Store
	opts     Options
	guard    *Guard
	client   *http.Client
	wake     chan struct{}
	attempts atomic.Int64

	mu       sync.Mutex
	lanes    map[string]*lane // by webhook id
	inflight int
	running  bool
}

// New returns an engine over store and loads what it has to deliver: every webhook's queue
// and every pending or failed delivery. Nothing is sent until Run or Tick is called.
func New(ctx context.Context, store Store, opts Options) (*Engine, error) {
	if opts.Sealer == nil {
		return nil, errors.New("webhook engine: a Sealer is required")
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Timeout <= 0 {
		opts.Timeout = AckTimeout
	}
	if opts.PerWebhook <= 0 {
		opts.PerWebhook = 4
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = 256
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Engine{
		store: store,
		opts:  opts,
		guard: &Guard{AllowLoopback: opts.Dev, Resolver: opts.Resolver},
		wake:  make(chan struct{}, 1),
		lanes: map[string]*lane{},
	}
	e.client = newClient(e.guard, opts)
	if err := e.load(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

// newClient is the only way deliveries reach the network: no proxy (the guard must see the
// receiver's own address), the guard on every dialled address, no redirects.
func newClient(g *Guard, opts Options) *http.Client {
	dialer := &net.Dialer{Timeout: opts.Timeout, KeepAlive: 30 * time.Second, Control: g.Control}
	tr := &http.Transport{
		Proxy:                 nil,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          opts.MaxInFlight,
		MaxIdleConnsPerHost:   opts.PerWebhook,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   opts.Timeout,
		ResponseHeaderTimeout: opts.Timeout,
	}
	return &http.Client{
		Transport:     tr,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

func (e *Engine) load(ctx context.Context) error {
	eps, err := e.store.AllWebhooks(ctx)
	if err != nil {
		return fmt.Errorf("load webhooks: %w", err)
	}
	for _, ep := range eps {
		// Whether the queue is empty is found out by the first batch job.
		e.lanes[ep.ID] = &lane{id: ep.ID, status: ep.Status, queued: true, owned: e.opts.Leases == nil}
	}
	ds, err := e.store.ActiveDeliveries(ctx)
	if err != nil {
		return fmt.Errorf("load deliveries: %w", err)
	}
	for _, d := range ds {
		l := e.lanes[d.WebhookID]
		if l == nil {
			continue
		}
		at := d.CreatedAt
		if d.NextAttemptAt != nil {
			at = *d.NextAttemptAt
		}
		l.push(at, d.ID)
	}
	return nil
}

func (e *Engine) now() time.Time { return e.opts.Now().UTC() }

// signal wakes Run without blocking.
func (e *Engine) signal() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// Params are the fields of a new webhook.
type Params struct {
	URL        string
	EventTypes []string
	Mode       platform.Mode
}

// Update changes a webhook; nil fields stay as they are.
type Update struct {
	URL        *string
	EventTypes []string // nil: unchanged
	Status     *Status
}

func validMode(m platform.Mode) error {
	if m != platform.ModeLive && m != platform.ModeTest {
		return &FieldError{"mode", fmt.Errorf("must be live or test, not %q", m)}
	}
	return nil
}

func normalizeTypes(types []string) ([]string, error) {
	if len(types) == 0 {
		return nil, &FieldError{"event_types", errors.New("at least one event type is required")}
	}
	if len(types) > MaxEventTypes {
		return nil, &FieldError{"event_types", fmt.Errorf("at most %d", MaxEventTypes)}
	}
	out := make([]string, 0, len(types))
	for _, t := range types {
		if err := event.ValidPattern(t); err != nil {
			return nil, &FieldError{"event_types", err}
		}
		if !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out, nil
}

func (e *Engine) checkURL(ctx context.Context, u string) error {
	if err := e.guard.CheckURL(ctx, u); err != nil {
		return &FieldError{"url", err}
	}
	return nil
}

func secretAAD(webhookID string) []byte { return []byte("svc/webhook-secret/" + webhookID) }

// newSecret makes a signing secret and its sealed form.
func (e *Engine) newSecret(webhookID string, now time.Time) (string, SealedSecret, error) {
	secret, err := platform.NewToken(SecretPrefix, 32)
	if err != nil {
		return "", SealedSecret{}, err
	}
	sealed, err := e.opts.Sealer.Seal([]byte(secret), secretAAD(webhookID))
	if err != nil {
		return "", SealedSecret{}, err
	}
	return secret, SealedSecret{Sealed: sealed, CreatedAt: now}, nil
}

// Create registers a webhook for an application and returns it with its signing secret, the
// only time the secret is shown besides RotateSecret. The URL is checked against the SSRF
// rules (resolving its host); errors are *FieldError (ErrInvalid) or ErrTooManyWebhooks.
func (e *Engine) Create(ctx context.Context, appID string, p Params) (*Endpoint, string, error) {
	if !id.Valid("app", appID) {
		return nil, "", fmt.Errorf("webhook: bad application id %q", appID)
	}
	if err := validMode(p.Mode); err != nil {
		return nil, "", err
	}
	types, err := normalizeTypes(p.EventTypes)
	if err != nil {
		return nil, "", err
	}
	if err := e.checkURL(ctx, p.URL); err != nil {
		return nil, "", err
	}
	existing, err := e.store.Webhooks(ctx, appID)
	if err != nil {
		return nil, "", fmt.Errorf("list webhooks: %w", err)
	}
	if len(existing) >= MaxWebhooksPerApp {
		return nil, "", ErrTooManyWebhooks
	}
	now := e.now().Truncate(time.Millisecond)
	ep := &Endpoint{ID: id.NewAt("whk", now), AppID: appID, URL: p.URL, EventTypes: types, Mode: p.Mode,
		Status: StatusActive, CreatedAt: now, UpdatedAt: now}
	secret, sealed, err := e.newSecret(ep.ID, now)
	if err != nil {
		return nil, "", fmt.Errorf("webhook secret: %w", err)
	}
	ep.Secrets = []SealedSecret{sealed}
	if err := e.store.CreateWebhook(ctx, ep); err != nil {
		return nil, "", fmt.Errorf("create webhook: %w", err)
	}
	e.mu.Lock()
	e.lanes[ep.ID] = &lane{id: ep.ID, status: ep.Status, owned: e.opts.Leases == nil}
	e.mu.Unlock()
	return ep, secret, nil
}

// Get returns a webhook (platform.ErrNotFound if there is none). The caller checks that it
// belongs to the calling application.
func (e *Engine) Get(ctx context.Context, webhookID string) (*Endpoint, error) {
	return e.store.Webhook(ctx, webhookID)
}

// List returns an application's webhooks in creation order (at most MaxWebhooksPerApp).
func (e *Engine) List(ctx context.Context, appID string) ([]*Endpoint, error) {
	return e.store.Webhooks(ctx, appID)
}

// Update changes a webhook's URL (checked again), event types or status. Making a webhook
// active again clears DisabledReason and resumes its waiting deliveries.
func (e *Engine) Update(ctx context.Context, webhookID string, u Update) (*Endpoint, error) {
	var types []string
	if u.EventTypes != nil {
		var err error
		if types, err = normalizeTypes(u.EventTypes); err != nil {
			return nil, err
		}
	}
	if u.Status != nil {
		switch *u.Status {
		case StatusActive, StatusPaused, StatusDisabled:
		default:
			return nil, &FieldError{"status", fmt.Errorf("must be active, paused or disabled, not %q", *u.Status)}
		}
	}
	if u.URL != nil {
		if err := e.checkURL(ctx, *u.URL); err != nil {
			return nil, err
		}
	}
	now := e.now().Truncate(time.Millisecond)
	ep, err := e.store.UpdateWebhook(ctx, webhookID, func(w *Endpoint) error {
		if u.URL != nil {
			w.URL = *u.URL
		}
		if types != nil {
			w.EventTypes = types
		}
		if u.Status != nil && *u.Status != w.Status {
			w.Status = *u.Status
			w.DisabledReason = ""
		}
		w.UpdatedAt = now
		return nil
	})
	if err != nil {
		return nil, err
	}
	e.setStatus(ep.ID, ep.Status)
	return ep, nil
}

func (e *Engine) setStatus(webhookID string, s Status) {
	e.mu.Lock()
	if l := e.lanes[webhookID]; l != nil {
		l.status = s
	}
	e.mu.Unlock()
	e.signal()
}

// Delete removes a webhook with its queue and deliveries. Requests in flight finish but are
// not recorded.
func (e *Engine) Delete(ctx context.Context, webhookID string) error {
	if err := e.store.DeleteWebhook(ctx, webhookID); err != nil {
		return err
	}
	e.mu.Lock()
	delete(e.lanes, webhookID)
	e.mu.Unlock()
	return nil
}

// RotateSecret gives a webhook a new signing secret and returns it (the only time it is
// shown). The previous secret keeps signing for SecretOverlap, so deliveries carry two v1
// values meanwhile; a secret older than that (from an earlier rotation) stops at once.
func (e *Engine) RotateSecret(ctx context.Context, webhookID string) (*Endpoint, string, error) {
	now := e.now().Truncate(time.Millisecond)
	secret, sealed, err := e.newSecret(webhookID, now)
	if err != nil {
		return nil, "", fmt.Errorf("webhook secret: %w", err)
	}
	ep, err := e.store.UpdateWebhook(ctx, webhookID, func(w *Endpoint) error {
		next := []SealedSecret{sealed}
		if len(w.Secrets) > 0 {
			prev := w.Secrets[0]
			exp := now.Add(SecretOverlap)
			prev.ExpiresAt = &exp
			next = append(next, prev)
		}
		w.Secrets = next
		w.UpdatedAt = now
		return nil
	})
	if err != nil {
		return nil, "", err
	}
	return ep, secret, nil
}

// signingSecrets opens the secrets that sign at now, newest first.
func (e *Engine) signingSecrets(ep *Endpoint, now time.Time) ([]string, error) {
	out := make([]string, 0, len(ep.Secrets))
	for _, s := range ep.Secrets {
		if s.ExpiresAt != nil && !now.Before(*s.ExpiresAt) {
			continue
		}
		b, err := e.opts.Sealer.Open(s.Sealed, secretAAD(ep.ID))
		if err != nil {
			return nil, fmt.Errorf("webhook %s secret: %w", ep.ID, err)
		}
		out = append(out, string(b))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("webhook %s has no signing secret", ep.ID)
	}
	return out, nil
}

// envelope is the JSON of an event as delivered: the wire JSON with HTML characters escaped
// the way encoding/json escapes them, so that a store that keeps Delivery.Events as JSON
// gives back exactly these bytes and every attempt sends the same body.
func envelope(ev *svcv1.Event) (json.RawMessage, error) {
	b, err := wire.Marshal(ev)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	out.Grow(len(b) + 16)
	json.HTMLEscape(&out, b)
	return out.Bytes(), nil
}

func checkEnvelope(mode platform.Mode, ev *svcv1.Event) error {
	if err := validMode(mode); err != nil {
		return err
	}
	switch {
	case ev == nil:
		return fmt.Errorf("%w: nil", ErrInvalidEvent)
	case ev.GetSpecversion() != "1.0":
		return fmt.Errorf("%w: specversion %q", ErrInvalidEvent, ev.GetSpecversion())
	case !id.Valid("evt", ev.GetId()):
		return fmt.Errorf("%w: id %q", ErrInvalidEvent, ev.GetId())
	case ev.GetType() == "":
		return fmt.Errorf("%w: no type", ErrInvalidEvent)
	case ev.GetSvcsimulated() != (mode == platform.ModeTest):
		return fmt.Errorf("%w: %s event with svcsimulated=%v", ErrModeMismatch, mode, ev.GetSvcsimulated())
	}
	return nil
}

// Publish queues an event for every webhook of the given applications that is in mode,
// active or paused, and subscribed to the event's type; it returns how many webhooks it was
// queued for. The queue is durable when Publish returns; sending happens later (Run), so
// Publish never waits for a receiver. Test-mode events must carry svcsimulated: true and go
// only to test webhooks; live events must not, and go only to live webhooks
// (ErrModeMismatch otherwise). A caller that stores the event elsewhere in the same
// transaction as its queue entries uses Queue, its own store, and Wake instead.
func (e *Engine) Publish(ctx context.Context, mode platform.Mode, ev *svcv1.Event, appIDs []string) (int, error) {
	q, err := e.Queue(ctx, mode, ev, appIDs)
	if err != nil || len(q) == 0 {
		return 0, err
	}
	if err := e.store.Enqueue(ctx, q); err != nil {
		return 0, fmt.Errorf("queue event: %w", err)
	}
	e.Wake(q)
	return len(q), nil
}

// Queue returns the queue entries that publishing ev would add (see Publish), without storing
// them: the caller enqueues them (Store.Enqueue's semantics) and then calls Wake.
func (e *Engine) Queue(ctx context.Context, mode platform.Mode, ev *svcv1.Event, appIDs []string) ([]QueuedEvent, error) {
	if err := checkEnvelope(mode, ev); err != nil {
		return nil, err
	}
	var q []QueuedEvent
	var payload json.RawMessage
	now := e.now()
	seen := make(map[string]bool, len(appIDs))
	for _, app := range appIDs {
		if seen[app] {
			continue
		}
		seen[app] = true
		eps, err := e.store.Webhooks(ctx, app)
		if err != nil {
			return nil, fmt.Errorf("webhooks of %s: %w", app, err)
		}
		for _, ep := range eps {
			if ep.Mode != mode || ep.Status == StatusDisabled || !event.MatchAny(ep.EventTypes, ev.GetType()) {
				continue
			}
			if payload == nil {
				if payload, err = envelope(ev); err != nil {
					return nil, fmt.Errorf("encode event: %w", err)
				}
			}
			q = append(q, QueuedEvent{WebhookID: ep.ID, EventID: ev.GetId(), Event: payload, QueuedAt: now})
		}
	}
	return q, nil
}

// Wake tells the delivery loop that q was stored in the webhooks' queues.
func (e *Engine) Wake(q []QueuedEvent) {
	if len(q) == 0 {
		return
	}
	e.mu.Lock()
	for _, qe := range q {
		if l := e.lanes[qe.WebhookID]; l != nil {
			l.queued = true
			l.gen++
		}
	}
	e.mu.Unlock()
	e.signal()
}

// SendTest sends a signed svc.webhook.test event to one webhook, whatever its event types
// (POST /v1/webhooks/{id}/test). It returns the new delivery at once, pending; its outcome
// shows in Deliveries. A paused or disabled webhook gets ErrNotActive.
func (e *Engine) SendTest(ctx context.Context, webhookID string) (*Delivery, error) {
	ep, err := e.store.Webhook(ctx, webhookID)
	if err != nil {
		return nil, err
	}
	if ep.Status != StatusActive {
		return nil, fmt.Errorf("%w: %s", ErrNotActive, ep.Status)
	}
	now := e.now()
	ev, err := event.New(event.WebhookTest, ep.ID, map[string]any{
		"webhook_id": ep.ID,
		"message":    "This is a test event from svc. Verify the Svc-Signature header and answer with a 2xx.",
	}, ep.Mode == platform.ModeTest, now)
	if err != nil {
		return nil, err
	}
	payload, err := envelope(ev)
	if err != nil {
		return nil, fmt.Errorf("encode event: %w", err)
	}
	d := newDelivery(ep.ID, []string{ev.GetId()}, []json.RawMessage{payload}, now)
	if err := e.store.CreateDelivery(ctx, d); err != nil {
		return nil, fmt.Errorf("create delivery: %w", err)
	}
	e.mu.Lock()
	if l := e.lanes[ep.ID]; l != nil {
		l.push(now, d.ID)
	}
	e.mu.Unlock()
	e.signal()
	return d, nil
}

func newDelivery(webhookID string, eventIDs []string, events []json.RawMessage, now time.Time) *Delivery {
	now = now.Truncate(time.Millisecond)
	next := now
	return &Delivery{ID: id.NewAt("dlv", now), WebhookID: webhookID, EventIDs: eventIDs, Status: DeliveryPending,
		Attempts: []Attempt{}, NextAttemptAt: &next, CreatedAt: now, UpdatedAt: now, Events: events}
}

// Deliveries lists a webhook's deliveries, newest first, after the delivery id before ("" for
// the first page), at most limit (1 to 200, default 50): pending, failed, succeeded and dead
// ones alike.
func (e *Engine) Deliveries(ctx context.Context, webhookID, before string, limit int) ([]*Delivery, error) {
	if _, err := e.store.Webhook(ctx, webhookID); err != nil {
		return nil, err
	}
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 200)
	return e.store.Deliveries(ctx, webhookID, before, limit)
}

// Delivery returns one delivery.
func (e *Engine) Delivery(ctx context.Context, deliveryID string) (*Delivery, error) {
	return e.store.Delivery(ctx, deliveryID)
}

// Reseal re-encrypts a webhook's sealed signing secrets under to, from from (a rotation of the
// master key the sealing key derives from). A secret that to opens already is left as it is,
// so a rotation interrupted and run again is harmless. It reports whether it changed any.
func Reseal(ep *Endpoint, from, to *platform.Sealer) (bool, error) {
	changed := false
	aad := secretAAD(ep.ID)
	for i, s := range ep.Secrets {
		if _, err := to.Open(s.Sealed, aad); err == nil {
			continue
		}
		plain, err := from.Open(s.Sealed, aad)
		if err != nil {
			return changed, fmt.Errorf("webhook %s: open its secret: %w", ep.ID, err)
		}
		sealed, err := to.Seal(plain, aad)
		if err != nil {
			return changed, fmt.Errorf("webhook %s: seal its secret: %w", ep.ID, err)
		}
		ep.Secrets[i].Sealed = sealed
		changed = true
	}
	return changed, nil
}
