package bolt

import (
	"context"
	"iter"

	"google.golang.org/protobuf/proto"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform/billing"
	"svc.dev/svc/platform/webhook"
	"svc.dev/svc/storage"
)

var _ storage.Hosted = (*Seam)(nil)

// platformDB carries the platform's stores (accounts, developers, idempotency, the connect
// flow), which DB implements, into Seam.
type platformDB struct{ *DB }

// Resources are the API's listable resources.
func (s *Seam) Resources() storage.Resources { return resources{s} }

// Usage keeps the usage counters and ceilings.
func (s *Seam) Usage() storage.Usage { return usage{s.db} }

// Webhooks keeps webhooks, their queues and deliveries.
func (s *Seam) Webhooks() webhook.Store { return s.db.Webhooks() }

// Billing keeps what the payment processor made.
func (s *Seam) Billing() billing.Store { return s.db.Billing() }

// EventsWrite records events in their streams and queues them for webhooks.
func (s *Seam) EventsWrite(items []storage.Item[*svcv1.Event], queue []webhook.QueuedEvent) (storage.Write, error) {
	return EventsExtra(s.events, items, queue)
}

// VaultTenants lists the tenants that have a vault.
func (s *Seam) VaultTenants(ctx context.Context) ([]string, error) {
	return s.db.VaultMeta().Tenants(ctx)
}

// EraseTenant deletes every record of a tenant except those keep names.
func (s *Seam) EraseTenant(ctx context.Context, tenant string, keep []storage.Ref) (int, error) {
	kept := map[string]bool{}
	for _, r := range keep {
		switch r.Kind {
		case storage.KindJob:
			kept["res_jobs\x00"+tenant+"/"+r.ID] = true
		case storage.KindReceipt:
			kept["blob_"+receiptBlobs+"\x00"+tenant+"/"+r.ID] = true
		}
	}
	return s.db.EraseTenant(ctx, tenant, func(bucket, key string) bool { return kept[bucket+"\x00"+key] })
}

type resources struct{ s *Seam }

func (r resources) Jobs() storage.Records[*svcv1.Job] { return records[*svcv1.Job]{r.s.jobs} }
func (r resources) Sources() storage.Records[*svcv1.Source] {
	return records[*svcv1.Source]{r.s.sources}
}
func (r resources) Destinations() storage.Records[*svcv1.Destination] {
	return records[*svcv1.Destination]{r.s.dsts}
}
func (r resources) Executions() storage.Records[*svcv1.Execution] {
	return records[*svcv1.Execution]{r.s.executions}
}
func (r resources) PlanHeaders() storage.Records[*svcv1.Plan] {
	return records[*svcv1.Plan]{r.s.plans.headers}
}
func (r resources) Manifests() storage.Records[*svcv1.Manifest] {
	return records[*svcv1.Manifest]{r.s.manifests}
}
func (r resources) Audit() storage.Records[*svcv1.AuditEntry] {
	return records[*svcv1.AuditEntry]{r.s.audit}
}
func (r resources) EventLog() storage.Records[*svcv1.Event] { return records[*svcv1.Event]{r.s.events} }
func (r resources) Meters() storage.Records[*svcv1.Meter]   { return records[*svcv1.Meter]{r.s.meters} }
func (r resources) Trials() storage.Records[*svcv1.Trial]   { return records[*svcv1.Trial]{r.s.trials} }

// IntelState keeps the intel detectors' state of each tenant as blobs.
func (s *Seam) IntelState() storage.Blobs { return blobs{s.db, "intel_state"} }

// CreatorState keeps each tenant's creator revenue as blobs.
func (s *Seam) CreatorState() storage.Blobs { return blobs{s.db, "creator_state"} }

// blobs is one blob bucket of the DB, keyed tenant/key.
type blobs struct {
	db   *DB
	name string
}

func (b blobs) Get(ctx context.Context, tenant, key string) ([]byte, error) {
	return b.db.GetBlob(ctx, b.name, tenant+"/"+key)
}

func (b blobs) Put(ctx context.Context, tenant, key string, value []byte) error {
	return b.db.PutBlob(ctx, b.name, tenant+"/"+key, value)
}

func (r resources) ListExecutions(ctx context.Context, tenant, after string, limit int,
	keep func(*svcv1.Execution, func() (*svcv1.Plan, error)) bool) (storage.Page[*svcv1.Execution], error) {
	var in func(*Reader, *svcv1.Execution) bool
	if keep != nil {
		in = func(rd *Reader, x *svcv1.Execution) bool {
			// The plan is read in the list's own transaction: never another.
			return keep(x, func() (*svcv1.Plan, error) { return GetIn(rd, r.s.plans.headers, tenant, x.GetPlanId()) })
		}
	}
	p, err := r.s.executions.ListIn(ctx, tenant, after, limit, in)
	return storage.Page[*svcv1.Execution]{Items: p.Items, Last: p.Last}, err
}

// records is a Collection as the seam's Records.
type records[T proto.Message] struct{ c *Collection[T] }

func (r records[T]) Get(ctx context.Context, tenant, id string) (T, error) {
	return r.c.Get(ctx, tenant, id)
}

func (r records[T]) Put(ctx context.Context, tenant, id string, m T, also ...storage.Write) error {
	extras, err := extrasOf(also)
	if err != nil {
		return err
	}
	return r.c.PutWith(ctx, tenant, id, m, extras...)
}

func (r records[T]) PutMany(ctx context.Context, items []storage.Item[T]) error {
	return r.c.PutMany(ctx, items)
}

func (r records[T]) Delete(ctx context.Context, tenant, id string) error {
	return r.c.Delete(ctx, tenant, id)
}

func (r records[T]) Update(ctx context.Context, tenant, id string, fn func(T) error, also ...storage.Write) error {
	extras, err := extrasOf(also)
	if err != nil {
		return err
	}
	return r.c.UpdateWith(ctx, tenant, id, fn, extras...)
}

func (r records[T]) List(ctx context.Context, tenant, after string, limit int, keep func(T) bool) (storage.Page[T], error) {
	p, err := r.c.List(ctx, tenant, after, limit, keep)
	return storage.Page[T]{Items: p.Items, Last: p.Last}, err
}

func (r records[T]) Scan(ctx context.Context, tenant string, fn func(T) bool) error {
	return r.c.Scan(ctx, tenant, fn)
}

func (r records[T]) All(ctx context.Context, tenant string, keep func(T) bool) iter.Seq2[T, error] {
	return r.c.All(ctx, tenant, keep)
}

func (r records[T]) AllUnder(ctx context.Context, tenant, idPrefix string) iter.Seq2[T, error] {
	return r.c.AllUnder(ctx, tenant, idPrefix)
}

func (r records[T]) Count(ctx context.Context, tenant string, keep func(T) bool) (int, error) {
	return r.c.Count(ctx, tenant, keep)
}

func (r records[T]) ScanAll(ctx context.Context, fn func(tenant, id string, m T) bool) error {
	return r.c.ScanAll(ctx, fn)
}

// usage is the DB's usage counters and ceilings as the seam's Usage.
type usage struct{ db *DB }

func (u usage) Add(ctx context.Context, d []storage.UsageDelta) error { return u.db.AddUsage(ctx, d) }
func (u usage) AddOnce(ctx context.Context, key string, d []storage.UsageDelta) (bool, error) {
	return u.db.AddUsageOnce(ctx, key, d)
}
func (u usage) Write(d []storage.UsageDelta) storage.Write { return UsageExtra(d) }
func (u usage) Counters(ctx context.Context, scope, month string) (map[string]float64, error) {
	return u.db.Usage(ctx, scope, month)
}
func (u usage) Orgs(ctx context.Context, month string) ([]string, error) {
	return u.db.UsageOrgs(ctx, month)
}
func (u usage) LogOffset(ctx context.Context) (int64, error) { return u.db.UsageLogOffset(ctx) }
func (u usage) AddFromLog(ctx context.Context, d []storage.UsageDelta, off int64) error {
	return u.db.AddUsageFromLog(ctx, d, off)
}
func (u usage) SetCeiling(ctx context.Context, orgID string, c storage.Ceiling) error {
	return u.db.SetCeiling(ctx, orgID, c)
}
func (u usage) CeilingOf(ctx context.Context, orgID string) (storage.Ceiling, bool, error) {
	return u.db.CeilingOf(ctx, orgID)
}
