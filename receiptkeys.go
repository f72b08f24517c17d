package svc

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/receipt"
	"svc.dev/svc/storage"
)

// ReceiptKeysSecret names the receipt signing keys among the secrets of a store shared by
// replicas (storage.Secrets).
const ReceiptKeysSecret = "receipt-keys"

// ReceiptKeyActivation is how long after a rotation in a shared store the new receipt key
// starts signing. Every replica reloads the keys every ReceiptKeyReload, well within it, so
// each publishes the new key before any replica signs a receipt with it.
const ReceiptKeyActivation = 2 * time.Minute

// ReceiptKeyReload is how often a replica reads the shared receipt keys again.
const ReceiptKeyReload = 30 * time.Second

// receiptKeysAAD binds the sealed key set to its place among the store's secrets.
var receiptKeysAAD = []byte("svc/secrets/" + ReceiptKeysSecret)

// sealedKeyStore keeps a keyring in a store's secrets, sealed by an Envelope (a fresh data
// key per write, wrapped under the master key or a KMS).
type sealedKeyStore struct {
	sec storage.Secrets
	env platform.Envelope
}

func (s sealedKeyStore) LoadKeys(ctx context.Context) ([]byte, int64, error) {
	sealed, v, err := s.sec.Secret(ctx, ReceiptKeysSecret)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, 0, fmt.Errorf("receipt keys: %w", fs.ErrNotExist)
	} else if err != nil {
		return nil, 0, fmt.Errorf("receipt keys: %w", err)
	}
	plain, err := platform.OpenWithEnvelope(ctx, s.env, sealed, receiptKeysAAD)
	if err != nil {
		return nil, 0, fmt.Errorf("receipt keys: %w (is this the master key the database was sealed with?)", err)
	}
	return plain, v, nil
}

func (s sealedKeyStore) StoreKeys(ctx context.Context, data []byte, version int64) (int64, error) {
	sealed, err := platform.SealWithEnvelope(ctx, s.env, data, receiptKeysAAD)
	if err != nil {
		return 0, fmt.Errorf("receipt keys: %w", err)
	}
	v, err := s.sec.PutSecret(ctx, ReceiptKeysSecret, sealed, version)
	if errors.Is(err, storage.ErrVersionChanged) {
		return 0, fmt.Errorf("%w: %w", receipt.ErrKeysChanged, err)
	}
	return v, err
}

// SharedReceiptKeys returns the receipt.KeyStore that keeps the receipt signing keys among a
// shared store's secrets, sealed by env.
func SharedReceiptKeys(sec storage.Secrets, env platform.Envelope) receipt.KeyStore {
	return sealedKeyStore{sec: sec, env: env}
}

// OpenSharedReceiptKeys opens the receipt signing keys kept in a store shared by replicas,
// sealed by env. A data directory's keys (dir/keys, written when the keys were kept there)
// move into the store the first time: imported, checked, then removed from the disk. Keys in
// the directory that the store lacks, beside keys it has, are an error (receipts they signed
// would stop verifying). Without keys anywhere, a store that holds receipts is an error too.
func OpenSharedReceiptKeys(ctx context.Context, dir string, sec storage.Secrets, env platform.Envelope, store storage.Store) (*receipt.Keyring, error) {
	ks := SharedReceiptKeys(sec, env)
	keysDir := filepath.Join(dir, ReceiptKeysDir)
	file, ferr := receipt.KeyFileData(keysDir)
	if ferr != nil && !errors.Is(ferr, fs.ErrNotExist) {
		return nil, ferr
	}
	_, _, lerr := ks.LoadKeys(ctx)
	switch {
	case lerr == nil:
	case !errors.Is(lerr, fs.ErrNotExist):
		return nil, lerr
	case ferr == nil: // keys on disk, none stored: move them
		if err := receipt.ImportKeyring(ctx, ks, file); err != nil && !errors.Is(err, receipt.ErrKeysChanged) {
			return nil, fmt.Errorf("move the receipt keys of %s into the database: %w", keysDir, err)
		}
	default:
		if err := checkNoReceipts(ctx, store, "the database"); err != nil {
			return nil, err
		}
	}
	k, err := receipt.OpenStoredKeyring(ctx, ks, "the database", ReceiptKeyActivation)
	if err != nil {
		return nil, err
	}
	if ferr == nil {
		dk, err := receipt.OpenKeyring(keysDir)
		if err != nil {
			return nil, err
		}
		stored := k.KeyIDs()
		for _, kid := range dk.KeyIDs() {
			if !slices.Contains(stored, kid) {
				return nil, fmt.Errorf("receipt key %s of %s is not among the database's receipt keys: receipts it signed "+
					"would stop verifying; this data directory was used with another database (or none): move its "+
					"records with svc migrate, or start with a data directory without %s", kid, keysDir, ReceiptKeysDir)
			}
		}
		// Every key is in the database, sealed: the private keys leave the data disk.
		if err := os.Remove(filepath.Join(keysDir, receipt.KeyFile)); err != nil {
			return nil, fmt.Errorf("remove the receipt keys moved into the database: %w", err)
		}
		os.Remove(keysDir) // when nothing else is in it
	}
	return k, nil
}

// checkNoReceipts refuses to make new receipt keys for a store that holds receipts signed
// with keys it no longer has.
func checkNoReceipts(ctx context.Context, store storage.Store, where string) error {
	issued := false
	err := store.Executions().ScanAll(ctx, func(_ string, x *svcv1.Execution) bool {
		issued = x.GetReceiptId() != ""
		return !issued
	})
	if err != nil {
		return fmt.Errorf("receipt keys: %w", err)
	}
	if issued {
		return fmt.Errorf("receipt signing keys are missing from %s but receipts were issued with them: restore "+
			"them from your backup, then start again; svc will not make new keys, which would stop "+
			"the old receipts from verifying", where)
	}
	return nil
}

// reloadReceiptKeys reads the shared receipt keys again every ReceiptKeyReload until stop
// closes, so a rotation another replica (or svc keys rotate) stored is published here.
func reloadReceiptKeys(k *receipt.Keyring, log *slog.Logger, stop <-chan struct{}) {
	t := time.NewTicker(ReceiptKeyReload)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			ctx, cancel := context.WithTimeout(context.Background(), ReceiptKeyReload)
			if err := k.Reload(ctx); err != nil {
				log.Error("receipt keys: reload failed; signing with the keys loaded before", "err", err)
			}
			cancel()
		}
	}
}

// RotateSharedReceiptKey makes a new receipt signing key current in a store shared by
// replicas, which may be running: it is published at once (each replica loads it within
// ReceiptKeyReload) and signs from ReceiptKeyActivation on; the old keys stay published. It
// returns the new key's id.
func RotateSharedReceiptKey(ctx context.Context, sec storage.Secrets, env platform.Envelope) (string, error) {
	k, err := receipt.OpenStoredKeyring(ctx, SharedReceiptKeys(sec, env), "the database", ReceiptKeyActivation)
	if err != nil {
		return "", err
	}
	return k.Rotate()
}

// ExistingMasterKey returns the master key as LoadMasterKey does (MasterKeyEnv, then
// dir/master.key) but never makes one: a tool acting on a cluster needs the key the cluster
// runs with.
func ExistingMasterKey(dir string) ([]byte, error) {
	if os.Getenv(MasterKeyEnv) == "" {
		if _, err := os.Stat(filepath.Join(dir, MasterKeyFile)); err != nil {
			return nil, fmt.Errorf("no master key: set %s to the key the cluster runs with (or keep it in %s): %w",
				MasterKeyEnv, filepath.Join(dir, MasterKeyFile), err)
		}
	}
	return LoadMasterKey(dir, "")
}
