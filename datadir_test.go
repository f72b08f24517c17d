package svc_test

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc"
	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/receipt"
)

// A data directory whose master key is gone is refused with the way to recover, never given a
// new key that would orphan what the old one sealed; the key from the environment opens it.
func TestLostMasterKeyIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sv, err := svc.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	sv.Close()
	keyFile := filepath.Join(dir, svc.MasterKeyFile)
	key, err := os.ReadFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(keyFile, keyFile+".bak"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Open(ctx, dir, nil); err == nil || !strings.Contains(err.Error(), keyFile) {
		t.Fatalf("open without the key: %v, want a refusal naming %s", err, keyFile)
	}
	if _, err := os.Stat(keyFile); !os.IsNotExist(err) {
		t.Fatalf("a new key file was made: %v", err)
	}
	t.Setenv(svc.MasterKeyEnv, base64.StdEncoding.EncodeToString(key))
	sv, err = svc.Open(ctx, dir, nil)
	if err != nil {
		t.Fatalf("open with the key from the environment: %v", err)
	}
	sv.Close()
}

// Receipt signing keys that signed receipts are never silently replaced.
func TestLostReceiptKeysAreRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sv, err := svc.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := sv.Store()
	x := &svcv1.Execution{Id: "exe_01JZ0000000000000000000000", PlanId: "pln_01JZ0000000000000000000000"}
	rid := "rcp_01JZ0000000000000000000000"
	x.ReceiptId = &rid
	if err := st.Apply(ctx, st.Executions().PutWrite(svc.DefaultTenant.String(), x)); err != nil {
		t.Fatal(err)
	}
	sv.Close()
	keys := filepath.Join(dir, svc.ReceiptKeysDir, receipt.KeyFile)
	if err := os.Remove(keys); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Open(ctx, dir, nil); err == nil || !strings.Contains(err.Error(), keys) {
		t.Fatalf("open without the receipt keys: %v, want a refusal naming %s", err, keys)
	}
}
