package svc

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"svc.dev/svc/creator"
	"svc.dev/svc/execute"
	"svc.dev/svc/plan/spamc"
	"svc.dev/svc/platform"
	"svc.dev/svc/providers"
	"svc.dev/svc/providers/builtin"
	"svc.dev/svc/receipt"
	"svc.dev/svc/storage"
	"svc.dev/svc/storage/bolt"
	"svc.dev/svc/vault"
	"svc.dev/svc/vault/backend"
	"svc.dev/svc/vault/search"
)

// Store is the storage seam: every record an Instance keeps goes through it.
type Store = storage.Store

// Tenant is the unit of isolation: an owner (a user or organization id) in test or live mode.
// Records of one tenant are never seen through another.
type Tenant = platform.Tenant

// The two modes of a tenant: test tenants hold simulated, unbilled data.
const (
	ModeTest = platform.ModeTest
	ModeLive = platform.ModeLive
)

// BoltOptions tune the bbolt store Open opens by default (its initial map size, for tests).
type BoltOptions = bolt.Options

// DefaultTenant is the tenant an embedder's Instance acts for: one live owner, "local".
var DefaultTenant = Tenant{Owner: "local", Mode: ModeLive}

// Options configure Open. Nil or zero fields take defaults.
type Options struct {
	// Store keeps the records; nil opens bbolt at DIR/svc.db (Close closes it).
	Store Store
	// StoreOptions tune the bbolt store Open opens.
	StoreOptions *BoltOptions
	// MasterKey is the key every other key derives from; nil loads it (LoadMasterKey): from
	// the environment (MasterKeyEnv), from MasterKeyFile, or from DIR/master.key (made, 0600,
	// only for a new directory).
	MasterKey []byte
	// MasterKeyFile is where the master key is kept when not in DIR/master.key (a file
	// outside the data directory, away from what it protects).
	MasterKeyFile string
	// Envelope wraps the data keys of secrets a shared store keeps (the receipt signing keys
	// of replicas); nil wraps under the master key (platform.LocalEnvelope). A KMS client
	// plugs in here.
	Envelope platform.Envelope
	// Providers opens sources; nil registers the built-ins in process (Close closes them).
	Providers *providers.Registry
	// Tenant is the tenant the Instance's own methods act for (default DefaultTenant).
	Tenant *Tenant
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Logger receives operational logs; secrets are never logged (default slog.Default()).
	Logger *slog.Logger
	// VaultHot and VaultCold are the vault's tiers; nil ones are local disk under DIR/vault.
	VaultHot, VaultCold backend.Backend
	// OnVaultChange follows the vault's changes; it is also told of an object again once its
	// manifest is stored. (The search index follows them without it, from the store's
	// change feed.)
	OnVaultChange func(ctx context.Context, tenant string, o vault.Object)
	// SearchIndex opens the vault's search index, given the options the layer needs of it
	// (the TextSource its snippets are cut from). Default: vault/search's bleve index under
	// DIR/search, kept by this process. Several processes on one database need one they
	// share, which keeps its own place in the vault's change feed: storage/postgres's
	// Store.SearchIndex (docs/search.md, "Search in a cluster").
	SearchIndex func(*search.Options) (SearchIndex, error)
	// Announcer records the events of domain changes (default: in the tenant's own stream).
	Announcer Announcer
	// Charger meters an execution's usage and returns its receipt's charges (default: none).
	Charger Charger
	// Unsubscribe sends a one-click unsubscribe for the engine (default: refused).
	Unsubscribe func(ctx context.Context, url string) error
	// DeferResume leaves executions that were running when the directory was last closed
	// until Resume is called (a host that must finish its own set-up first).
	DeferResume bool
	// Creator is what creator revenue's connectors need of the host (an HTTP client, the
	// platforms' API bases for tests); the mail of inbox sources comes from the layer.
	Creator creator.Deps
	// OnReauth is told when a source's provider refused its credentials (default: the source
	// is marked reauth_required and nothing else happens).
	OnReauth func(ctx context.Context, tenant Tenant, sourceID string)
	// JunkFilter, when set, is a well-kept spam filter (spamd or rspamd, package plan/spamc)
	// asked about every message a plan lists: its verdict and score join the removal reason
	// ("junk: a spam filter marked it (spamd: 15.3/5.0)"). Nil plans on the embedded rules
	// alone. A filter that fails or is slow never fails a plan: it stops being asked halfway
	// through the plan's time budget.
	JunkFilter spamc.Checker
	// Replica, when set, makes the Instance one of several processes on its store (which
	// must hand out leases, storage.Leaser): see Replica. Nil: the only process, as with
	// bbolt.
	Replica *Replica
}

// Instance is svc opened in a program. Its methods act for its tenant (Options.Tenant);
// Tenant scopes them to another. Close it when done.
type Instance struct {
	*Scope
	core *core
}

// core is what every scope of an Instance shares.
type core struct {
	store     Store
	hosted    storage.Hosted // the store's listable resources, when it keeps them (nil: not)
	ownStore  bool
	providers *providers.Registry
	ownReg    bool
	keyring   *receipt.Keyring
	sealer    *platform.Sealer
	keys      *platform.Keyring // every key derives from the master key here, by purpose
	vault     *vault.Vault
	search    *vaultIndex
	engine    *execute.Engine
	now       func() time.Time
	log       *slog.Logger
	opts      Options
	tempDir   string         // OpenMemory's directory, removed by Close
	stopKeys  chan struct{}  // stops reloading shared receipt keys (nil: not shared)
	changes   *changes       // an execution's journal or record changed (Wait, Watch)
	replica   *Replica       // nil: the only process on the store
	leases    storage.Leases // the store's, when a replica
	fences    *fences        // the leases of the executions this replica runs
	stopAdopt context.CancelFunc
	adoptOnce sync.Once

	opened   providers.Instances // the providers opened for sources, by tenant/source
	configMu sync.Mutex          // one write of a source's sealed configuration at a time

	// closing ends when Close begins: best-effort provider calls (a receipt's quotas) stop
	// waiting then, rather than hold the close up on a provider that does not answer.
	closing     context.Context
	stopClosing context.CancelFunc
}

// Open opens (creating it if needed) svc's data directory dir: the store (svc.db unless
// opts.Store), the master key (master.key), the receipt signing keys (keys/, or, when the
// store is shared by replicas (storage.Secrets), the store's secrets, sealed), the vault
// (vault/) and its search index (search/, kept in step by a background worker from the
// store's change feed). Executions that were running when the directory was last closed
// resume.
func Open(ctx context.Context, dir string, opts *Options) (*Instance, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if dir == "" {
		return nil, errors.New("svc: no data directory")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create data directory: %w", err)
	}
	c := &core{store: o.Store, providers: o.Providers, now: o.Now, log: o.Logger, opts: o}
	c.closing, c.stopClosing = context.WithCancel(context.Background())
	ok := false
	defer func() {
		if !ok {
			c.close()
		}
	}()
	master := o.MasterKey
	if master == nil {
		var err error
		if master, err = LoadMasterKey(dir, o.MasterKeyFile); err != nil {
			return nil, err
		}
	}
	keys, err := platform.NewKeyring(master)
	if err != nil {
		return nil, err
	}
	c.keys = keys
	if c.sealer, err = platform.NewSealer(keys.Derive("sealed-secrets")); err != nil {
		return nil, err
	}
	if c.store == nil {
		if c.store, err = OpenStore(dir, o.StoreOptions); err != nil {
			return nil, err
		}
		c.ownStore = true
	}
	c.hosted, _ = c.store.(storage.Hosted)
	claims, err := c.replicaOf(o.Replica, c.store)
	if err != nil {
		return nil, err
	}
	sec, shared := c.store.(storage.Secrets)
	c.changes = &changes{}
	c.store = signalling{c.store, c.changes}
	if shared { // replicas: one key set, in the store, sealed
		env := o.Envelope
		if env == nil {
			if env, err = platform.NewLocalEnvelope(master); err != nil {
				return nil, err
			}
		}
		if c.keyring, err = OpenSharedReceiptKeys(ctx, dir, sec, env, c.store); err != nil {
			return nil, err
		}
		c.stopKeys = make(chan struct{})
		go reloadReceiptKeys(c.keyring, c.log, c.stopKeys)
	} else if c.keyring, err = OpenReceiptKeys(ctx, dir, c.store); err != nil {
		return nil, err
	}
	if c.search, err = openSearch(dir, c, o.SearchIndex); err != nil {
		return nil, err
	}
	// Every vault change is in the store's change feed already (written in its transaction);
	// the hook wakes the index worker, then tells the embedder's hook. The engine calls it too
	// once an object's manifest is stored.
	user := o.OnVaultChange
	c.opts.OnVaultChange = func(ctx context.Context, tenant string, obj vault.Object) {
		c.search.changed()
		if user != nil {
			user(ctx, tenant, obj)
		}
	}
	if c.vault, err = openVault(dir, c.store.VaultMeta(), keys,
		&vault.Options{Now: o.Now, Hot: o.VaultHot, Cold: o.VaultCold, OnChange: c.opts.OnVaultChange}); err != nil {
		return nil, err
	}
	if c.providers == nil {
		if c.providers, err = builtin.Registry(builtin.Options{}); err != nil {
			return nil, err
		}
		c.ownReg = true
	}
	unsubscribe := o.Unsubscribe
	if unsubscribe == nil {
		unsubscribe = func(context.Context, string) error { return errors.New("unsubscribe: not configured") }
	}
	eo := execute.Options{Now: o.Now, Logger: o.Logger, Unsubscribe: unsubscribe, Claims: claims}
	if c.replica != nil {
		eo.ClaimTTL, eo.RenewEvery = c.replica.LeaseTTL, c.replica.RenewEvery
	}
	c.engine = execute.New(execStore{c}, engineSources{c}, engineVault{c}, finisher{c}, eo)
	tenant := DefaultTenant
	if o.Tenant != nil {
		tenant = *o.Tenant
	}
	sv := &Instance{Scope: &Scope{c: c, t: tenant}, core: c}
	c.search.start()
	if !o.DeferResume {
		if err := c.engine.Resume(ctx); err != nil {
			return nil, fmt.Errorf("resume executions: %w", err)
		}
		c.adopt()
	}
	ok = true
	return sv, nil
}

// OpenVault opens the vault of data directory dir: its files under dir/vault (or on the
// backends opts names), its records in meta, its key-encryption key derived from the master
// key. Open uses it; offline tools (a scrub, a reindex) open the vault alone with it.
func OpenVault(dir string, meta storage.VaultMeta, masterKey []byte, opts *vault.Options) (*vault.Vault, error) {
	keys, err := platform.NewKeyring(masterKey)
	if err != nil {
		return nil, err
	}
	return openVault(dir, meta, keys, opts)
}

func openVault(dir string, meta storage.VaultMeta, keys *platform.Keyring, opts *vault.Options) (*vault.Vault, error) {
	var kek vault.KEK
	copy(kek[:], keys.Derive("vault-kek"))
	return vault.Open(filepath.Join(dir, VaultDir), meta, meta, kek, opts)
}

// OpenMemory opens svc on a new temporary directory that Close removes: for tests and
// throwaway runs. Nothing survives Close.
func OpenMemory(ctx context.Context, opts *Options) (*Instance, error) {
	dir, err := os.MkdirTemp("", "svc-memory-")
	if err != nil {
		return nil, fmt.Errorf("temporary data directory: %w", err)
	}
	sv, err := Open(ctx, dir, opts)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	sv.core.tempDir = dir
	return sv, nil
}

// Tenant returns the Instance's methods scoped to tenant t.
func (sv *Instance) Tenant(t Tenant) *Scope { return &Scope{c: sv.core, t: t} }

// Vault is the vault the Instance preserves content in.
func (sv *Instance) Vault() *vault.Vault { return sv.core.vault }

// ReceiptKeys is the keyring that signs receipts; its KeySet verifies them.
func (sv *Instance) ReceiptKeys() *receipt.Keyring { return sv.core.keyring }

// DeriveKey returns the key for one purpose ("cursor", "export-url", ...), derived from the
// master key: a host keeps no key of its own beside it.
func (sv *Instance) DeriveKey(purpose string) []byte { return sv.core.keys.Derive(purpose) }

// Sealer seals and opens the secrets kept at rest (provider credentials, webhook secrets).
func (sv *Instance) Sealer() *platform.Sealer { return sv.core.sealer }

// Providers is the registry sources are opened with.
func (sv *Instance) Providers() *providers.Registry { return sv.core.providers }

// Store is the storage the Instance keeps its records in.
func (sv *Instance) Store() Store {
	if s, ok := sv.core.store.(signalling); ok {
		return s.Store
	}
	return sv.core.store
}

// Resume continues executions left running (Open already did; a host that stopped the
// engine with Shutdown calls it again).
func (sv *Instance) Resume(ctx context.Context) error {
	if err := sv.core.engine.Resume(ctx); err != nil {
		return err
	}
	sv.core.adopt()
	return nil
}

// WaitExecutions waits until the executions running in this process have ended (or were
// stopped by Shutdown).
func (sv *Instance) WaitExecutions() { sv.core.engine.Wait() }

// RunningExecutions returns how many executions run now (background work such as indexing
// defers to them).
func (sv *Instance) RunningExecutions() int { return sv.core.engine.Running() }

// Shutdown stops running executions where they are (they resume at the next Open), without
// closing anything else.
func (sv *Instance) Shutdown() { sv.core.engine.Shutdown() }

// Close stops running executions where they are (they resume at the next Open) and the search
// index worker (what it had not applied waits in the change feed), closes the sources it
// opened, the search index, the vault, the providers and the store it opened.
func (sv *Instance) Close() error { return sv.core.close() }

func (c *core) close() error {
	if c.stopClosing != nil {
		c.stopClosing()
	}
	if c.stopKeys != nil {
		close(c.stopKeys)
		c.stopKeys = nil
	}
	if c.stopAdopt != nil {
		c.stopAdopt()
	}
	if c.engine != nil {
		c.engine.Shutdown()
	}
	if c.search != nil {
		c.search.close()
	}
	if c.vault != nil {
		c.vault.Close()
	}
	c.closeSources()
	if c.ownReg && c.providers != nil {
		c.providers.Close()
	}
	var err error
	if c.ownStore && c.store != nil {
		err = c.store.Close()
	}
	if c.tempDir != "" {
		os.RemoveAll(c.tempDir)
	}
	return err
}

// Scope is an Instance's methods for one tenant.
type Scope struct {
	c      *core
	t      Tenant
	access Access
}

// TenantOf is the tenant the scope acts for.
func (s *Scope) TenantOf() Tenant { return s.t }

func (s *Scope) key() string { return s.t.String() }

// ParseTenant reads a tenant's string form ("live:usr_...").
func ParseTenant(s string) (Tenant, error) { return parseTenant(s) }

// parseTenant is ParseTenant.
func parseTenant(s string) (Tenant, error) {
	for _, m := range []platform.Mode{platform.ModeTest, platform.ModeLive} {
		if len(s) >= len(m)+1 && s[:len(m)+1] == string(m)+":" {
			return Tenant{Owner: s[len(m)+1:], Mode: m}, nil
		}
	}
	return Tenant{}, fmt.Errorf("bad tenant %q", s)
}
