package bolt

import (
	"context"
	"encoding/binary"
	"fmt"
	"strings"

	bbolt "go.etcd.io/bbolt"

	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
)

// bVaultChanges is the vault's change feed: one entry per vault object to (re)consider, written
// in the transaction of the change itself.
const bVaultChanges = "vault_changes"

// VaultChanges is a durable outbox of changed vault objects, for what is derived from the vault
// (the search index). An entry is written in the same transaction as the change it announces:
// by the vault's records (VaultMeta: an object committed, moved between tiers or deleted) or,
// for an object whose manifest the caller stores after the commit, by that manifest's
// transaction (Extra). A crash therefore cannot lose an announcement: what was stored is in
// the feed. A consumer reads entries in order (Read), applies them, then deletes them (Ack); an
// entry applied twice (a crash between the two) must be harmless.
type VaultChanges struct{ db *DB }

// VaultChanges returns the vault's change feed on this database.
func (db *DB) VaultChanges() *VaultChanges { return &VaultChanges{db: db} }

// VaultChange is one entry of the feed: a vault object of a tenant to index or remove again.
type VaultChange = storage.VaultChange

var _ storage.VaultChanges = (*VaultChanges)(nil)

// logChange appends an entry to the feed in tx.
func logChange(tx *bbolt.Tx, tenant, objectID string) error {
	b, err := bucket(tx, bVaultChanges)
	if err != nil {
		return err
	}
	seq, err := b.NextSequence()
	if err != nil {
		return err
	}
	return b.Put(binary.BigEndian.AppendUint64(nil, seq), []byte(tenant+"\x00"+objectID))
}

// Extra announces a vault object in the transaction of another change (the object's manifest).
func (f *VaultChanges) Extra(tenant, objectID string) Extra {
	return Extra{func(tx *bbolt.Tx) error { return logChange(tx, tenant, objectID) }}
}

// Read returns up to limit entries after seq after, in order, and the feed's last sequence
// number (every entry written so far is at most that).
func (f *VaultChanges) Read(ctx context.Context, after uint64, limit int) ([]VaultChange, uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, 0, err
	}
	var out []VaultChange
	var last uint64
	err := f.db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bVaultChanges))
		if b == nil {
			return nil
		}
		last = b.Sequence()
		c := b.Cursor()
		for k, v := c.Seek(binary.BigEndian.AppendUint64(nil, after+1)); k != nil && len(out) < limit; k, v = c.Next() {
			tenant, id, ok := strings.Cut(string(v), "\x00")
			if len(k) != 8 || !ok {
				return fmt.Errorf("vault change feed: bad entry %x", k)
			}
			out = append(out, VaultChange{Seq: binary.BigEndian.Uint64(k), Tenant: tenant, ObjectID: id})
		}
		return nil
	})
	return out, last, err
}

// Last returns the feed's last sequence number: an entry written before the call has a
// sequence number at most this.
func (f *VaultChanges) Last(ctx context.Context) (uint64, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	var last uint64
	err := f.db.view(func(tx *bbolt.Tx) error {
		if b := tx.Bucket([]byte(bVaultChanges)); b != nil {
			last = b.Sequence()
		}
		return nil
	})
	return last, err
}

// Ack deletes every entry up to and including seq upTo (they were applied).
func (f *VaultChanges) Ack(ctx context.Context, upTo uint64) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return f.db.batch(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bVaultChanges))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		for k, _ := c.First(); k != nil && binary.BigEndian.Uint64(k) <= upTo; k, _ = c.First() {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		return nil
	})
}

// announced is the seam's rule (storage.FeedsVaultChange).
func announced(prev *vault.Object, o vault.Object) bool { return storage.FeedsVaultChange(prev, o) }
