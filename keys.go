package svc

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/internal/atomicfile"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
)

// The files of a master key rotation, beside the master key file.
const (
	// NextKeySuffix names the new master key while a rotation runs ("master.key.next").
	NextKeySuffix = ".next"
	// PreviousKeySuffix names the master key a finished rotation replaced
	// ("master.key.previous"), kept so that a backup taken before it can still be read.
	PreviousKeySuffix = ".previous"
)

// ErrRotationPending is returned (wrapped) when a data directory's master key rotation was
// interrupted: run it again (RotateMasterKey) to finish it.
var ErrRotationPending = errors.New("a master key rotation is in progress")

// RotationReport says what RotateMasterKey did.
type RotationReport struct {
	// Vault is the re-wrapping of the tenants' data keys under the new key-encryption key.
	Vault vault.RewrapReport
	// Secrets is how many sealed secrets (source and destination configurations, webhook
	// signing secrets) were sealed again under the new key; a resumed run counts only those
	// left to do.
	Secrets int
	// Resumed is true when the run finished a rotation an earlier run began.
	Resumed bool
}

// RotateMasterKey replaces the master key of a stopped data directory (dir/master.key) and
// everything that depends on it: every tenant's vault data key is re-wrapped under the new
// key-encryption key (vault.RewrapKeys), and every sealed secret is sealed again. The new key
// is written first, beside the old one (master.key.next), so a crash at any instant loses
// nothing: the old key still opens what was not yet moved, the new one what was, and running
// it again finishes the rotation (while it is pending, Open refuses the directory). At the end
// the new key takes the old one's place and the old one is kept as master.key.previous.
// Cursors and signed export URLs issued under the old key stop working.
//
// A key from the environment (MasterKeyEnv) cannot be rotated here: rotate it where it is kept.
func RotateMasterKey(ctx context.Context, dir string) (RotationReport, error) {
	var rep RotationReport
	if os.Getenv(MasterKeyEnv) != "" {
		return rep, fmt.Errorf("the master key comes from %s: rotate it where it is kept", MasterKeyEnv)
	}
	keyFile := filepath.Join(dir, MasterKeyFile)
	next := keyFile + NextKeySuffix
	if _, err := os.Stat(keyFile); errors.Is(err, fs.ErrNotExist) {
		// Stopped between the last two renames: the old key is kept, the new one not yet in
		// place. Put it there.
		_, nerr := os.Stat(next)
		_, perr := os.Stat(keyFile + PreviousKeySuffix)
		if nerr != nil || perr != nil {
			return rep, fmt.Errorf("master key %s is missing: restore it from your backup", keyFile)
		}
		if err := os.Rename(next, keyFile); err != nil {
			return rep, fmt.Errorf("install the new master key: %w", err)
		}
		return RotationReport{Resumed: true}, atomicfile.SyncDir(dir)
	}
	oldKey, err := platform.LoadMasterKey(keyFile) // exists: read, never made
	if err != nil {
		return rep, err
	}
	newKey, err := os.ReadFile(next)
	switch {
	case err == nil:
		rep.Resumed = true
	case errors.Is(err, fs.ErrNotExist):
		newKey = make([]byte, 32)
		if _, err := rand.Read(newKey); err != nil {
			return rep, fmt.Errorf("generate master key: %w", err)
		}
		if err := atomicfile.Create(next, newKey, 0o600); err != nil {
			return rep, err
		}
	default:
		return rep, fmt.Errorf("read %s: %w", next, err)
	}
	st, err := OpenStoppedStore(dir)
	if err != nil {
		return rep, err
	}
	defer st.Close()
	resumed := rep.Resumed
	if rep, err = rewrapStore(ctx, st, oldKey, newKey); err != nil {
		return rep, err
	}
	rep.Resumed = resumed
	// The new key takes the old one's place; the old one stays as .previous.
	if err := os.Rename(keyFile, keyFile+PreviousKeySuffix); err != nil {
		return rep, fmt.Errorf("keep the previous master key: %w", err)
	}
	if err := os.Rename(next, keyFile); err != nil {
		return rep, fmt.Errorf("install the new master key: %w", err)
	}
	if err := atomicfile.SyncDir(dir); err != nil {
		return rep, err
	}
	return rep, nil
}

// RotateStoreMasterKey re-wraps and re-seals everything a store keeps under master key oldKey
// so that newKey opens it: every tenant's vault data key, every sealed configuration and
// webhook secret, and (in a store shared by replicas) the receipt key set. It is the master
// key rotation of a cluster, whose key lives outside any data directory: stop every replica,
// run it, then start them with the new key. A run stopped midway is finished by running it
// again with the same keys (what the new key opens already is left alone). Cursors and signed
// export URLs issued under the old key stop working.
func RotateStoreMasterKey(ctx context.Context, st storage.Hosted, oldKey, newKey []byte) (RotationReport, error) {
	return rewrapStore(ctx, st, oldKey, newKey)
}

// rewrapStore moves what st keeps under oldKey to newKey.
func rewrapStore(ctx context.Context, st storage.Hosted, oldKey, newKey []byte) (RotationReport, error) {
	var rep RotationReport
	oldKeys, err := platform.NewKeyring(oldKey)
	if err != nil {
		return rep, err
	}
	newKeys, err := platform.NewKeyring(newKey)
	if err != nil {
		return rep, err
	}
	var oldKEK, newKEK vault.KEK
	copy(oldKEK[:], oldKeys.Derive("vault-kek"))
	copy(newKEK[:], newKeys.Derive("vault-kek"))
	if rep.Vault, err = vault.RewrapKeys(ctx, st.VaultMeta(), newKEK, []vault.KEK{oldKEK}, nil); err != nil {
		return rep, fmt.Errorf("re-wrap the vault's data keys: %w", err)
	}
	from, err := platform.NewSealer(oldKeys.Derive("sealed-secrets"))
	if err != nil {
		return rep, err
	}
	to, err := platform.NewSealer(newKeys.Derive("sealed-secrets"))
	if err != nil {
		return rep, err
	}
	if rep.Secrets, err = resealSecrets(ctx, st, from, to); err != nil {
		return rep, err
	}
	if sec, ok := st.(storage.Secrets); ok {
		n, err := resealReceiptKeys(ctx, sec, oldKey, newKey)
		if err != nil {
			return rep, err
		}
		rep.Secrets += n
	}
	return rep, nil
}

// resealReceiptKeys seals a shared store's receipt key set under the new master key's
// envelope; one the new key opens already (an earlier run's) is left alone.
func resealReceiptKeys(ctx context.Context, sec storage.Secrets, oldKey, newKey []byte) (int, error) {
	sealed, v, err := sec.Secret(ctx, ReceiptKeysSecret)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("receipt keys: %w", err)
	}
	oldEnv, err := platform.NewLocalEnvelope(oldKey)
	if err != nil {
		return 0, err
	}
	newEnv, err := platform.NewLocalEnvelope(newKey)
	if err != nil {
		return 0, err
	}
	if _, err := platform.OpenWithEnvelope(ctx, newEnv, sealed, receiptKeysAAD); err == nil {
		return 0, nil
	}
	plain, err := platform.OpenWithEnvelope(ctx, oldEnv, sealed, receiptKeysAAD)
	if err != nil {
		return 0, fmt.Errorf("receipt keys: %w", err)
	}
	if sealed, err = platform.SealWithEnvelope(ctx, newEnv, plain, receiptKeysAAD); err != nil {
		return 0, fmt.Errorf("receipt keys: %w", err)
	}
	if _, err := sec.PutSecret(ctx, ReceiptKeysSecret, sealed, v); err != nil {
		return 0, fmt.Errorf("receipt keys: %w (is a replica still running? stop them all first)", err)
	}
	return 1, nil
}

// resealSecrets seals every source's and destination's configuration and every webhook's
// signing secrets again, from one sealer to the other; what to opens already is left alone.
func resealSecrets(ctx context.Context, st storage.Hosted, from, to *platform.Sealer) (int, error) {
	n := 0
	reseal := func(tenant, id string) error {
		sealed, err := st.Sources().Config(ctx, tenant, id)
		if errors.Is(err, storage.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		aad := []byte(tenant + "/" + id)
		if _, err := to.Open(sealed, aad); err == nil {
			return nil // done by an earlier run
		}
		plain, err := from.Open(sealed, aad)
		if err != nil {
			return fmt.Errorf("configuration of %s: %w", id, err)
		}
		if sealed, err = to.Seal(plain, aad); err != nil {
			return err
		}
		n++
		return st.Sources().PutConfig(ctx, tenant, id, sealed)
	}
	type ref struct{ tenant, id string }
	var refs []ref
	res := st.Resources()
	if err := res.Sources().ScanAll(ctx, func(tenant, id string, _ *svcv1.Source) bool {
		refs = append(refs, ref{tenant, id})
		return true
	}); err != nil {
		return n, err
	}
	if err := res.Destinations().ScanAll(ctx, func(tenant, id string, _ *svcv1.Destination) bool {
		refs = append(refs, ref{tenant, id})
		return true
	}); err != nil {
		return n, err
	}
	for _, r := range refs { // outside the scans' reads: a write never runs inside one
		if err := reseal(r.tenant, r.id); err != nil {
			return n, err
		}
	}
	hooks, err := st.Webhooks().AllWebhooks(ctx)
	if err != nil {
		return n, err
	}
	for _, h := range hooks {
		var changed bool
		_, err := st.Webhooks().UpdateWebhook(ctx, h.ID, func(ep *webhook.Endpoint) error {
			var err error
			changed, err = webhook.Reseal(ep, from, to)
			return err
		})
		if err != nil {
			return n, err
		}
		if changed {
			n++
		}
	}
	return n, nil
}

// checkNoRotationPending refuses a data directory whose master key rotation was interrupted.
func checkNoRotationPending(dir, keyFile string) error {
	if keyFile == "" {
		keyFile = filepath.Join(dir, MasterKeyFile)
	}
	if _, err := os.Stat(keyFile + NextKeySuffix); err == nil {
		return fmt.Errorf("%w on %s (%s exists): run svc keys rotate again to finish it", ErrRotationPending, dir, keyFile+NextKeySuffix)
	}
	return nil
}

// RotateReceiptKey makes a new receipt signing key the current one in a stopped data
// directory; the old keys stay in the key set, so receipts already issued keep verifying. It
// returns the new key's id.
func RotateReceiptKey(ctx context.Context, dir string) (string, error) {
	st, err := OpenStoppedStore(dir) // holds the directory: no server signs meanwhile
	if err != nil {
		return "", err
	}
	defer st.Close()
	k, err := OpenReceiptKeys(ctx, dir, st)
	if err != nil {
		return "", err
	}
	return k.Rotate()
}
