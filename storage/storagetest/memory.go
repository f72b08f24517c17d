package storagetest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/proto"

	"svc.dev/svc/storage"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/vaulttest"
)

// Memory is a storage.Store in memory, for tests: records are kept encoded, as a database
// would keep them, and every change (with its writes) is applied under one lock, so it is
// atomic. It shows the seam needs no particular database, and lets the embedding package be
// tested on a store that is not bbolt. Nothing survives the process.
type Memory struct {
	mu      sync.Mutex
	records map[string][]byte   // kind + "\x00" + tenant + "\x00" + id
	journal map[string][][]byte // tenant + "/" + execution id
	meta    vaultMeta
	feed    []storage.VaultChange // the vault's change feed, in order
	feedSeq uint64                // the feed's last sequence number
}

// vaultMeta is vaulttest's in-memory records and keys, whose updates append to the change
// feed (storage.FeedsVaultChange) before they return.
type vaultMeta struct {
	*vaulttest.Meta
	*vaulttest.KeyStore
	m *Memory
}

// Update runs fn on vaulttest's records and, once they are stored, appends the feed entries
// of the objects fn wrote. Nothing is lost by appending after the commit: nothing in memory
// survives a crash, and the entries are in the feed before Update returns.
func (v vaultMeta) Update(ctx context.Context, tenant string, fn func(vault.MetaTx) error) error {
	var changed []string
	err := v.Meta.Update(ctx, tenant, func(tx vault.MetaTx) error {
		changed = changed[:0] // fn may run more than once
		return fn(feedTx{tx, &changed})
	})
	if err != nil || len(changed) == 0 {
		return err
	}
	v.m.mu.Lock()
	defer v.m.mu.Unlock()
	for _, id := range changed {
		v.m.logChange(tenant, id)
	}
	return nil
}

// feedTx notes the objects whose writes feed the change feed.
type feedTx struct {
	vault.MetaTx
	changed *[]string
}

func (t feedTx) PutObject(o vault.Object) error {
	var prev *vault.Object
	if p, err := t.Object(o.ID); err == nil {
		prev = &p
	} else if !errors.Is(err, vault.ErrNotFound) {
		return err
	}
	if err := t.MetaTx.PutObject(o); err != nil {
		return err
	}
	if storage.FeedsVaultChange(prev, o) {
		*t.changed = append(*t.changed, o.ID)
	}
	return nil
}

// logChange appends an entry to the feed; m.mu is held.
func (m *Memory) logChange(tenant, objectID string) {
	m.feedSeq++
	m.feed = append(m.feed, storage.VaultChange{Seq: m.feedSeq, Tenant: tenant, ObjectID: objectID})
}

var _ storage.Store = (*Memory)(nil)

// NewMemory returns an empty store.
func NewMemory() *Memory {
	m := &Memory{records: map[string][]byte{}, journal: map[string][][]byte{}}
	m.meta = vaultMeta{vaulttest.NewMeta(), vaulttest.NewKeyStore(), m}
	return m
}

// memWrite is a Write of a Memory: applied with the lock held.
type memWrite struct {
	m     *Memory
	apply func() error
}

func (memWrite) StoreWrite() {}

func key(kind, tenant, id string) string { return kind + "\x00" + tenant + "\x00" + id }

func (m *Memory) own(ws []storage.Write) ([]memWrite, error) {
	out := make([]memWrite, 0, len(ws))
	for _, w := range ws {
		mw, ok := w.(memWrite)
		if !ok || mw.m != m {
			return nil, fmt.Errorf("storagetest: a write of type %T is not this store's", w)
		}
		out = append(out, mw)
	}
	return out, nil
}

// change runs fn and then the writes, atomically: a failure of either stores nothing.
func (m *Memory) change(ws []storage.Write, fn func() error) error {
	own, err := m.own(ws)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	saved, savedFeed, savedSeq := maps(m.records), slices.Clone(m.feed), m.feedSeq
	err = fn()
	for _, w := range own {
		if err != nil {
			break
		}
		err = w.apply()
	}
	if err != nil {
		m.records, m.feed, m.feedSeq = saved, savedFeed, savedSeq
	}
	return err
}

func maps(in map[string][]byte) map[string][]byte {
	out := make(map[string][]byte, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func (m *Memory) put(kind, tenant, id string, v proto.Message) error {
	b, err := proto.MarshalOptions{Deterministic: true}.Marshal(v)
	if err != nil {
		return err
	}
	m.records[key(kind, tenant, id)] = b
	return nil
}

func get[T proto.Message](m *Memory, kind, tenant, id string, v T) (T, error) {
	b, ok := m.records[key(kind, tenant, id)]
	if !ok {
		return v, fmt.Errorf("%s %s: %w", kind, id, storage.ErrNotFound)
	}
	return v, proto.Unmarshal(b, v)
}

// scan calls fn with the records of a kind and tenant in id order.
func scan[T proto.Message](m *Memory, kind, tenant string, newT func() T, fn func(id string, v T) bool) error {
	prefix := kind + "\x00" + tenant + "\x00"
	var keys []string
	for k := range m.records {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := newT()
		if err := proto.Unmarshal(m.records[k], v); err != nil {
			return err
		}
		if !fn(strings.TrimPrefix(k, prefix), v) {
			return nil
		}
	}
	return nil
}

// Close does nothing.
func (m *Memory) Close() error { return nil }

// Apply stores writes on their own, atomically.
func (m *Memory) Apply(_ context.Context, ws ...storage.Write) error {
	return m.change(ws, func() error { return nil })
}

// VaultChanged appends an entry to the change feed with the change it is passed to.
func (m *Memory) VaultChanged(tenant, objectID string) storage.Write {
	return memWrite{m: m, apply: func() error { m.logChange(tenant, objectID); return nil }}
}

// VaultChanges is the vault's change feed, kept in order in memory.
func (m *Memory) VaultChanges() storage.VaultChanges { return memFeed{m} }

type memFeed struct{ m *Memory }

func (f memFeed) Read(ctx context.Context, after uint64, limit int) ([]storage.VaultChange, uint64, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	i, _ := slices.BinarySearchFunc(f.m.feed, after+1, func(c storage.VaultChange, seq uint64) int { return cmp.Compare(c.Seq, seq) })
	out := slices.Clone(f.m.feed[i:min(len(f.m.feed), i+max(limit, 0))])
	return out, f.m.feedSeq, nil
}

func (f memFeed) Last(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	return f.m.feedSeq, nil
}

func (f memFeed) Ack(ctx context.Context, upTo uint64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	i, _ := slices.BinarySearchFunc(f.m.feed, upTo+1, func(c storage.VaultChange, seq uint64) int { return cmp.Compare(c.Seq, seq) })
	f.m.feed = slices.Delete(f.m.feed, 0, i)
	return nil
}

// Plans are stored whole; a header is a plan without its objects.
func (m *Memory) Plans() storage.Plans { return memPlans{m} }

// Executions are kept by id.
func (m *Memory) Executions() storage.Executions { return memExecutions{m} }

// Journal keeps each execution's entries in order.
func (m *Memory) Journal() storage.Journal { return memJournal{m} }

// Sources are kept by id, their configurations apart.
func (m *Memory) Sources() storage.Sources { return memSources{m} }

// Destinations are kept by id, their origins apart.
func (m *Memory) Destinations() storage.Destinations { return memDestinations{m} }

// Receipts are kept as bytes.
func (m *Memory) Receipts() storage.Receipts { return memReceipts{m} }

// Manifests are kept by asset id.
func (m *Memory) Manifests() storage.Manifests { return memManifests{m} }

// Events are kept by stream.
func (m *Memory) Events() storage.Events { return memEvents{m} }

// VaultMeta is vaulttest's in-memory Meta.
func (m *Memory) VaultMeta() storage.VaultMeta { return m.meta }
