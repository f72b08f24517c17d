// Package event is the catalogue of svc's event types and the one constructor of the CloudEvents
// 1.0 envelopes (svcv1.Event) that GET /v1/events lists and webhooks deliver.
//
// Every type is a dotted name "svc.<family>.<what happened>" (svc.execution.completed). Each
// catalogue entry says which resource collection is the event's source and which id prefix its
// subject carries, so that every emitter fills the envelope the same way. Subscriptions
// (webhook event_types, the types filter of GET /v1/events) are exact types, a family wildcard
// ending in ".*" (svc.plan.*, svc.vault.*), or "*"; see Match and ValidPattern.
//
// docs/webhooks.md lists the catalogue for developers; a test keeps the two in step.
//
// # Stability
//
// Internal to svc: Go refuses to import it from outside the module, and its API changes
// whenever svc needs it to; docs/stability.md says what is stable.
package event
