package webhooktest_test

import (
	"testing"

	"svc.dev/svc/internal/platform/webhook"
	"svc.dev/svc/internal/platform/webhook/webhooktest"
)

func TestMemoryStore(t *testing.T) {
	webhooktest.RunStoreTests(t, func(*testing.T) webhook.Store { return webhooktest.NewStore() })
}
