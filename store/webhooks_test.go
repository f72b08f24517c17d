package store_test

import (
	"path/filepath"
	"testing"

	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/platform/webhook/webhooktest"
	"svc.dev/svc/store"
)

// The bbolt webhook store passes the webhook engine's conformance suite.
func TestWebhookStoreConformance(t *testing.T) {
	webhooktest.RunStoreTests(t, func(t *testing.T) webhook.Store {
		db, err := store.Open(filepath.Join(t.TempDir(), "svc.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.Webhooks()
	})
}
