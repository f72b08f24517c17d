package server

import (
	"testing"

	"svc.dev/svc"
	"svc.dev/svc/platform/event"
)

// Every event type the server emits is in the published catalogue (webhooks can subscribe
// only to catalogued types).
func TestEmittedTypesAreCatalogued(t *testing.T) {
	for _, typ := range []string{event.PlanCreated, event.PlanAuthorized, event.PlanRejected, event.PlanCancelled, event.PlanStale, event.PlanExpired,
		event.ExecutionStarted, event.ExecutionCancelRequested, event.SourceConnected, event.SourcePolicyUpdated, event.JobSucceeded, event.JobFailed, event.UsageCeilingReached,
		svc.EventReceiptCreated, svc.EventSourceReauthRequired, event.WebhookDisabled, "svc.execution.completed", "svc.execution.partially_completed",
		"svc.execution.failed", "svc.execution.cancelled"} {
		if _, ok := event.Lookup(typ); !ok {
			t.Errorf("%s is not in the event catalogue", typ)
		}
	}
}
