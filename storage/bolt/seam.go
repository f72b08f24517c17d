package bolt

import (
	"context"
	"fmt"
	"iter"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/storage"
)

// StoreWrite makes an Extra a storage.Write: the seam's writes made by this store are Extras.
func (Extra) StoreWrite() {}

// extrasOf turns the seam's writes back into this store's extras; a write another store made
// is refused.
func extrasOf(ws []storage.Write) ([]Extra, error) {
	out := make([]Extra, 0, len(ws))
	for _, w := range ws {
		switch x := w.(type) {
		case Extra:
			out = append(out, x)
		case nil:
		default:
			return nil, fmt.Errorf("store: a write of type %T is not this store's", w)
		}
	}
	return out, nil
}

// Blob buckets and logs of the embedding package's records.
const (
	sourceConfigs      = "source_configs"
	destinationOrigins = "destination_origins"
	receiptBlobs       = "receipts"
	journalLog         = "journal"
)

// Seam is the bbolt implementation of the embedding package's storage seam (storage.Store).
// Its collections are the ones the hosted server reads, so both see the same records.
type Seam struct {
	platformDB
	db         *DB
	jobs       *Collection[*svcv1.Job]
	audit      *Collection[*svcv1.AuditEntry]
	meters     *Collection[*svcv1.Meter]
	trials     *Collection[*svcv1.Trial]
	plans      *Plans
	executions *Collection[*svcv1.Execution]
	sources    *Collection[*svcv1.Source]
	dsts       *Collection[*svcv1.Destination]
	manifests  *Collection[*svcv1.Manifest]
	events     *Collection[*svcv1.Event]
	closeDB    bool
}

var _ storage.Store = (*Seam)(nil)

// NewSeam returns the seam over db; closing it does not close db.
func NewSeam(db *DB) *Seam {
	return &Seam{
		platformDB: platformDB{db},
		db:         db,
		jobs:       NewCollection(db, "jobs", func() *svcv1.Job { return &svcv1.Job{} }),
		audit:      NewCollection(db, "audit", func() *svcv1.AuditEntry { return &svcv1.AuditEntry{} }),
		meters:     NewCollection(db, "meters", func() *svcv1.Meter { return &svcv1.Meter{} }).WithOwnerIndex(),
		trials:     NewCollection(db, "trials", func() *svcv1.Trial { return &svcv1.Trial{} }).WithOwnerIndex(),
		plans:      NewPlans(db),
		executions: NewCollection(db, "executions", func() *svcv1.Execution { return &svcv1.Execution{} }).WithOwnerIndex(),
		sources:    NewCollection(db, "sources", func() *svcv1.Source { return &svcv1.Source{} }).WithOwnerIndex(),
		dsts:       NewCollection(db, "destinations", func() *svcv1.Destination { return &svcv1.Destination{} }).WithOwnerIndex(),
		manifests:  NewCollection(db, "manifests", func() *svcv1.Manifest { return &svcv1.Manifest{} }),
		events:     NewCollection(db, "events", func() *svcv1.Event { return &svcv1.Event{} }),
	}
}

// OpenSeam opens (creating if needed) the bbolt file at path as a seam that owns it: Close
// closes the file.
func OpenSeam(path string, opts *Options) (*Seam, error) {
	db, err := OpenWith(path, opts)
	if err != nil {
		return nil, err
	}
	s := NewSeam(db)
	s.closeDB = true
	return s, nil
}

// DB is the database under the seam.
func (s *Seam) DB() *DB { return s.db }

// Close closes the database if the seam opened it.
func (s *Seam) Close() error {
	if s.closeDB {
		return s.db.Close()
	}
	return nil
}

// Plans keeps plans as a header and object chunks (res_plans, res_plan_objects).
func (s *Seam) Plans() storage.Plans { return s.plans }

// Executions keeps executions (res_executions, owner-indexed).
func (s *Seam) Executions() storage.Executions { return seamExecutions{s.executions} }

// Journal keeps the executions' journals in the group-committed "journal" log.
func (s *Seam) Journal() storage.Journal { return seamJournal{s.db} }

// Sources keeps sources (res_sources) and their sealed configurations (blob_source_configs).
func (s *Seam) Sources() storage.Sources { return seamSources{s.db, s.sources} }

// Destinations keeps destinations (res_destinations, owner-indexed) and their origins
// (blob_destination_origins).
func (s *Seam) Destinations() storage.Destinations { return seamDestinations{s.db, s.dsts} }

// Receipts keeps receipts' signed bytes (blob_receipts, owner-indexed).
func (s *Seam) Receipts() storage.Receipts { return seamReceipts{s.db} }

// Manifests keeps manifests by asset id (res_manifests).
func (s *Seam) Manifests() storage.Manifests { return seamManifests{s.manifests} }

// Events keeps event streams (res_events).
func (s *Seam) Events() storage.Events { return seamEvents{s.events} }

// VaultMeta is the vault's records and wrapped keys.
func (s *Seam) VaultMeta() storage.VaultMeta { return s.db.VaultMeta() }

// PlanStore is the concrete plan store, for the server's streamed responses and lists.
func (s *Seam) PlanStore() *Plans { return s.plans }

// VaultChanged is the vault change feed's entry for the object (VaultChanges), which the
// embedding package's search index drains.
func (s *Seam) VaultChanged(tenant, objectID string) storage.Write {
	return s.db.VaultChanges().Extra(tenant, objectID)
}

// VaultChanges is the vault's change feed (bucket vault_changes).
func (s *Seam) VaultChanges() storage.VaultChanges { return s.db.VaultChanges() }

// Apply stores writes on their own, in one transaction.
func (s *Seam) Apply(ctx context.Context, writes ...storage.Write) error {
	extras, err := extrasOf(writes)
	if err != nil {
		return err
	}
	return s.db.Apply(ctx, extras...)
}

type seamExecutions struct{ c *Collection[*svcv1.Execution] }

func (x seamExecutions) Get(ctx context.Context, tenant, id string) (*svcv1.Execution, error) {
	return x.c.Get(ctx, tenant, id)
}

func (x seamExecutions) Update(ctx context.Context, tenant, id string, fn func(*svcv1.Execution) error, also ...storage.Write) error {
	extras, err := extrasOf(also)
	if err != nil {
		return err
	}
	return x.c.UpdateWith(ctx, tenant, id, fn, extras...)
}

func (x seamExecutions) PutWrite(tenant string, e *svcv1.Execution) storage.Write {
	return PutExtra(x.c, tenant, e.GetId(), e)
}

func (x seamExecutions) ScanAll(ctx context.Context, fn func(string, *svcv1.Execution) bool) error {
	return x.c.ScanAll(ctx, func(tenant, _ string, e *svcv1.Execution) bool { return fn(tenant, e) })
}

func (x seamExecutions) Scan(ctx context.Context, tenant string, fn func(*svcv1.Execution) bool) error {
	return x.c.Scan(ctx, tenant, fn)
}

type seamJournal struct{ db *DB }

func (j seamJournal) Append(ctx context.Context, tenant, exeID string, entries [][]byte) error {
	return j.db.AppendLogs(ctx, journalLog, tenant+"/"+exeID, entries)
}

func (j seamJournal) Read(ctx context.Context, tenant, exeID string) ([][]byte, error) {
	return j.db.ReadLog(ctx, journalLog, tenant+"/"+exeID)
}

func (j seamJournal) Scan(ctx context.Context, tenant, exeID string, fn func([]byte) error) error {
	return j.db.ScanLogAfter(ctx, journalLog, tenant+"/"+exeID, 0, func(_ uint64, v []byte) error { return fn(v) })
}

func (j seamJournal) ScanAfter(ctx context.Context, tenant, exeID string, after uint64, fn func(uint64, []byte) error) error {
	return j.db.ScanLogAfter(ctx, journalLog, tenant+"/"+exeID, after, fn)
}

type seamSources struct {
	db *DB
	c  *Collection[*svcv1.Source]
}

func (x seamSources) Get(ctx context.Context, tenant, id string) (*svcv1.Source, error) {
	return x.c.Get(ctx, tenant, id)
}

func (x seamSources) Put(ctx context.Context, tenant string, src *svcv1.Source) error {
	return x.c.Put(ctx, tenant, src.GetId(), src)
}

func (x seamSources) Update(ctx context.Context, tenant, id string, fn func(*svcv1.Source) error) error {
	return x.c.Update(ctx, tenant, id, fn)
}

func (x seamSources) Scan(ctx context.Context, tenant string, fn func(*svcv1.Source) bool) error {
	return x.c.Scan(ctx, tenant, fn)
}

func (x seamSources) PutConfig(ctx context.Context, tenant, id string, sealed []byte) error {
	return x.db.PutBlob(ctx, sourceConfigs, tenant+"/"+id, sealed)
}

func (x seamSources) Config(ctx context.Context, tenant, id string) ([]byte, error) {
	return x.db.GetBlob(ctx, sourceConfigs, tenant+"/"+id)
}

type seamDestinations struct {
	db *DB
	c  *Collection[*svcv1.Destination]
}

func (x seamDestinations) Get(ctx context.Context, tenant, id string) (*svcv1.Destination, error) {
	return x.c.Get(ctx, tenant, id)
}

func (x seamDestinations) Put(ctx context.Context, tenant string, d *svcv1.Destination) error {
	return x.c.Put(ctx, tenant, d.GetDestinationId(), d)
}

func (x seamDestinations) PutOrigin(ctx context.Context, tenant, id, sourceID string) error {
	return x.db.PutBlob(ctx, destinationOrigins, tenant+"/"+id, []byte(sourceID))
}

func (x seamDestinations) Origin(ctx context.Context, tenant, id string) (string, error) {
	b, err := x.db.GetBlob(ctx, destinationOrigins, tenant+"/"+id)
	return string(b), err
}

type seamReceipts struct{ db *DB }

func (r seamReceipts) Get(ctx context.Context, tenant, id string) ([]byte, error) {
	return r.db.GetBlob(ctx, receiptBlobs, tenant+"/"+id)
}

func (r seamReceipts) Put(ctx context.Context, tenant, id string, raw []byte) error {
	return r.db.PutOwnedBlob(ctx, receiptBlobs, tenant, id, raw)
}

type seamManifests struct{ c *Collection[*svcv1.Manifest] }

func (m seamManifests) Get(ctx context.Context, tenant, assetID string) (*svcv1.Manifest, error) {
	return m.c.Get(ctx, tenant, assetID)
}

func (m seamManifests) Put(ctx context.Context, tenant, assetID string, v *svcv1.Manifest) error {
	return m.c.Put(ctx, tenant, assetID, v)
}

func (m seamManifests) Update(ctx context.Context, tenant, assetID string, fn func(*svcv1.Manifest) error) error {
	return m.c.Update(ctx, tenant, assetID, fn)
}

func (m seamManifests) Upsert(ctx context.Context, tenant, assetID string, create func() (*svcv1.Manifest, error), fn func(*svcv1.Manifest) error, also ...storage.Write) error {
	extras, err := extrasOf(also)
	if err != nil {
		return err
	}
	return m.c.UpsertBatched(ctx, tenant, assetID, create, fn, extras...)
}

func (m seamManifests) All(ctx context.Context, tenant string) iter.Seq2[*svcv1.Manifest, error] {
	return m.c.All(ctx, tenant, nil)
}

func (m seamManifests) Scan(ctx context.Context, tenant string, fn func(*svcv1.Manifest) bool) error {
	return m.c.Scan(ctx, tenant, fn)
}

type seamEvents struct{ c *Collection[*svcv1.Event] }

func (e seamEvents) Write(ev *svcv1.Event, streams ...string) (storage.Write, error) {
	items := make([]Item[*svcv1.Event], len(streams))
	for i, s := range streams {
		items[i] = Item[*svcv1.Event]{Tenant: s, ID: ev.GetId(), Value: ev}
	}
	return EventsExtra(e.c, items, nil)
}
