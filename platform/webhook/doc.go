// Package webhook is svc's webhook delivery engine: it keeps an application's webhooks
// (endpoints, their event subscriptions and signing secrets), queues every published event for
// the webhooks that subscribe to it, and delivers the events as the interface spec's "Webhook
// delivery" rules say: a POST of a JSON array of at most 20 CloudEvents envelopes, signed with
// HMAC-SHA256 in the Svc-Signature header, acknowledged by any 2xx within 10 seconds, retried
// after 1m, 5m, 30m, 2h, 6h and then every 12h until 3 days after the first attempt, then dead.
//
// Storage reaches the engine through the Store interface; package webhooktest has an
// in-memory Store and a conformance suite for other implementations. Secrets reach the store
// sealed (platform.Sealer, bound to the webhook id): a store never sees a secret in the clear.
//
// Delivery is at least once: an event is stored in the webhook's queue before Publish returns,
// moved into a delivery atomically, and a delivery is marked succeeded only after the receiver
// acknowledged it; a crash in between sends that delivery again, with the same delivery id and
// the same event ids (receivers deduplicate on the event id). One Engine must own a Store.
//
// A slow or failing receiver holds only its own webhook's delivery slots (Options.PerWebhook);
// the API path (Publish) never waits for a receiver. Receivers are protected against
// server-side request forgery: URLs are checked when registered and the address actually
// connected to is checked again by the dialer (see Guard), which defeats DNS rebinding.
//
// Tests drive time through Options.Now and Engine.Tick; the hosted binary calls Engine.Run,
// which sleeps until the next delivery is due or a new event arrives.
//
// # Stability
//
// Internal to svc: Go refuses to import it from outside the module, and its API changes
// whenever svc needs it to; docs/stability.md says what is stable.
package webhook
