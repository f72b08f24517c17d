package receipt_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"svc.dev/svc/receipt"
)

// memKeys is a KeyStore in memory, with the version check a database makes.
type memKeys struct {
	mu      sync.Mutex
	data    []byte
	version int64
}

func (m *memKeys) LoadKeys(context.Context) ([]byte, int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.version == 0 {
		return nil, 0, fmt.Errorf("no keys: %w", fs.ErrNotExist)
	}
	return bytes.Clone(m.data), m.version, nil
}

func (m *memKeys) StoreKeys(_ context.Context, data []byte, version int64) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if version != m.version {
		return 0, receipt.ErrKeysChanged
	}
	m.data, m.version = bytes.Clone(data), m.version+1
	return m.version, nil
}

// Two processes sharing a KeyStore sign with one key; a rotation by one is published by the
// other once it reloads, before either signs with the new key; and every receipt either
// signed verifies with the key set of the other.
func TestStoredKeyringSharedByReplicas(t *testing.T) {
	ctx := context.Background()
	ks := &memKeys{}
	const activation = 300 * time.Millisecond
	a, err := receipt.OpenStoredKeyring(ctx, ks, "memory", activation)
	if err != nil {
		t.Fatal(err)
	}
	b, err := receipt.OpenStoredKeyring(ctx, ks, "memory", activation)
	if err != nil {
		t.Fatal(err)
	}
	first := a.Current()
	if b.Current() != first || ks.version != 1 {
		t.Fatalf("replicas sign with %s and %s (store version %d)", first, b.Current(), ks.version)
	}
	_, raw := issue(t, fullInput(), a)
	if _, err := receipt.Verify(raw, b.KeySet()); err != nil {
		t.Fatalf("a's receipt with b's key set: %v", err)
	}

	second, err := a.Rotate()
	if err != nil || second == first {
		t.Fatalf("rotate: %v", err)
	}
	// The new key is published, and does not sign yet.
	if a.Current() != first {
		t.Fatalf("a signs with %s right after the rotation, want %s until the activation", a.Current(), first)
	}
	if _, err := b.Rotate(); !errors.Is(err, receipt.ErrKeysChanged) {
		t.Fatalf("b rotates over a's rotation: %v, want ErrKeysChanged", err)
	}
	if err := b.Reload(ctx); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.KeySet(), b.KeySet()) || len(b.KeyIDs()) != 2 || b.Current() != first {
		t.Fatalf("after reload: b signs %s, key sets equal %v, keys %v", b.Current(), bytes.Equal(a.KeySet(), b.KeySet()), b.KeyIDs())
	}
	time.Sleep(activation + 50*time.Millisecond)
	if a.Current() != second || b.Current() != second {
		t.Fatalf("after the activation a signs %s, b %s, want %s", a.Current(), b.Current(), second)
	}
	_, raw2 := issue(t, fullInput(), b)
	for _, r := range [][]byte{raw, raw2} {
		if _, err := receipt.Verify(r, a.KeySet()); err != nil {
			t.Fatalf("verify with a's key set: %v", err)
		}
	}
	// A third process started later sees the same.
	c, err := receipt.OpenStoredKeyring(ctx, ks, "memory", activation)
	if err != nil || c.Current() != second || !bytes.Equal(c.KeySet(), a.KeySet()) {
		t.Fatalf("a later replica: %v, signs %s", err, c.Current())
	}
}

// A data directory's key file moves into a KeyStore with its keys, and an import over keys
// already stored is refused.
func TestImportKeyring(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	fk, err := receipt.OpenKeyring(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fk.Rotate(); err != nil {
		t.Fatal(err)
	}
	_, raw := issue(t, fullInput(), fk)
	data, err := receipt.KeyFileData(dir)
	if err != nil {
		t.Fatal(err)
	}
	ks := &memKeys{}
	if err := receipt.ImportKeyring(ctx, ks, data); err != nil {
		t.Fatal(err)
	}
	sk, err := receipt.OpenStoredKeyring(ctx, ks, "memory", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if sk.Current() != fk.Current() || !bytes.Equal(sk.KeySet(), fk.KeySet()) {
		t.Fatalf("imported keyring signs %s, want %s", sk.Current(), fk.Current())
	}
	if _, err := receipt.Verify(raw, sk.KeySet()); err != nil {
		t.Fatal(err)
	}
	if err := receipt.ImportKeyring(ctx, ks, data); !errors.Is(err, receipt.ErrKeysChanged) {
		t.Fatalf("second import: %v", err)
	}
	if err := receipt.ImportKeyring(ctx, &memKeys{}, []byte(`{"version":1}`)); err == nil {
		t.Fatal("a key file without keys was imported")
	}
	if _, err := receipt.KeyFileData(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no key file: %v", err)
	}
}
