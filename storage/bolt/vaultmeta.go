package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	bbolt "go.etcd.io/bbolt"

	"svc.dev/svc/vault"
)

// Buckets of the vault's records.
const (
	bVaultObjects = "vault_objects"
	bVaultBlobs   = "vault_blobs"
	bVaultPacks   = "vault_packs"
	bVaultKeys    = "vault_keys"
)

// VaultMeta is the vault's records on bbolt (it implements vault.Meta). Updates go through
// a group commit (batch, group.go), so concurrent small commits share one transaction and one fsync.
type VaultMeta struct{ db *DB }

// VaultMeta returns the vault's record store on this database.
func (db *DB) VaultMeta() *VaultMeta { return &VaultMeta{db: db} }

var (
	_ vault.Meta     = (*VaultMeta)(nil)
	_ vault.KeyStore = (*VaultMeta)(nil)
)

// View implements vault.Meta.
func (m *VaultMeta) View(ctx context.Context, tenant string, fn func(vault.MetaTx) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return m.db.view(func(tx *bbolt.Tx) error { return fn(&metaTx{tx: tx, tenant: tenant}) })
}

// Update implements vault.Meta.
func (m *VaultMeta) Update(ctx context.Context, tenant string, fn func(vault.MetaTx) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return m.db.batch(func(tx *bbolt.Tx) error { return fn(&metaTx{tx: tx, tenant: tenant}) })
}

// WrappedKey implements vault.KeyStore.
func (m *VaultMeta) WrappedKey(ctx context.Context, tenant string) ([]byte, error) {
	var out []byte
	err := m.db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bVaultKeys))
		if b == nil {
			return vault.ErrNotFound
		}
		v := b.Get([]byte(tenant))
		if v == nil {
			return vault.ErrNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// CreateWrappedKey implements vault.KeyStore.
func (m *VaultMeta) CreateWrappedKey(ctx context.Context, tenant string, wrapped []byte) ([]byte, error) {
	var out []byte
	err := m.db.update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, bVaultKeys)
		if err != nil {
			return err
		}
		if v := b.Get([]byte(tenant)); v != nil {
			out = append([]byte(nil), v...)
			return nil
		}
		out = append([]byte(nil), wrapped...)
		return b.Put([]byte(tenant), out)
	})
	return out, err
}

// ReplaceWrappedKeys implements vault.RewrapStore: the wrapped keys of several tenants, each
// replaced only if it is still the one the caller read, all in one transaction or none.
func (m *VaultMeta) ReplaceWrappedKeys(ctx context.Context, rs []vault.KeyReplacement) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return m.db.update(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bVaultKeys))
		for _, r := range rs {
			if b == nil || !bytes.Equal(b.Get([]byte(r.Tenant)), r.Old) {
				return fmt.Errorf("the data key of %q changed: %w", r.Tenant, vault.ErrInvalidState)
			}
		}
		for _, r := range rs {
			if err := b.Put([]byte(r.Tenant), bytes.Clone(r.New)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Tenants lists the tenants that have a vault (a data key), in order.
func (m *VaultMeta) Tenants(ctx context.Context) ([]string, error) {
	var out []string
	err := m.db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bVaultKeys))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			if err := ctxErr(ctx); err != nil {
				return err
			}
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

// metaTx is one transaction on a tenant's vault records.
type metaTx struct {
	tx     *bbolt.Tx
	tenant string
}

func (t *metaTx) key(k string) []byte { return []byte(t.tenant + "/" + k) }

func (t *metaTx) get(name, k string, v any) error {
	b := t.tx.Bucket([]byte(name))
	if b == nil {
		return &missing{name, k}
	}
	data := b.Get(t.key(k))
	if data == nil {
		return &missing{name, k}
	}
	return json.Unmarshal(data, v)
}

// missing is a record not found: vault.ErrNotFound, with what was looked up. The vault asks
// for records it expects to be missing (a new object's, a new blob's) several times per
// object, so the message is only formatted if someone reads it.
type missing struct{ bucket, key string }

func (e *missing) Error() string { return e.bucket + " " + e.key + ": " + vault.ErrNotFound.Error() }
func (e *missing) Unwrap() error { return vault.ErrNotFound }

func (t *metaTx) put(name, k string, v any) error {
	b, err := bucket(t.tx, name)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return b.Put(t.key(k), data)
}

func (t *metaTx) del(name, k string) error {
	b, err := bucket(t.tx, name)
	if errors.Is(err, errNoBucket) {
		return nil
	}
	if err != nil {
		return err
	}
	return b.Delete(t.key(k))
}

// scan calls fn for the tenant's records of a bucket with keys greater than after.
func (t *metaTx) scan(name, after string, fn func(v []byte) (bool, error)) error {
	b := t.tx.Bucket([]byte(name))
	if b == nil {
		return nil
	}
	prefix := []byte(t.tenant + "/")
	c := b.Cursor()
	k, v := c.Seek(append(append([]byte(nil), prefix...), after...))
	if after != "" && k != nil && string(k) == t.tenant+"/"+after {
		k, v = c.Next()
	}
	for ; k != nil && prefixed(k, prefix); k, v = c.Next() {
		more, err := fn(v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

func (t *metaTx) Object(id string) (vault.Object, error) {
	var o vault.Object
	return o, t.get(bVaultObjects, id, &o)
}

// PutObject stores o and, when the change matters to what is derived from the vault (it
// becomes or stops being searchable), announces it in the vault's change feed in the same
// transaction (VaultChanges).
func (t *metaTx) PutObject(o vault.Object) error {
	var prev *vault.Object
	if b := t.tx.Bucket([]byte(bVaultObjects)); b != nil {
		if data := b.Get(t.key(o.ID)); data != nil {
			var p struct {
				State vault.State `json:"state"`
			}
			if err := json.Unmarshal(data, &p); err != nil {
				return fmt.Errorf("vault object %s: %w", o.ID, err)
			}
			prev = &vault.Object{State: p.State}
		}
	}
	if err := t.put(bVaultObjects, o.ID, o); err != nil {
		return err
	}
	if announced(prev, o) {
		if err := logChange(t.tx, t.tenant, o.ID); err != nil {
			return err
		}
	}
	return indexOwner(t.tx, t.tenant, o.ID)
}

func (t *metaTx) Objects(after string, fn func(vault.Object) bool) error {
	return t.scan(bVaultObjects, after, func(v []byte) (bool, error) {
		var o vault.Object
		if err := json.Unmarshal(v, &o); err != nil {
			return false, err
		}
		return fn(o), nil
	})
}

func (t *metaTx) Blob(d vault.Digest) (vault.Blob, error) {
	var b vault.Blob
	return b, t.get(bVaultBlobs, d.String(), &b)
}

func (t *metaTx) PutBlob(b vault.Blob) error { return t.put(bVaultBlobs, b.Digest.String(), b) }

func (t *metaTx) DeleteBlob(d vault.Digest) error { return t.del(bVaultBlobs, d.String()) }

func (t *metaTx) Blobs(after vault.Digest, fn func(vault.Blob) bool) error {
	start := ""
	if !after.IsZero() {
		start = after.String()
	}
	return t.scan(bVaultBlobs, start, func(v []byte) (bool, error) {
		var b vault.Blob
		if err := json.Unmarshal(v, &b); err != nil {
			return false, err
		}
		return fn(b), nil
	})
}

func (t *metaTx) Pack(name string) (vault.Pack, error) {
	var p vault.Pack
	return p, t.get(bVaultPacks, name, &p)
}

func (t *metaTx) PutPack(p vault.Pack) error { return t.put(bVaultPacks, p.Name, p) }

func (t *metaTx) DeletePack(name string) error { return t.del(bVaultPacks, name) }
