package svc

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"svc.dev/svc/platform"
	"svc.dev/svc/receipt"
	"svc.dev/svc/storage"
	"svc.dev/svc/storage/bolt"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/backend"
)

// The layout of a data directory, known here and nowhere else.
const (
	// StoreFile is the bbolt store Open opens by default.
	StoreFile = "svc.db"
	// MasterKeyFile is the master key, when it is kept in the directory.
	MasterKeyFile = "master.key"
	// ReceiptKeysDir holds the receipt signing keys.
	ReceiptKeysDir = "keys"
	// VaultDir holds the vault's local tiers.
	VaultDir = "vault"
	// SearchDir holds the vault's search indexes.
	SearchDir = "search"
)

// MasterKeyEnv names the environment variable that may hold the master key (32 bytes,
// base64): a key kept outside the data directory, away from what it protects.
const MasterKeyEnv = "SVC_MASTER_KEY"

// OpenStore opens (creating it if needed) the default store of data directory dir: bbolt at
// dir/StoreFile. An error says when another process holds the file.
func OpenStore(dir string, opts *BoltOptions) (storage.Hosted, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	s, err := bolt.OpenSeam(filepath.Join(dir, StoreFile), opts)
	if err != nil {
		return nil, fmt.Errorf("%w (is svc serve running on this data directory? it holds the directory; stop it first)", err)
	}
	return s, nil
}

// OpenStoppedStore opens the store of an existing data directory whose server is not
// running, for offline tools (a scrub, a reindex): a directory with no store is an error,
// not a new directory.
func OpenStoppedStore(dir string) (storage.Hosted, error) {
	if _, err := os.Stat(filepath.Join(dir, StoreFile)); err != nil {
		return nil, fmt.Errorf("no svc data directory at %s: %w", dir, err)
	}
	return OpenStore(dir, nil)
}

// LoadMasterKey returns the master key of data directory dir, every other key derives from:
// from MasterKeyEnv when set, else from keyFile ("" means dir/MasterKeyFile). A new key is
// made only for a new directory: when the directory already holds a store, a missing key file
// is an error naming it and the way to recover, never a silent new key (which would orphan
// every sealed secret and vault key).
func LoadMasterKey(dir, keyFile string) ([]byte, error) {
	if v := strings.TrimSpace(os.Getenv(MasterKeyEnv)); v != "" {
		key, err := base64.StdEncoding.DecodeString(v)
		if err != nil || len(key) != 32 {
			return nil, fmt.Errorf("%s: want 32 bytes in base64", MasterKeyEnv)
		}
		return key, nil
	}
	if keyFile == "" {
		keyFile = filepath.Join(dir, MasterKeyFile)
	}
	if err := checkNoRotationPending(dir, keyFile); err != nil {
		return nil, err
	}
	if _, err := os.Stat(keyFile); errors.Is(err, fs.ErrNotExist) && holdsData(dir) {
		return nil, fmt.Errorf("master key %s is missing but %s holds data: restore the key file from your backup "+
			"(or set %s), then start again; svc will not make a new key, which would make the data "+
			"unreadable", keyFile, dir, MasterKeyEnv)
	}
	return platform.LoadMasterKey(keyFile)
}

// OpenReceiptKeys opens the receipt signing keys of data directory dir, making the first key
// only while store holds no receipt: when receipts were issued and the key file is gone, it is
// an error, so receipts already issued never silently stop verifying.
func OpenReceiptKeys(ctx context.Context, dir string, store storage.Store) (*receipt.Keyring, error) {
	keys := filepath.Join(dir, ReceiptKeysDir)
	if _, err := os.Stat(filepath.Join(keys, receipt.KeyFile)); errors.Is(err, fs.ErrNotExist) {
		if err := checkNoReceipts(ctx, store, filepath.Join(keys, receipt.KeyFile)); err != nil {
			return nil, err
		}
	}
	return receipt.OpenKeyring(keys)
}

// holdsData reports whether dir holds a store with records in it.
func holdsData(dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, StoreFile))
	return err == nil && fi.Size() > 0
}

// OpenStoppedVault opens the store and the vault of an existing data directory whose server
// is not running, for offline tools (coverage, a scrub): on the backends given (nil: local disk
// under dir/vault). Close the vault, then the store.
func OpenStoppedVault(dir string, hot, cold backend.Backend) (*vault.Vault, storage.Hosted, error) {
	st, master, err := openStoppedWithKey(dir)
	if err != nil {
		return nil, nil, err
	}
	v, err := OpenVault(dir, st.VaultMeta(), master, &vault.Options{Hot: hot, Cold: cold})
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return v, st, nil
}
