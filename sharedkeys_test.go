package svc_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"svc.dev/svc"
	"svc.dev/svc/internal/pgtest"
	"svc.dev/svc/platform"
	"svc.dev/svc/receipt"
	"svc.dev/svc/storage"
	"svc.dev/svc/storage/postgres"
	"svc.dev/svc/vault/backend/local"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// unshared hides a store's shared capabilities: what svc did with a PostgreSQL store before
// the receipt keys moved into it (they stayed in DIR/keys).
type unshared struct{ storage.Hosted }

// A data directory whose receipt keys are on disk (an earlier commit's, used with a
// database) opens with the keys moved into the database, sealed, and gone from the disk: its
// receipts still verify, it signs with the same key, and a second replica with a data
// directory of its own (and the same master key) signs with it too. A replica whose directory
// holds other keys, or that has another master key, is refused.
func TestReceiptKeysMoveIntoSharedStore(t *testing.T) {
	ctx := context.Background()
	pg, err := postgres.Open(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	dir := t.TempDir()
	sv, err := svc.Open(ctx, dir, &svc.Options{Store: unshared{pg}})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := folder(t, 3)
	src, x := rescue(ctx, t, sv, root, true)
	kid := sv.ReceiptKeys().Current()
	sv.Close()
	keyFile := filepath.Join(dir, svc.ReceiptKeysDir, receipt.KeyFile)
	if _, err := os.Stat(keyFile); err != nil {
		t.Fatalf("the earlier layout keeps the keys on disk: %v", err)
	}
	if _, _, err := pg.Secret(ctx, svc.ReceiptKeysSecret); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("keys in the database before the move: %v", err)
	}

	sv, err = svc.Open(ctx, dir, &svc.Options{Store: pg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(keyFile); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the key file after the move: %v", err)
	}
	if got := sv.ReceiptKeys().Current(); got != kid {
		t.Fatalf("signs with %s after the move, want %s", got, kid)
	}
	if _, err := sv.VerifyReceipt(ctx, x.GetReceiptId()); err != nil {
		t.Fatalf("the receipt issued before the move: %v", err)
	}
	sealed, _, err := pg.Secret(ctx, svc.ReceiptKeysSecret)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte(kid)) || bytes.Contains(sealed, []byte("Ed25519")) {
		t.Fatal("the stored key set is readable without the master key")
	}
	master, err := os.ReadFile(filepath.Join(dir, svc.MasterKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	_, raw, err := sv.Receipt(ctx, x.GetReceiptId())
	if err != nil {
		t.Fatal(err)
	}

	// A second replica: its own data directory, the shared master key, the vault's tiers
	// shared (as a cluster shares its bucket).
	hot, err := local.New(filepath.Join(dir, svc.VaultDir, "hot"))
	if err != nil {
		t.Fatal(err)
	}
	cold, err := local.New(filepath.Join(dir, svc.VaultDir, "cold"))
	if err != nil {
		t.Fatal(err)
	}
	sv2, err := svc.Open(ctx, t.TempDir(), &svc.Options{Store: pg, MasterKey: master, VaultHot: hot, VaultCold: cold})
	if err != nil {
		t.Fatal(err)
	}
	if sv2.ReceiptKeys().Current() != kid || !bytes.Equal(sv2.ReceiptKeys().KeySet(), sv.ReceiptKeys().KeySet()) {
		t.Fatalf("the second replica signs with %s", sv2.ReceiptKeys().Current())
	}
	if _, err := receipt.Verify(raw, sv2.ReceiptKeys().KeySet()); err != nil {
		t.Fatalf("the receipt with the second replica's key set: %v", err)
	}
	// A rotation stored while both run: published by each once it reloads, signing later.
	env, err := platform.NewLocalEnvelope(master)
	if err != nil {
		t.Fatal(err)
	}
	next, err := svc.RotateSharedReceiptKey(ctx, pg, env)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []*svc.Instance{sv, sv2} {
		if err := s.ReceiptKeys().Reload(ctx); err != nil {
			t.Fatal(err)
		}
		if ids := s.ReceiptKeys().KeyIDs(); len(ids) != 2 || ids[1] != next || s.ReceiptKeys().Current() != kid {
			t.Fatalf("after the rotation: keys %v, signing with %s (want %s until the activation)", ids, s.ReceiptKeys().Current(), kid)
		}
	}
	sv2.Close()
	sv.Close()

	// Another master key cannot open the keys.
	other := bytes.Repeat([]byte{7}, 32)
	if _, err := svc.Open(ctx, t.TempDir(), &svc.Options{Store: pg, MasterKey: other}); err == nil || !strings.Contains(err.Error(), "master key") {
		t.Fatalf("another master key: %v", err)
	}
	// A directory with keys the database lacks is refused, and keeps its keys.
	stray := t.TempDir()
	if _, err := receipt.OpenKeyring(filepath.Join(stray, svc.ReceiptKeysDir)); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Open(ctx, stray, &svc.Options{Store: pg, MasterKey: master})
	if err == nil || !strings.Contains(err.Error(), "not among the database's receipt keys") {
		t.Fatalf("a directory with other keys: %v", err)
	}
	if _, err := os.Stat(filepath.Join(stray, svc.ReceiptKeysDir, receipt.KeyFile)); err != nil {
		t.Fatalf("the refused directory's keys: %v", err)
	}

	// The cluster's master key rotates (replicas stopped): afterwards the new key opens the
	// sealed configuration, the vault and the receipt keys, and the old one opens nothing.
	newKey := bytes.Repeat([]byte{9}, 32)
	rep, err := svc.RotateStoreMasterKey(ctx, pg, master, newKey)
	if err != nil || rep.Vault.Rewrapped == 0 || rep.Secrets < 2 {
		t.Fatalf("rotate: %+v, %v", rep, err)
	}
	if rep, err = svc.RotateStoreMasterKey(ctx, pg, master, newKey); err != nil || rep.Vault.Rewrapped != 0 || rep.Secrets != 0 {
		t.Fatalf("rotate again: %+v, %v", rep, err)
	}
	sv, err = svc.Open(ctx, dir, &svc.Options{Store: pg, MasterKey: newKey}) // its local vault
	if err != nil {
		t.Fatalf("open with the new key: %v", err)
	}
	defer sv.Close()
	if sv.ReceiptKeys().Current() != kid {
		t.Fatalf("signs with %s after the rotation", sv.ReceiptKeys().Current())
	}
	if _, err := sv.VerifyReceipt(ctx, x.GetReceiptId()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := sv.OpenSource(ctx, src.Id); err != nil {
		t.Fatalf("the source's sealed configuration: %v", err)
	}
	for o, err := range sv.VaultObjects(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		rc, _, err := sv.OpenVaultObject(ctx, o.ID)
		if err != nil {
			t.Fatalf("vault object %s with the new key: %v", o.ID, err)
		}
		rc.Close()
	}
	if _, err := svc.Open(ctx, t.TempDir(), &svc.Options{Store: pg, MasterKey: master}); err == nil {
		t.Fatal("the old master key still opens the cluster")
	}
}

// A database that holds receipts but no receipt keys (and a data directory without them) is
// refused: new keys would leave the receipts unverifiable.
func TestSharedStoreWithoutKeysRefused(t *testing.T) {
	ctx := context.Background()
	pg, err := postgres.Open(ctx, pgtest.Database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	dir := t.TempDir()
	sv, err := svc.Open(ctx, dir, &svc.Options{Store: unshared{pg}})
	if err != nil {
		t.Fatal(err)
	}
	root, _ := folder(t, 2)
	rescue(ctx, t, sv, root, true)
	sv.Close()
	os.RemoveAll(filepath.Join(dir, svc.ReceiptKeysDir))
	_, err = svc.Open(ctx, dir, &svc.Options{Store: pg})
	if err == nil || !strings.Contains(err.Error(), "receipts were issued") {
		t.Fatalf("open: %v", err)
	}
}
