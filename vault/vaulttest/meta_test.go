package vaulttest_test

import (
	"testing"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

func TestMeta(t *testing.T) {
	vaulttest.RunMeta(t, func(testing.TB) vault.Meta { return vaulttest.NewMeta() })
}
