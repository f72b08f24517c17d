package webhook

import (
	"context"
	"encoding/json"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
)

// Status is a webhook's status.
type Status string

// Webhook statuses. An active webhook receives events. A paused one still queues the events
// it subscribes to but sends nothing until it is active again. A disabled one queues nothing;
// deliveries already made wait, and go out if it is made active again. The engine disables a
// webhook whose deliveries failed for the whole retry span (3 days).
const (
	StatusActive   Status = "active"
	StatusPaused   Status = "paused"
	StatusDisabled Status = "disabled"
)

// Endpoint is a stored webhook (the spec's Webhook resource) with its sealed secrets.
type Endpoint struct {
	ID         string        `json:"id"`             // whk_
	AppID      string        `json:"application_id"` // app_
	URL        string        `json:"url"`
	EventTypes []string      `json:"event_types"` // exact types, "prefix.*" or "*"
	Mode       platform.Mode `json:"mode"`
	Status     Status        `json:"status"`
	// Secrets are the signing secrets, sealed; the newest first. After a rotation the
	// previous secret stays (with ExpiresAt) for 24 hours and both sign.
	Secrets []SealedSecret `json:"secrets"`
	// DisabledReason says why the engine disabled the webhook; empty otherwise.
	DisabledReason string    `json:"disabled_reason,omitempty"`
	CreatedAt      time.Time `json:"created_at"`
	UpdatedAt      time.Time `json:"updated_at"`
}

// SealedSecret is a signing secret encrypted with platform.Sealer; the associated data is the
// webhook id, so a sealed secret cannot be moved to another webhook.
type SealedSecret struct {
	Sealed    []byte     `json:"sealed"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"` // set on the previous secret after a rotation
}

// Proto returns the API resource; secret is set only in the responses to creation and
// rotation, and left out when empty.
func (e *Endpoint) Proto(secret string) *svcv1.Webhook {
	w := &svcv1.Webhook{
		Id:            e.ID,
		ApplicationId: e.AppID,
		Url:           e.URL,
		EventTypes:    append([]string{}, e.EventTypes...),
		Status:        svcv1.WebhookStatus_WEBHOOK_STATUS_UNSPECIFIED,
		CreatedAt:     timestamppb.New(e.CreatedAt),
		UpdatedAt:     timestamppb.New(e.UpdatedAt),
	}
	switch e.Mode {
	case platform.ModeLive:
		w.Mode = svcv1.WebhookMode_WEBHOOK_MODE_LIVE
	case platform.ModeTest:
		w.Mode = svcv1.WebhookMode_WEBHOOK_MODE_TEST
	}
	switch e.Status {
	case StatusActive:
		w.Status = svcv1.WebhookStatus_WEBHOOK_STATUS_ACTIVE
	case StatusPaused:
		w.Status = svcv1.WebhookStatus_WEBHOOK_STATUS_PAUSED
	case StatusDisabled:
		w.Status = svcv1.WebhookStatus_WEBHOOK_STATUS_DISABLED
	}
	if secret != "" {
		w.Secret = &secret
	}
	return w
}

// DeliveryStatus is where a delivery stands.
type DeliveryStatus string

// Delivery statuses. pending: not attempted yet. failed: the last attempt failed and another
// is scheduled at NextAttemptAt. succeeded: a 2xx came back. dead: the retry span ended
// without success; nothing more is sent.
const (
	DeliveryPending   DeliveryStatus = "pending"
	DeliveryFailed    DeliveryStatus = "failed"
	DeliverySucceeded DeliveryStatus = "succeeded"
	DeliveryDead      DeliveryStatus = "dead"
)

// Final reports whether no more attempts will be made.
func (s DeliveryStatus) Final() bool { return s == DeliverySucceeded || s == DeliveryDead }

// Delivery is one batch of events for one webhook and the story of sending it. Every attempt
// sends the same body (same delivery id, same events) with a fresh signature timestamp.
type Delivery struct {
	ID        string         `json:"id"` // dlv_
	WebhookID string         `json:"webhook_id"`
	EventIDs  []string       `json:"event_ids"`
	Status    DeliveryStatus `json:"status"`
	Attempts  []Attempt      `json:"attempts"`
	// NextAttemptAt is when the next attempt is due; nil once the delivery is final.
	NextAttemptAt *time.Time `json:"next_attempt_at"`
	// LastResponseStatus is the HTTP status of the last attempt, 0 if none came back.
	LastResponseStatus int `json:"last_response_status,omitempty"`
	// LastError says why the last attempt failed; empty after a success.
	LastError string    `json:"last_error,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Events are the envelopes as sent (the wire JSON of svcv1.Event), in EventIDs order.
	Events []json.RawMessage `json:"events"`
}

// Attempt is one HTTP request of a delivery.
type Attempt struct {
	At time.Time `json:"at"`
	// ResponseStatus is the HTTP status, 0 when no response came back.
	ResponseStatus int    `json:"response_status,omitempty"`
	Error          string `json:"error,omitempty"`
	DurationMillis int64  `json:"duration_ms"`
}

// QueuedEvent is an event waiting in a webhook's queue to be put in a delivery.
type QueuedEvent struct {
	WebhookID string          `json:"webhook_id"`
	EventID   string          `json:"event_id"`
	Event     json.RawMessage `json:"event"` // wire JSON of svcv1.Event
	QueuedAt  time.Time       `json:"queued_at"`
}

// Store keeps webhooks, their queues of events and their deliveries. Every method must be
// safe for concurrent use; writes must be durable when they return. Missing records are
// platform.ErrNotFound. Records passed in and returned are not retained or shared by the
// store (it copies them). webhooktest.RunStoreTests checks an implementation.
//
// The engine assumes it is the only writer: change webhooks through the Engine, and run one
// Engine per Store.
type Store interface {
	// CreateWebhook stores a new webhook.
	CreateWebhook(ctx context.Context, w *Endpoint) error
	// Webhook returns a webhook.
	Webhook(ctx context.Context, id string) (*Endpoint, error)
	// UpdateWebhook applies fn to a stored webhook atomically and returns the result; an
	// error from fn leaves the webhook unchanged and is returned.
	UpdateWebhook(ctx context.Context, id string, fn func(*Endpoint) error) (*Endpoint, error)
	// DeleteWebhook removes a webhook with its queue and its deliveries.
	DeleteWebhook(ctx context.Context, id string) error
	// Webhooks lists an application's webhooks in creation order.
	Webhooks(ctx context.Context, appID string) ([]*Endpoint, error)
	// AllWebhooks lists every webhook (the engine loads them once when it starts).
	AllWebhooks(ctx context.Context) ([]*Endpoint, error)

	// Enqueue adds events to webhooks' queues, all or none. Queueing an event a webhook
	// already has queued (same webhook and event id) replaces it; events for a webhook that
	// does not exist (deleted meanwhile) are dropped.
	Enqueue(ctx context.Context, events []QueuedEvent) error
	// Queued returns up to limit events of a webhook's queue, in event id order.
	Queued(ctx context.Context, webhookID string, limit int) ([]QueuedEvent, error)

	// CreateDelivery stores a new delivery and removes its events (d.WebhookID, d.EventIDs)
	// from the webhook's queue, atomically; platform.ErrNotFound if the webhook does not
	// exist. Delivery.Events must come back byte for byte (the engine escapes them the way
	// encoding/json does, so a JSON store keeps them as they are).
	CreateDelivery(ctx context.Context, d *Delivery) error
	// UpdateDelivery replaces a stored delivery. A store that meters usage counts a live
	// delivery that becomes succeeded in the same transaction (the server's bbolt store
	// does), which makes the count exact across crashes.
	UpdateDelivery(ctx context.Context, d *Delivery) error
	// Delivery returns a delivery.
	Delivery(ctx context.Context, id string) (*Delivery, error)
	// Deliveries lists a webhook's deliveries newest first (by id), starting after the
	// delivery id before (all when before is ""), at most limit.
	Deliveries(ctx context.Context, webhookID, before string, limit int) ([]*Delivery, error)
	// ActiveDeliveries returns every delivery whose status is pending or failed.
	ActiveDeliveries(ctx context.Context) ([]*Delivery, error)
	// PruneDeliveries removes at most limit final deliveries (succeeded or dead) created
	// before createdBefore, oldest first, and returns how many it removed. Pending and failed
	// deliveries are kept whatever their age.
	PruneDeliveries(ctx context.Context, createdBefore time.Time, limit int) (int, error)
}
