package bolt_test

import (
	"path/filepath"
	"testing"

	"svc.dev/svc/storage/bolt"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// The bbolt vault records pass the vault's conformance suite.
func TestVaultMetaConformance(t *testing.T) {
	vaulttest.RunMeta(t, func(t testing.TB) vault.Meta {
		db, err := bolt.Open(filepath.Join(t.TempDir(), "svc.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.VaultMeta()
	})
}

// The bbolt key store passes the conformance suite of a KEK rotation's store.
func TestRewrapStoreConformance(t *testing.T) {
	vaulttest.RunRewrapStore(t, func(t testing.TB) vault.RewrapStore {
		db, err := bolt.Open(filepath.Join(t.TempDir(), "svc.db"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db.VaultMeta()
	})
}
