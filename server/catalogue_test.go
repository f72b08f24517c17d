package server

import (
	"testing"

	"svc.dev/svc"
	"svc.dev/svc/platform/event"
)

// Every event type the server emits is in the published catalogue (webhooks can subscribe
// only to catalogued types).
func TestEmittedTypesAreCatalogued(t *testing.T) {
	for _, typ := range []string{evPlanCreated, evPlanAuthorized, evPlanRejected, evPlanCancelled, evPlanStale, evPlanExpired,
		evExecutionStarted, evExecutionCancelled, evSourceConnected, evSourcePolicy, evJobSucceeded, evJobFailed, evCeilingReached,
		svc.EventReceiptCreated, svc.EventSourceReauthRequired, evWebhookDisabled, "svc.execution.completed", "svc.execution.partially_completed",
		"svc.execution.failed", "svc.execution.cancelled"} {
		if _, ok := event.Lookup(typ); !ok {
			t.Errorf("%s is not in the event catalogue", typ)
		}
	}
}
