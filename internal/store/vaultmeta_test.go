package store_test

import (
	"path/filepath"
	"testing"

	"svc.dev/svc/internal/store"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// The bbolt vault records pass the vault's conformance suite.
func TestVaultMetaConformance(t *testing.T) {
	vaulttest.RunMeta(t, func(t testing.TB) vault.Meta {
		db, err := store.Open(filepath.Join(t.TempDir(), "svc.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.VaultMeta()
	})
}
