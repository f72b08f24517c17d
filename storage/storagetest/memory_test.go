package storagetest_test

import (
	"testing"

	"svc.dev/svc/storage"
	"svc.dev/svc/storage/storagetest"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// The in-memory store passes the suite it is shipped with, and its vault records pass the
// vault's.
func TestMemory(t *testing.T) {
	storagetest.Run(t, func(*testing.T) storage.Store { return storagetest.NewMemory() })
	vaulttest.RunMeta(t, func(testing.TB) vault.Meta { return storagetest.NewMemory().VaultMeta() })
}
