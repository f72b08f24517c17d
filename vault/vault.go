package vault

import (
	"context"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/backend/local"
	"svc.dev/svc/vault/internal/seal"
)

// KEK is a key-encryption key: it wraps the tenants' data keys. The caller
// keeps it outside the vault's storage (the server derives it from its
// secret configuration).
type KEK [32]byte

// Options configures a vault. The zero value (or nil) means defaults.
type Options struct {
	// Hot is the backend for committed content; nil: local disk in
	// DIR/hot.
	Hot backend.Backend
	// Cold is the cold tier's backend; nil: local disk in DIR/cold.
	Cold backend.Backend
	// PreviousKEKs unwrap data keys wrapped before a key-encryption key
	// rotation.
	PreviousKEKs []KEK
	// PackThreshold: content of at most this many bytes is written into
	// pack files with other small content and fsynced in groups. 0 means
	// 256 KiB; a negative value turns packing off.
	PackThreshold int64
	// MaxPackSize bounds the plaintext gathered into one pack. 0 means
	// 8 MiB.
	MaxPackSize int64
	// MaxTextBytes bounds the text extracted from one object. 0 means
	// 4 MiB.
	MaxTextBytes int
	// GroupCommitDelay lets a group commit wait this long for more small
	// objects before writing. 0 (the default) never waits: a group is
	// whatever arrived while the previous one was being written.
	GroupCommitDelay time.Duration
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
	// OnChange, when set, is told of an object after a Put committed it, after Cold or Warm
	// moved it and after a deletion finished (Delete, Scrub): an observer such as the search
	// index follows the vault with it. It runs in the goroutine that made the change, once
	// the change is stored and outside any metadata transaction, so it may read the vault.
	OnChange func(ctx context.Context, tenant string, o Object)
}

// changed tells Options.OnChange of o.
func (v *Vault) changed(ctx context.Context, tenant string, o Object) {
	if v.opts.OnChange != nil {
		v.opts.OnChange(ctx, tenant, o)
	}
}

// Vault is the content-addressed, encrypted, verified store of vault
// objects. It is safe for concurrent use; one process owns a vault's
// storage at a time.
type Vault struct {
	hot, cold backend.Backend
	meta      Meta
	keys      KeyStore
	keks      [][]byte // current first
	opts      Options

	mu      sync.Mutex
	tenants map[string]*tenant
	closed  bool
	work    sync.WaitGroup // small Puts queued or being committed

	locks keyedLocks
	stats stats

	// legacy writes the formats of before bound streams (seal versions 1
	// and 2) and reads without holding back the final segment: the old
	// path, kept for the benchmarks that compare the two and for tests of
	// reading old data (SetLegacyFormat).
	legacy bool

	schedMu   sync.Mutex // one ScrubScheduled with a budget at a time
	schedDebt int64      // bytes read beyond the budget, owed by the next run

	appendMu  sync.Mutex
	appending map[string]bool // packs open for appending
}

func (v *Vault) setAppending(name string, on bool) {
	v.appendMu.Lock()
	defer v.appendMu.Unlock()
	if v.appending == nil {
		v.appending = map[string]bool{}
	}
	if on {
		v.appending[name] = true
	} else {
		delete(v.appending, name)
	}
}

// isAppending reports whether a pack is open for appending: it must not
// be removed even when no entry in it is used (the next group goes there).
func (v *Vault) isAppending(name string) bool {
	v.appendMu.Lock()
	defer v.appendMu.Unlock()
	return v.appending[name]
}

// Open opens the vault whose local data (the default hot and cold
// backends) is under dir, with its records in meta and the tenants'
// wrapped data keys in keys, wrapped under kek. dir may be empty when
// both backends are given.
func Open(dir string, meta Meta, keys KeyStore, kek KEK, opts *Options) (*Vault, error) {
	if meta == nil || keys == nil {
		return nil, fmt.Errorf("open vault: meta and key store are required: %w", ErrInvalidArgument)
	}
	if kek == (KEK{}) {
		return nil, fmt.Errorf("open vault: zero key-encryption key: %w", ErrInvalidArgument)
	}
	v := &Vault{meta: meta, keys: keys, tenants: map[string]*tenant{}}
	if opts != nil {
		v.opts = *opts
	}
	v.keks = [][]byte{kek[:]}
	for _, k := range v.opts.PreviousKEKs {
		v.keks = append(v.keks, k[:])
	}
	if v.opts.PackThreshold == 0 {
		v.opts.PackThreshold = 256 << 10
	}
	if v.opts.MaxPackSize <= 0 {
		v.opts.MaxPackSize = 8 << 20
	}
	if v.opts.MaxTextBytes <= 0 {
		v.opts.MaxTextBytes = 4 << 20
	}
	if v.opts.Now == nil {
		v.opts.Now = time.Now
	}
	v.hot, v.cold = v.opts.Hot, v.opts.Cold
	for _, b := range []struct {
		be  *backend.Backend
		sub string
	}{{&v.hot, "hot"}, {&v.cold, "cold"}} {
		if *b.be != nil {
			continue
		}
		if dir == "" {
			return nil, fmt.Errorf("open vault: no directory for the default %s backend: %w", b.sub, ErrInvalidArgument)
		}
		l, err := local.New(filepath.Join(dir, b.sub))
		if err != nil {
			return nil, fmt.Errorf("open vault: %w", err)
		}
		*b.be = l
	}
	return v, nil
}

// Close waits for the group commits in flight and closes the vault: later
// calls fail with ErrClosed. (Streamed Puts and other calls in flight are
// not waited for; the caller stops them first.)
func (v *Vault) Close() error {
	v.mu.Lock()
	v.closed = true
	v.mu.Unlock()
	v.work.Wait()
	v.mu.Lock()
	tenants := make([]*tenant, 0, len(v.tenants))
	for _, t := range v.tenants {
		tenants = append(tenants, t)
	}
	v.mu.Unlock()
	for _, t := range tenants {
		t.group.closeOpen(context.Background())
	}
	return nil
}

func (v *Vault) now() time.Time { return v.opts.Now().UTC() }

// tenant is one tenant's keys and group committer.
type tenant struct {
	name    string
	prefix  string // backend names start with it
	mu      sync.Mutex
	dataKey []byte // nil until loaded
	nameKey []byte
	group   *committer
}

// tenant returns the tenant's state with its data key loaded (created on
// first use).
func (v *Vault) tenant(ctx context.Context, name string) (*tenant, error) {
	if err := validTenant(name); err != nil {
		return nil, err
	}
	v.mu.Lock()
	if v.closed {
		v.mu.Unlock()
		return nil, ErrClosed
	}
	t := v.tenants[name]
	if t == nil {
		t = &tenant{name: name, prefix: "t/" + escapeTenant(name) + "/"}
		t.group = &committer{v: v, t: t, arrived: make(chan struct{}, 1)}
		v.tenants[name] = t
	}
	v.mu.Unlock()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.dataKey != nil {
		return t, nil
	}
	dk, err := v.loadKey(ctx, name)
	if err != nil {
		return nil, err
	}
	nk, err := hkdf.Key(sha256.New, dk, nil, "svc vault names v1", 32)
	if err != nil {
		return nil, err
	}
	t.dataKey, t.nameKey = dk, nk
	return t, nil
}

func (v *Vault) loadKey(ctx context.Context, name string) ([]byte, error) {
	wrapped, err := v.keys.WrappedKey(ctx, name)
	if errors.Is(err, ErrNotFound) {
		dk, err := seal.NewKey()
		if err != nil {
			return nil, err
		}
		w, err := seal.Wrap(v.keks[0], dk, name)
		if err != nil {
			return nil, err
		}
		if wrapped, err = v.keys.CreateWrappedKey(ctx, name, w); err != nil {
			return nil, fmt.Errorf("create data key of tenant %q: %w", name, err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("load data key of tenant %q: %w", name, err)
	}
	dk, err := seal.Unwrap(v.keks, wrapped, name)
	if err != nil {
		return nil, fmt.Errorf("unwrap data key of tenant %q: %w: %w", name, ErrKeyUnavailable, err)
	}
	return dk, nil
}

func validTenant(name string) error {
	if name == "" || len(name) > 200 {
		return fmt.Errorf("tenant %q: %w", name, ErrInvalidArgument)
	}
	return nil
}

// escapeTenant makes a tenant (such as "test:usr_01...") a backend name
// element: bytes outside [A-Za-z0-9_-] become %XX.
func escapeTenant(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// contentName is the backend name of the whole-file copy of content d:
// keyed by the tenant's name key, so that the storage does not show the
// content's SHA-256 (which would confirm who holds a known file) while
// identical content still lands on one name.
func (t *tenant) contentName(d Digest) string { return t.keyedName("data", d) }

// textName is the backend name of the extracted text of content d.
func (t *tenant) textName(d Digest) string { return t.keyedName("text", d) }

func (t *tenant) keyedName(kind string, d Digest) string {
	m := hmac.New(sha256.New, t.nameKey)
	m.Write([]byte(kind))
	m.Write(d[:])
	h := hex.EncodeToString(m.Sum(nil))
	return t.prefix + kind + "/" + h[:2] + "/" + h
}

// packName returns a fresh pack file name.
func (t *tenant) packName() string {
	var r [16]byte
	_, _ = rand.Read(r[:])
	return t.prefix + "packs/" + hex.EncodeToString(r[:])
}

// keyedLocks serialises the operations on one tenant's digest: deciding to
// reuse stored content, replacing a copy, and dropping it, so that a
// deletion never removes content that a concurrent Put has just decided to
// reuse.
type keyedLocks struct {
	mu    sync.Mutex
	locks map[string]*keyedLock
}

type keyedLock struct {
	mu   sync.Mutex
	refs int
}

func lockKey(t *tenant, d Digest) string { return t.name + "\x00" + string(d[:]) }

// lock locks the keys in sorted order (so that holders of several keys
// cannot deadlock) and returns the unlock function.
func (k *keyedLocks) lock(keys ...string) func() {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	held := make([]*keyedLock, len(keys))
	for i, key := range keys {
		k.mu.Lock()
		if k.locks == nil {
			k.locks = map[string]*keyedLock{}
		}
		l := k.locks[key]
		if l == nil {
			l = &keyedLock{}
			k.locks[key] = l
		}
		l.refs++
		k.mu.Unlock()
		l.mu.Lock()
		held[i] = l
	}
	return func() {
		for i, l := range held {
			l.mu.Unlock()
			k.mu.Lock()
			if l.refs--; l.refs == 0 {
				delete(k.locks, keys[i])
			}
			k.mu.Unlock()
		}
	}
}
