// Package vaulttest supports tests of the vault and of what uses it: an
// in-memory Meta and KeyStore, a helper that opens a vault on a temporary
// directory, and RunMeta, the conformance suite for Meta implementations
// (the server's bbolt one runs it too).
package vaulttest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"svc.dev/svc/vault"
)

// Meta is a vault.Meta in memory. Records are kept JSON-encoded, as a
// database would keep them, so a test sees exactly what survives storage
// and never shares memory with the vault.
type Meta struct {
	mu      sync.RWMutex
	tenants map[string]*records
	updates atomic.Int64
	path    string // NewFileMeta: persisted here after every Update
	// BeforeCommit, if set, runs at the end of every Update before its
	// writes are applied; an error fails the Update (fault injection).
	BeforeCommit func(tenant string) error
}

type records struct {
	objects map[string][]byte
	blobs   map[vault.Digest][]byte
	packs   map[string][]byte
}

// NewMeta returns an empty Meta.
func NewMeta() *Meta { return &Meta{tenants: map[string]*records{}} }

// Updates returns how many Updates committed.
func (m *Meta) Updates() int64 { return m.updates.Load() }

func (m *Meta) recs(tenant string) *records {
	r := m.tenants[tenant]
	if r == nil {
		r = &records{objects: map[string][]byte{}, blobs: map[vault.Digest][]byte{}, packs: map[string][]byte{}}
		m.tenants[tenant] = r
	}
	return r
}

// View implements vault.Meta.
func (m *Meta) View(ctx context.Context, tenant string, fn func(vault.MetaTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	r := m.tenants[tenant]
	if r == nil {
		r = &records{}
	}
	return fn(&tx{base: r})
}

// Update implements vault.Meta.
func (m *Meta) Update(ctx context.Context, tenant string, fn func(vault.MetaTx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := &tx{base: m.recs(tenant), write: true, objects: map[string][]byte{}, blobs: map[vault.Digest][]byte{}, packs: map[string][]byte{}}
	if err := fn(t); err != nil {
		return err
	}
	if m.BeforeCommit != nil {
		if err := m.BeforeCommit(tenant); err != nil {
			return err
		}
	}
	apply(t.base.objects, t.objects)
	apply(t.base.blobs, t.blobs)
	apply(t.base.packs, t.packs)
	m.updates.Add(1)
	if m.path != "" {
		return m.persist()
	}
	return nil
}

// fileRecords is the file form of a Meta.
type fileRecords struct {
	Objects map[string]json.RawMessage       `json:"objects"`
	Blobs   map[vault.Digest]json.RawMessage `json:"blobs"`
	Packs   map[string]json.RawMessage       `json:"packs"`
}

// NewFileMeta returns a Meta that keeps its records in a file, written
// durably (temporary file, fsync, rename, directory fsync) at the end of
// every Update, and loads them if the file exists: a Meta that survives a
// crash of the process, for crash tests.
func NewFileMeta(path string) (*Meta, error) {
	m := NewMeta()
	m.path = path
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, nil
	}
	if err != nil {
		return nil, err
	}
	var all map[string]fileRecords
	if err := json.Unmarshal(raw, &all); err != nil {
		return nil, fmt.Errorf("vaulttest: %s: %w", path, err)
	}
	for tenant, f := range all {
		r := m.recs(tenant)
		for k, v := range f.Objects {
			r.objects[k] = v
		}
		for k, v := range f.Blobs {
			r.blobs[k] = v
		}
		for k, v := range f.Packs {
			r.packs[k] = v
		}
	}
	return m, nil
}

func (m *Meta) persist() error {
	all := map[string]fileRecords{}
	for tenant, r := range m.tenants {
		f := fileRecords{Objects: map[string]json.RawMessage{}, Blobs: map[vault.Digest]json.RawMessage{}, Packs: map[string]json.RawMessage{}}
		for k, v := range r.objects {
			f.Objects[k] = v
		}
		for k, v := range r.blobs {
			f.Blobs[k] = v
		}
		for k, v := range r.packs {
			f.Packs[k] = v
		}
		all[tenant] = f
	}
	raw, err := json.Marshal(all)
	if err != nil {
		return err
	}
	return writeDurably(m.path, raw)
}

// writeDurably replaces the file at path with raw: a temporary file, fsync, rename,
// directory fsync.
func writeDurably(path string, raw []byte) error {
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if _, err := f.Write(raw); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

func apply[K comparable](base, overlay map[K][]byte) {
	for k, v := range overlay {
		if v == nil {
			delete(base, k)
		} else {
			base[k] = v
		}
	}
}

// tx reads through its overlay (nil value: deleted) to the base.
type tx struct {
	base    *records
	write   bool
	objects map[string][]byte
	blobs   map[vault.Digest][]byte
	packs   map[string][]byte
}

var errReadOnly = errors.New("vaulttest: write in a read-only transaction")

func get[K comparable, T any](overlay, base map[K][]byte, k K, what string) (T, error) {
	var v T
	raw, ok := overlay[k]
	if !ok {
		raw = base[k]
	}
	if raw == nil {
		return v, fmt.Errorf("%s %v: %w", what, k, vault.ErrNotFound)
	}
	err := json.Unmarshal(raw, &v)
	return v, err
}

func put[K comparable](t *tx, overlay map[K][]byte, k K, v any) error {
	if !t.write {
		return errReadOnly
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	overlay[k] = raw
	return nil
}

func del[K comparable](t *tx, overlay map[K][]byte, k K) error {
	if !t.write {
		return errReadOnly
	}
	overlay[k] = nil
	return nil
}

// each calls fn with the records whose keys sort after after, in order.
func each[K comparable, T any](overlay, base map[K][]byte, after K, less func(a, b K) int, fn func(T) bool) error {
	var keys []K
	for k := range base {
		if less(k, after) > 0 {
			keys = append(keys, k)
		}
	}
	for k, v := range overlay {
		if _, inBase := base[k]; !inBase && v != nil && less(k, after) > 0 {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, less)
	for _, k := range keys {
		raw, ok := overlay[k]
		if !ok {
			raw = base[k]
		}
		if raw == nil {
			continue
		}
		var v T
		if err := json.Unmarshal(raw, &v); err != nil {
			return err
		}
		if !fn(v) {
			return nil
		}
	}
	return nil
}

func (t *tx) Object(id string) (vault.Object, error) {
	return get[string, vault.Object](t.objects, t.base.objects, id, "vault object")
}
func (t *tx) PutObject(o vault.Object) error { return put(t, t.objects, o.ID, o) }
func (t *tx) Objects(after string, fn func(vault.Object) bool) error {
	return each(t.objects, t.base.objects, after, strings.Compare, fn)
}
func (t *tx) Blob(d vault.Digest) (vault.Blob, error) {
	return get[vault.Digest, vault.Blob](t.blobs, t.base.blobs, d, "blob")
}
func (t *tx) PutBlob(b vault.Blob) error      { return put(t, t.blobs, b.Digest, b) }
func (t *tx) DeleteBlob(d vault.Digest) error { return del(t, t.blobs, d) }
func (t *tx) Pack(name string) (vault.Pack, error) {
	return get[string, vault.Pack](t.packs, t.base.packs, name, "pack")
}
func (t *tx) PutPack(p vault.Pack) error   { return put(t, t.packs, p.Name, p) }
func (t *tx) DeletePack(name string) error { return del(t, t.packs, name) }
func (t *tx) Blobs(after vault.Digest, fn func(vault.Blob) bool) error {
	return each(t.blobs, t.base.blobs, after, func(a, b vault.Digest) int { return strings.Compare(string(a[:]), string(b[:])) }, fn)
}

// KeyStore is a vault.KeyStore in memory.
type KeyStore struct {
	mu   sync.Mutex
	keys map[string][]byte
	path string // when set, every change is written there durably
}

// NewKeyStore returns an empty KeyStore.
func NewKeyStore() *KeyStore { return &KeyStore{keys: map[string][]byte{}} }

// NewFileKeyStore returns a KeyStore that keeps its keys in a file, written durably
// (temporary file, fsync, rename, directory fsync) on every change, and loads them if the
// file exists: a key store that survives a crash of the process.
func NewFileKeyStore(path string) (*KeyStore, error) {
	k := NewKeyStore()
	k.path = path
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return k, nil
	}
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &k.keys); err != nil {
		return nil, fmt.Errorf("vaulttest: %s: %w", path, err)
	}
	return k, nil
}

func (k *KeyStore) persist() error {
	if k.path == "" {
		return nil
	}
	raw, err := json.Marshal(k.keys)
	if err != nil {
		return err
	}
	return writeDurably(k.path, raw)
}

// WrappedKey implements vault.KeyStore.
func (k *KeyStore) WrappedKey(_ context.Context, tenant string) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	w, ok := k.keys[tenant]
	if !ok {
		return nil, fmt.Errorf("key of %q: %w", tenant, vault.ErrNotFound)
	}
	return slices.Clone(w), nil
}

// CreateWrappedKey implements vault.KeyStore.
func (k *KeyStore) CreateWrappedKey(_ context.Context, tenant string, wrapped []byte) ([]byte, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if w, ok := k.keys[tenant]; ok {
		return slices.Clone(w), nil
	}
	k.keys[tenant] = slices.Clone(wrapped)
	if err := k.persist(); err != nil {
		delete(k.keys, tenant)
		return nil, err
	}
	return slices.Clone(wrapped), nil
}

// Tenants implements vault.RewrapStore.
func (k *KeyStore) Tenants(context.Context) ([]string, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Sorted(maps.Keys(k.keys)), nil
}

// ReplaceWrappedKeys implements vault.RewrapStore.
func (k *KeyStore) ReplaceWrappedKeys(_ context.Context, rs []vault.KeyReplacement) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, r := range rs {
		if w, ok := k.keys[r.Tenant]; !ok || !bytes.Equal(w, r.Old) {
			return fmt.Errorf("key of %q changed: %w", r.Tenant, vault.ErrInvalidState)
		}
	}
	old := maps.Clone(k.keys)
	for _, r := range rs {
		k.keys[r.Tenant] = slices.Clone(r.New)
	}
	if err := k.persist(); err != nil {
		k.keys = old
		return err
	}
	return nil
}

// Set replaces a tenant's wrapped key (to test tampering).
func (k *KeyStore) Set(tenant string, wrapped []byte) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.keys[tenant] = slices.Clone(wrapped)
	_ = k.persist()
}

// KEK is the key-encryption key Open uses.
var KEK = vault.KEK{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32}

// Open opens a vault on a fresh temporary directory with an in-memory
// Meta and KeyStore, closed when the test ends.
func Open(t testing.TB, opts *vault.Options) *vault.Vault {
	t.Helper()
	v, err := vault.Open(t.TempDir(), NewMeta(), NewKeyStore(), KEK, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}
