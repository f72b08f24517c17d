package svc_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"svc.dev/svc"
)

// rotationFixture is a data directory with a connected folder (its configuration sealed) and
// a rescue's vault content (a tenant data key), closed.
func rotationFixture(t *testing.T) (dir, srcID, execID string) {
	t.Helper()
	ctx := context.Background()
	dir = t.TempDir()
	sv, err := svc.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := folder(t, 3)
	src, x := rescue(ctx, t, sv, root, true)
	sv.Close()
	return dir, src.Id, x.Id
}

// readsEverything opens the directory and uses what the master key protects: the source's
// sealed configuration, the vault's content (its data key), the receipt.
func readsEverything(t *testing.T, dir, srcID, execID string) {
	t.Helper()
	ctx := context.Background()
	sv, err := svc.Open(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sv.Close()
	if _, _, err := sv.OpenSource(ctx, srcID); err != nil {
		t.Fatalf("open the source after the rotation: %v", err)
	}
	x, err := sv.Execution(ctx, execID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sv.VerifyReceipt(ctx, x.GetReceiptId()); err != nil {
		t.Fatalf("verify the receipt: %v", err)
	}
	n := 0
	for o, err := range sv.VaultObjects(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		rc, _, err := sv.OpenVaultObject(ctx, o.ID)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(io.Discard, rc); err != nil {
			t.Fatalf("read vault object %s after the rotation: %v", o.ID, err)
		}
		rc.Close()
		n++
	}
	if n == 0 {
		t.Fatal("no vault content to read")
	}
}

func TestRotateMasterKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir, srcID, execID := rotationFixture(t)
	keyFile := filepath.Join(dir, svc.MasterKeyFile)
	before, _ := os.ReadFile(keyFile)
	rep, err := svc.RotateMasterKey(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(keyFile)
	prev, _ := os.ReadFile(keyFile + svc.PreviousKeySuffix)
	if bytes.Equal(before, after) || !bytes.Equal(prev, before) || rep.Vault.Rewrapped != 1 || rep.Secrets != 1 || !rep.Vault.Done {
		t.Fatalf("rotation: %+v; key changed %v, previous kept %v", rep, !bytes.Equal(before, after), bytes.Equal(prev, before))
	}
	if _, err := os.Stat(keyFile + svc.NextKeySuffix); !os.IsNotExist(err) {
		t.Fatalf("the pending key is left: %v", err)
	}
	readsEverything(t, dir, srcID, execID)
}

// A rotation stopped at any point is refused at open and finished by running it again.
func TestRotateMasterKeyResumes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// Stopped after the new key was written, before anything moved.
	dir, srcID, execID := rotationFixture(t)
	keyFile := filepath.Join(dir, svc.MasterKeyFile)
	next := make([]byte, 32)
	rand.Read(next)
	if err := os.WriteFile(keyFile+svc.NextKeySuffix, next, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Open(ctx, dir, nil); !errors.Is(err, svc.ErrRotationPending) {
		t.Fatalf("open during a rotation: %v, want ErrRotationPending", err)
	}
	rep, err := svc.RotateMasterKey(ctx, dir)
	if err != nil || !rep.Resumed {
		t.Fatalf("resume: %+v, %v", rep, err)
	}
	if got, _ := os.ReadFile(keyFile); !bytes.Equal(got, next) {
		t.Fatal("the resumed rotation did not install the pending key")
	}
	readsEverything(t, dir, srcID, execID)

	// Run again on what it did: nothing left to move.
	rep, err = svc.RotateMasterKey(ctx, dir)
	if err != nil || rep.Vault.Rewrapped != 1 || rep.Secrets != 1 {
		t.Fatalf("a second rotation: %+v, %v", rep, err)
	}

	// Stopped between the two renames: the old key moved aside, the new one not yet in place.
	if err := os.WriteFile(keyFile+svc.NextKeySuffix, next, 0o600); err != nil {
		t.Fatal(err)
	}
	cur, _ := os.ReadFile(keyFile)
	// Make the pending key the current one's twin so the data matches it, then stop mid-rename.
	os.WriteFile(keyFile+svc.NextKeySuffix, cur, 0o600)
	os.Rename(keyFile, keyFile+svc.PreviousKeySuffix)
	if rep, err = svc.RotateMasterKey(ctx, dir); err != nil || !rep.Resumed {
		t.Fatalf("finish the renames: %+v, %v", rep, err)
	}
	readsEverything(t, dir, srcID, execID)
}

// BenchmarkRotateMasterKey10k times svc keys rotate on a data directory whose vault holds
// 10,000 objects (one tenant): data keys are per tenant, so the time follows tenants and
// sealed secrets, not objects.
func BenchmarkRotateMasterKey10k(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	root := b.TempDir()
	for i := range 10000 {
		if err := os.WriteFile(filepath.Join(root, "f"+strconv.Itoa(i)), []byte(strconv.Itoa(i)), 0o600); err != nil {
			b.Fatal(err)
		}
	}
	sv, err := svc.Open(ctx, dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	t := &testing.T{}
	_, x := rescue(ctx, t, sv, root, true)
	if x.GetCompleted() != 10000 {
		b.Fatalf("vaulted %d objects", x.GetCompleted())
	}
	sv.Close()
	b.ResetTimer()
	for b.Loop() {
		if _, err := svc.RotateMasterKey(ctx, dir); err != nil {
			b.Fatal(err)
		}
	}
}
