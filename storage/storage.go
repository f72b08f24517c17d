// Package storage is the storage seam of the embedding package (svc.dev/svc): the records an
// embedded svc keeps (plans as a header and object chunks, executions, their journals,
// sources and their sealed configurations, receipts, manifests, events, vault metadata, the
// vault's change feed), behind narrow interfaces that a store implements.
// svc.dev/svc/storage/bolt implements them on bbolt; a PostgreSQL store implements the same
// interfaces.
//
// The interfaces live in a package of their own, as database/sql/driver does for
// database/sql, so that an implementation imports only this package and the domain
// packages, never the embedding package that opens it (which would be an import cycle).
// The embedding package names them with aliases (svc.Store, ...).
//
// # Contract
//
// Records are kept per tenant (the string "test:<owner>" or "live:<owner>"): a record of one
// tenant is never read, listed or changed through another. Get methods return an error
// wrapping ErrNotFound for a missing record. A Write made by a store (an event, a usage count,
// a resource) is applied in the transaction of the change it is passed to: both are stored,
// or neither. Functions passed to Update methods may run more than once and must decide only
// from the record they are given; they must never call the store (a store may hold a
// transaction while it runs them).
//
// # Stability
//
// Not yet stable: the seam is being shaped with the PostgreSQL store.
package storage

import (
	"context"
	"iter"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/vault"

	"svc.dev/svc/id"
)

// ErrNotFound is returned (wrapped) when a record does not exist in the tenant.
var ErrNotFound = id.ErrNotFound

// Write is a record a store writes in the transaction of another change: an event announcing
// the change, a usage count, a resource made with it. A store accepts only the Writes it (or
// the code built on it) made; its concrete type belongs to the store.
type Write interface {
	// StoreWrite marks a Write; it does nothing.
	StoreWrite()
}

// Store is everything the embedding package keeps. Close releases it.
type Store interface {
	Plans() Plans
	Executions() Executions
	Journal() Journal
	Sources() Sources
	Destinations() Destinations
	Receipts() Receipts
	Manifests() Manifests
	Events() Events
	// VaultMeta is the vault's records and its tenants' wrapped data keys.
	VaultMeta() VaultMeta
	// Apply stores writes on their own, in one transaction.
	Apply(ctx context.Context, writes ...Write) error
	// VaultChanged is the Write that appends an entry for a vault object to the vault's
	// change feed (VaultChanges), in the transaction of the change it is passed to (the
	// object's manifest).
	VaultChanged(tenant, objectID string) Write
	// VaultChanges is the vault's change feed, which what is derived from the vault (the
	// search index) follows.
	VaultChanges() VaultChanges
	Close() error
}

// VaultMeta is what vault.Open needs of a store, and what a rotation of the vault's
// key-encryption key needs (vault.RewrapKeys).
type VaultMeta interface {
	vault.Meta
	vault.RewrapStore
}

// Plans keeps each plan as a header (the plan without its objects) and its objects in
// chunks, written together. Objects never change once a plan is stored.
type Plans interface {
	// Put stores a new plan, objects and all, with also, in one transaction.
	Put(ctx context.Context, tenant string, p *svcv1.Plan, also ...Write) error
	// Header returns a plan without its objects.
	Header(ctx context.Context, tenant, id string) (*svcv1.Plan, error)
	// Get returns a whole plan.
	Get(ctx context.Context, tenant, id string) (*svcv1.Plan, error)
	// Fill reads the objects of a plan header into it.
	Fill(ctx context.Context, tenant string, p *svcv1.Plan) error
	// Objects yields a plan's objects chunk by chunk, each read on its own.
	Objects(ctx context.Context, tenant, id string) iter.Seq2[[]*svcv1.PlanObject, error]
	// Page returns up to limit objects of plan h from index start, and whether more follow.
	Page(ctx context.Context, tenant string, h *svcv1.Plan, start, limit int) ([]*svcv1.PlanObject, bool, error)
	// Update applies fn to the whole stored plan and stores its header, with also, in one
	// transaction; the plan fn changed keeps its objects after Update returns.
	Update(ctx context.Context, tenant, id string, fn func(*svcv1.Plan) error, also ...Write) error
	// UpdateHeader applies fn to the plan's header (its objects may be absent) and stores it,
	// with also, in one transaction; a plan's objects never change, so a state change need
	// not read them.
	UpdateHeader(ctx context.Context, tenant, id string, fn func(*svcv1.Plan) error, also ...Write) error
	// Scan calls fn with each of the tenant's plan headers, newest first, until it returns false.
	Scan(ctx context.Context, tenant string, fn func(*svcv1.Plan) bool) error
	// FillSmall reads the objects of plan headers, in one read, when they hold at most limit
	// objects in all, and reports whether it did; with more, it fills none of them.
	FillSmall(ctx context.Context, tenant string, plans []*svcv1.Plan, limit int) (bool, error)
}

// Executions keeps executions.
type Executions interface {
	Get(ctx context.Context, tenant, id string) (*svcv1.Execution, error)
	// Update applies fn to the stored execution, with also, in one transaction.
	Update(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error, also ...Write) error
	// PutWrite is the Write that stores e (encoded when the transaction writes it, so a
	// function that runs in that transaction may still fill it).
	PutWrite(tenant string, e *svcv1.Execution) Write
	// ScanAll calls fn with every execution of every tenant until it returns false.
	ScanAll(ctx context.Context, fn func(tenant string, e *svcv1.Execution) bool) error
	// Scan calls fn with each of the tenant's executions, newest first, until it returns false.
	Scan(ctx context.Context, tenant string, fn func(*svcv1.Execution) bool) error
}

// Journal keeps each execution's step transitions, in order, as opaque entries.
type Journal interface {
	// Append adds entries to an execution's journal, durably, in one transaction.
	Append(ctx context.Context, tenant, executionID string, entries [][]byte) error
	// Read returns an execution's entries in the order they were appended.
	Read(ctx context.Context, tenant, executionID string) ([][]byte, error)
	// Scan calls fn with an execution's entries in the order they were appended, without
	// holding them all; it stops at fn's first error and returns it. An entry is valid only
	// during the call, and fn must not call the store.
	Scan(ctx context.Context, tenant, executionID string, fn func(entry []byte) error) error
	// ScanAfter is Scan from a position: it calls fn with the entries appended after the one
	// at position after (0: from the first), each with its own position. Positions are
	// opaque, increase along an execution's journal and never change, so a reader that
	// follows a journal reads each entry once (not the whole journal on every look).
	ScanAfter(ctx context.Context, tenant, executionID string, after uint64, fn func(pos uint64, entry []byte) error) error
}

// VaultChanges is the vault's change feed: a durable outbox of vault objects to consider
// again, for what is derived from the vault (the search index). An entry is written in the
// transaction of the change it announces: by the vault's records (VaultMeta: an object written
// so that FeedsVaultChange holds) or by the transaction a VaultChanged Write is passed to. A
// crash therefore cannot lose an announcement. A consumer reads entries in order (Read),
// applies them, then deletes them (Ack); applying an entry twice (a crash between the two)
// must be harmless.
type VaultChanges interface {
	// Read returns up to limit entries with sequence numbers greater than after, in order, and
	// the feed's last sequence number (every entry written so far has one at most that).
	Read(ctx context.Context, after uint64, limit int) ([]VaultChange, uint64, error)
	// Last returns the feed's last sequence number: an entry written before the call has a
	// sequence number at most this. Numbers are never reused, even once their entries are
	// deleted.
	Last(ctx context.Context) (uint64, error)
	// Ack deletes every entry up to and including sequence number upTo.
	Ack(ctx context.Context, upTo uint64) error
}

// VaultChange is one entry of the vault's change feed: a vault object of a tenant to index
// or remove again.
type VaultChange struct {
	Seq      uint64
	Tenant   string
	ObjectID string
}

// FeedsVaultChange reports whether writing a vault object as o, over prev (nil when it is
// new), puts an entry in the change feed in the write's transaction: when the object enters
// or leaves what is searchable (committed, cold, deleted), except a first commit of an object
// that names a manifest: that manifest's transaction announces it (VaultChanged), once the
// object is complete, so that it is indexed once.
func FeedsVaultChange(prev *vault.Object, o vault.Object) bool {
	was := vault.State("")
	if prev != nil {
		was = prev.State
	}
	if was == o.State {
		return false
	}
	switch o.State {
	case vault.StateCommitted, vault.StateCold:
		fresh := was != vault.StateCommitted && was != vault.StateCold
		return !fresh || o.ManifestID == ""
	case vault.StateDeleted:
		return true
	}
	return false
}

// Sources keeps connected sources and, apart, their configurations (sealed by the caller:
// they may hold credentials).
type Sources interface {
	Get(ctx context.Context, tenant, id string) (*svcv1.Source, error)
	Put(ctx context.Context, tenant string, src *svcv1.Source) error
	Update(ctx context.Context, tenant, id string, fn func(*svcv1.Source) error) error
	// Scan calls fn with each of the tenant's sources, newest first, until it returns false.
	Scan(ctx context.Context, tenant string, fn func(*svcv1.Source) bool) error
	PutConfig(ctx context.Context, tenant, id string, sealed []byte) error
	Config(ctx context.Context, tenant, id string) ([]byte, error)
}

// Destinations keeps destinations (their configurations are kept like sources', by
// Sources.PutConfig under the destination's id) and, apart, the source each was made from.
type Destinations interface {
	Get(ctx context.Context, tenant, id string) (*svcv1.Destination, error)
	Put(ctx context.Context, tenant string, d *svcv1.Destination) error
	// PutOrigin records the source a destination was made from.
	PutOrigin(ctx context.Context, tenant, id, sourceID string) error
	// Origin returns the source a destination was made from (ErrNotFound: none).
	Origin(ctx context.Context, tenant, id string) (string, error)
}

// Receipts keeps receipts as the exact signed bytes that were issued.
type Receipts interface {
	Get(ctx context.Context, tenant, id string) ([]byte, error)
	Put(ctx context.Context, tenant, id string, raw []byte) error
}

// Manifests keeps each asset's manifest, by asset id.
type Manifests interface {
	Get(ctx context.Context, tenant, assetID string) (*svcv1.Manifest, error)
	Put(ctx context.Context, tenant, assetID string, m *svcv1.Manifest) error
	Update(ctx context.Context, tenant, assetID string, fn func(*svcv1.Manifest) error) error
	// Upsert applies fn to the asset's manifest, made by create when there is none, with
	// also, in one transaction; a store may commit it together with other upserts.
	Upsert(ctx context.Context, tenant, assetID string, create func() (*svcv1.Manifest, error), fn func(*svcv1.Manifest) error, also ...Write) error
	// Scan calls fn with each of the tenant's manifests, in asset id order, until it returns
	// false.
	Scan(ctx context.Context, tenant string, fn func(*svcv1.Manifest) bool) error
	// All yields the tenant's manifests in asset id order, read in short transactions (a slow
	// consumer holds none open); manifests added meanwhile may or may not be seen.
	All(ctx context.Context, tenant string) iter.Seq2[*svcv1.Manifest, error]
}

// Events keeps each tenant's stream of events.
type Events interface {
	// Write is the Write that records ev in the streams named (a tenant's own stream is its
	// tenant string).
	Write(ev *svcv1.Event, streams ...string) (Write, error)
}
