package webhooktest_test

import (
	"testing"

	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/platform/webhook/webhooktest"
)

func TestMemoryStore(t *testing.T) {
	webhooktest.RunStoreTests(t, func(*testing.T) webhook.Store { return webhooktest.NewStore() })
}
