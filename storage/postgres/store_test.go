package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	svcv1 "svc.dev/svc/gen/svc/v1"
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

// ScanActive reads the queued and running executions of every tenant, and only those.
func TestScanActiveExecutions(t *testing.T) {
	s := open(t)
	defer s.Close()
	ctx := context.Background()
	for i, st := range []svcv1.ExecutionStatus{svcv1.ExecutionStatus_EXECUTION_STATUS_QUEUED, svcv1.ExecutionStatus_EXECUTION_STATUS_RUNNING,
		svcv1.ExecutionStatus_EXECUTION_STATUS_COMPLETED, svcv1.ExecutionStatus_EXECUTION_STATUS_CANCELLED} {
		tenant := []string{"test:usr_a", "live:usr_b"}[i%2]
		e := &svcv1.Execution{Id: fmt.Sprintf("exe_%d", i), PlanId: "pln_1", Status: st}
		if err := s.Apply(ctx, s.Executions().PutWrite(tenant, e)); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	err := s.Executions().(storage.ActiveExecutions).ScanActive(ctx, func(tenant string, e *svcv1.Execution) bool {
		got = append(got, tenant+"/"+e.GetId())
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"live:usr_b/exe_1", "test:usr_a/exe_0"}; !slices.Equal(got, want) {
		t.Fatalf("active executions %v, want %v", got, want)
	}
}
