package receipt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// KeyStore keeps a keyring's key file (its JSON, private keys included) where several
// processes share it: a database that replicas of one deployment use, so that every replica
// signs with the same keys and publishes the same key set. A KeyStore must keep the bytes
// sealed at rest (they hold the private keys) and hand them back exactly.
type KeyStore interface {
	// LoadKeys returns the key file and its version, or an error wrapping fs.ErrNotExist when
	// none is stored.
	LoadKeys(ctx context.Context) (data []byte, version int64, err error)
	// StoreKeys stores data if the stored version is still version (0: only when none is
	// stored) and returns the new version; when another writer stored first, it stores
	// nothing and returns an error wrapping ErrKeysChanged.
	StoreKeys(ctx context.Context, data []byte, version int64) (int64, error)
}

// ErrKeysChanged is returned (wrapped) when a KeyStore's key file changed since it was read:
// another process rotated (or made) the keys first. Reload, then try again.
var ErrKeysChanged = errors.New("receipt keys changed meanwhile")

// OpenStoredKeyring opens the keyring kept in ks, storing a first key when ks holds none
// (when several processes start at once, one key wins and all use it). A key made current by
// Rotate signs only activation after the rotation; every process sharing ks must Reload more
// often than that, so that each publishes a key before any signs with it. where describes ks
// in errors ("the database").
func OpenStoredKeyring(ctx context.Context, ks KeyStore, where string, activation time.Duration) (*Keyring, error) {
	k := &Keyring{path: where, store: ks, activation: activation}
	err := k.Reload(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		key, gerr := newStoredKey()
		if gerr != nil {
			return nil, gerr
		}
		_, err = k.storeKeys(ctx, keyFile{Version: 1, Current: key.Kid, Keys: []storedKey{key}}, 0)
		if err != nil && !errors.Is(err, ErrKeysChanged) {
			return nil, err
		}
		err = k.Reload(ctx) // ours, or the one another process stored first
	}
	if err != nil {
		return nil, err
	}
	return k, nil
}

// ImportKeyring stores the key file data (as KeyFileData reads it) in ks, which must hold
// none: moving a data directory's keys into a store shared by replicas. An error wrapping
// ErrKeysChanged says ks holds keys already.
func ImportKeyring(ctx context.Context, ks KeyStore, data []byte) error {
	if _, err := parseKeys(data, "the imported key file"); err != nil {
		return err
	}
	_, err := ks.StoreKeys(ctx, data, 0)
	return err
}

// KeyFileData returns the key file kept in dir (as OpenKeyring keeps it), checked as
// OpenKeyring checks it, for ImportKeyring; an error wraps fs.ErrNotExist when there is none.
func KeyFileData(dir string) ([]byte, error) {
	k := &Keyring{path: filepath.Join(dir, KeyFile)}
	if err := k.load(); err != nil {
		return nil, err
	}
	return os.ReadFile(k.path)
}

// KeyIDs returns the kids of every key the keyring holds, oldest first.
func (k *Keyring) KeyIDs() []string {
	k.mu.RLock()
	defer k.mu.RUnlock()
	out := make([]string, len(k.keys))
	for i, sk := range k.keys {
		out[i] = sk.Kid
	}
	return out
}

// Reload reads the keys again from where they are kept: in a KeyStore shared by replicas,
// what another process rotated. On error the keys do not change.
func (k *Keyring) Reload(ctx context.Context) error {
	if k.store == nil {
		return k.load()
	}
	data, v, err := k.store.LoadKeys(ctx)
	if err != nil {
		return err
	}
	kf, err := parseKeys(data, k.path)
	if err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if v == k.version && k.current != nil && !k.pendingDue() {
		return nil
	}
	if err := k.set(kf.Keys, kf.Current); err != nil {
		return err
	}
	k.version = v
	return nil
}

// pendingDue reports whether a pending key's time has come (set then makes it the current one).
func (k *Keyring) pendingDue() bool {
	return k.pending != nil && !time.Now().Before(k.pendAt)
}

func parseKeys(data []byte, where string) (keyFile, error) {
	kf, err := parseKeyFile(bytes.NewReader(data), where)
	if err != nil {
		return kf, err
	}
	var probe Keyring
	probe.path = where
	if err := probe.set(kf.Keys, kf.Current); err != nil {
		return kf, err
	}
	return kf, nil
}

// storeKeys stores kf in the KeyStore over version and returns the new version.
func (k *Keyring) storeKeys(ctx context.Context, kf keyFile, version int64) (int64, error) {
	data, err := json.MarshalIndent(kf, "", "  ")
	if err != nil {
		return 0, err
	}
	v, err := k.store.StoreKeys(ctx, append(data, '\n'), version)
	if err != nil {
		return 0, fmt.Errorf("receipt keys: store in %s: %w", k.path, err)
	}
	return v, nil
}
