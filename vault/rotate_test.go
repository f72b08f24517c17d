package vault_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

var newKEK = vault.KEK{0xa1, 0xb2, 0xc3, 0xd4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 99}

func rotateTenant(i int) string { return fmt.Sprintf("live:usr_rotate%02d", i) }

const rotateTenants = 20

func openRotateVault(t *testing.T, dir string, kek vault.KEK, previous ...vault.KEK) (*vault.Vault, *vaulttest.KeyStore) {
	t.Helper()
	meta, err := vaulttest.NewFileMeta(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	keys, err := vaulttest.NewFileKeyStore(filepath.Join(dir, "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := vault.Open(dir, meta, keys, kek, &vault.Options{PreviousKEKs: previous})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v, keys
}

// TestRewrapKeysCrashChild is the process TestRewrapKeysSurvivesACrash kills: it re-wraps
// the keys in batches of 3 and kills itself with SIGKILL once two batches are stored.
func TestRewrapKeysCrashChild(t *testing.T) {
	dir := os.Getenv("VAULT_REWRAP_CHILD")
	if dir == "" {
		t.Skip("run by TestRewrapKeysSurvivesACrash")
	}
	keys, err := vaulttest.NewFileKeyStore(filepath.Join(dir, "keys.json"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = vault.RewrapKeys(ctx, keys, newKEK, []vault.KEK{vaulttest.KEK}, &vault.RewrapOptions{Batch: 3, Progress: func(r vault.RewrapReport) {
		if r.Rewrapped >= 6 {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {}
		}
	}})
	t.Fatalf("not killed: %v", err)
}

// A re-wrap killed in the middle leaves every key under the old KEK or the new one; a
// vault given both reads everything meanwhile; run again, it skips the keys already
// re-wrapped and finishes; then the new KEK alone reads every tenant's content.
func TestRewrapKeysSurvivesACrash(t *testing.T) {
	dir := t.TempDir()
	v, _ := openRotateVault(t, dir, vaulttest.KEK)
	ids := map[string]string{}
	datas := map[string][]byte{}
	for i := range rotateTenants {
		tn := rotateTenant(i)
		size := 3000 + i
		if i == 7 {
			size = 600 << 10 // one streamed file too
		}
		datas[tn] = payload(uint64(i), size)
		ids[tn] = put(t, v, tn, datas[tn], vault.PutRequest{SizeBytes: int64(size)}).ID
	}
	v.Close()

	cmd := exec.Command(os.Args[0], "-test.run=^TestRewrapKeysCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VAULT_REWRAP_CHILD="+dir)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child was not killed: %v\n%s", err, out)
	}

	readAll := func(v *vault.Vault) (ok, unavailable int) {
		for tn, id := range ids {
			got, err := read(t, v, tn, id)
			switch {
			case err == nil && string(got) == string(datas[tn]):
				ok++
			case errors.Is(err, vault.ErrKeyUnavailable):
				unavailable++
			default:
				t.Errorf("tenant %s: %v", tn, err)
			}
		}
		return ok, unavailable
	}
	// Without the previous KEK, the tenants not yet re-wrapped are unavailable (not lost).
	v2, _ := openRotateVault(t, dir, newKEK)
	if ok, un := readAll(v2); ok != 6 || un != rotateTenants-6 {
		t.Fatalf("new KEK alone after the crash: %d readable, %d unavailable; want 6 and %d", ok, un, rotateTenants-6)
	}
	v2.Close()
	// With it, everything reads; a tenant created meanwhile gets its key under the new KEK.
	v3, keys := openRotateVault(t, dir, newKEK, vaulttest.KEK)
	if ok, un := readAll(v3); ok != rotateTenants || un != 0 {
		t.Fatalf("both KEKs: %d readable, %d unavailable", ok, un)
	}
	late := "live:usr_rotate_late"
	datas[late] = payload(99, 100)
	ids[late] = put(t, v3, late, datas[late], vault.PutRequest{SizeBytes: 100}).ID
	rep, err := v3.RewrapKeys(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Done || rep.Already != 7 || rep.Rewrapped != rotateTenants-6 || rep.Tenants != rotateTenants+1 {
		t.Fatalf("resumed run: %+v", rep)
	}
	v3.Close()
	if again, err := vault.RewrapKeys(ctx, keys, newKEK, nil, nil); err != nil || !again.Done || again.Rewrapped != 0 {
		t.Fatalf("a run after the end: %+v, %v", again, err)
	}
	v4, _ := openRotateVault(t, dir, newKEK)
	if ok, un := readAll(v4); ok != rotateTenants+1 || un != 0 {
		t.Fatalf("new KEK alone after the rotation: %d readable, %d unavailable", ok, un)
	}
}

// A key under neither KEK stops the run before its batch is written, naming the tenant.
func TestRewrapKeysWithoutTheOldKEK(t *testing.T) {
	keys := vaulttest.NewKeyStore()
	v, err := vault.Open(t.TempDir(), vaulttest.NewMeta(), keys, vaulttest.KEK, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	put(t, v, tenant, []byte("x"), vault.PutRequest{SizeBytes: 1})
	before, _ := keys.WrappedKey(ctx, tenant)
	_, err = vault.RewrapKeys(ctx, keys, newKEK, nil, nil)
	if !errors.Is(err, vault.ErrKeyUnavailable) || !strings.Contains(err.Error(), tenant) {
		t.Fatalf("rewrap without the old KEK: %v", err)
	}
	after, _ := keys.WrappedKey(ctx, tenant)
	if string(before) != string(after) {
		t.Fatal("a key was replaced by a failed run")
	}
}
