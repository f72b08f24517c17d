package postgres_test

import (
	"context"
	"testing"

	"svc.dev/svc/internal/pgtest"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/platform/webhook/webhooktest"
	"svc.dev/svc/storage"
	"svc.dev/svc/storage/postgres"
	"svc.dev/svc/storage/storagetest"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func open(t testing.TB) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The PostgreSQL store passes the seam's conformance suite.
func TestSeamConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return open(t) })
}

// The PostgreSQL store passes the hosted store's conformance suite.
func TestHostedConformance(t *testing.T) {
	storagetest.RunHosted(t, func(t *testing.T) storage.Hosted { return open(t) })
}

// The PostgreSQL store's leases (shared by every process on the database) pass the leases'
// suite, fenced journal appends included.
func TestLeasesConformance(t *testing.T) {
	storagetest.RunLeases(t, func(t *testing.T) storage.Store { return open(t) })
}

// The webhooks' store passes the webhook engine's store suite.
func TestWebhookStore(t *testing.T) {
	webhooktest.RunStoreTests(t, func(t *testing.T) webhook.Store {
		s := open(t)
		t.Cleanup(func() { s.Close() })
		return s.Webhooks()
	})
}

// The vault's records pass the vault's suite.
func TestVaultMeta(t *testing.T) {
	vaulttest.RunMeta(t, func(t testing.TB) vault.Meta {
		s := open(t)
		t.Cleanup(func() { s.Close() })
		return s.VaultMeta()
	})
}

// Open applies the migrations once: a second open of the same database finds the schema
// current and keeps what was stored.
func TestOpenMigrates(t *testing.T) {
	dsn := pgtest.Database(t)
	ctx := context.Background()
	s, err := postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil || v < 1 {
		t.Fatalf("schema version %d, %v", v, err)
	}
	if err := s.Receipts().Put(ctx, "test:usr_a", "rcp_1", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = postgres.Open(ctx, dsn)
	if err != nil {
		t.Fatalf("open again: %v", err)
	}
	defer s.Close()
	if v2, err := s.SchemaVersion(ctx); err != nil || v2 != v {
		t.Fatalf("schema version after reopening %d (%v), want %d", v2, err, v)
	}
	if b, err := s.Receipts().Get(ctx, "test:usr_a", "rcp_1"); err != nil || string(b) != "{}" {
		t.Fatalf("after reopening: %q, %v", b, err)
	}
}
