package storage

import (
	"context"

	svcv1 "svc.dev/svc/gen/svc/v1"
	"svc.dev/svc/platform"
	"svc.dev/svc/platform/billing"
	"svc.dev/svc/platform/webhook"
)

// Hosted is everything the hosted service keeps: the embedding package's records (Store),
// the developer platform's (accounts, developers, idempotency, the connect flow, webhooks,
// billing, usage) and the resources the API lists with filters and cursors. A store made for
// the hosted API (bbolt now, PostgreSQL next) implements it; the server reaches storage only
// through it.
type Hosted interface {
	Store
	platform.AccountStore
	platform.DeveloperStore
	platform.IdempotencyStore
	platform.ConnectStore

	// Resources are the API's listable resources.
	Resources() Resources
	// Usage keeps the usage counters, their log offset and the organizations' ceilings.
	Usage() Usage
	// Webhooks keeps webhooks, their queues and deliveries.
	Webhooks() webhook.Store
	// Billing keeps what the payment processor made (customers, invoice items).
	Billing() billing.Store
	// EventsWrite is the Write that records events in their streams and queues them for
	// webhooks, in the transaction of the change they announce.
	EventsWrite(items []Item[*svcv1.Event], queue []webhook.QueuedEvent) (Write, error)

	// OwnerOf returns the tenant holding the resource with this id (any kind addressed by id
	// in the API), or an error wrapping ErrNotFound.
	OwnerOf(ctx context.Context, id string) (string, error)
	// ConnectionsOfAppUser lists the connections of an application to one end user, whatever
	// their state, in id order.
	ConnectionsOfAppUser(ctx context.Context, appID, userID string) ([]*platform.Connection, error)
	// VaultTenants lists the tenants that have a vault (a data key), in order.
	VaultTenants(ctx context.Context) ([]string, error)
	// EraseTenant deletes every record of a tenant except those named in keep, in short
	// transactions, and returns how many records it deleted.
	EraseTenant(ctx context.Context, tenant string, keep []Ref) (int, error)
	// DeleteUser removes a user's record, sessions, connections and pending OAuth states.
	DeleteUser(ctx context.Context, userID string) error
	// Probe writes a record and reads it back: it returns once the store can commit.
	Probe(ctx context.Context) error
	// IntelState keeps what the intel detectors carry between scans of a tenant's mail.
	IntelState() Blobs
	// CreatorState keeps a tenant's creator revenue: its sources (sealed by the caller), their
	// statement uploads, the last reconciliation.
	CreatorState() Blobs
}

// Blobs keeps opaque values of a tenant by key.
type Blobs interface {
	// Get returns the value of key, or an error wrapping ErrNotFound.
	Get(ctx context.Context, tenant, key string) ([]byte, error)
	// Put stores the value of key.
	Put(ctx context.Context, tenant, key string, value []byte) error
}

// Kind names a kind of record in a Ref.
type Kind string

// The kinds a Ref can name.
const (
	KindJob     Kind = "job"
	KindReceipt Kind = "receipt"
)

// Ref names one record of a tenant.
type Ref struct {
	Kind Kind
	ID   string
}

// Resources are the resources the API lists, each filtered and cursor-paged.
type Resources interface {
	Jobs() Records[*svcv1.Job]
	Sources() Records[*svcv1.Source]
	Destinations() Records[*svcv1.Destination]
	Executions() Records[*svcv1.Execution]
	// PlanHeaders are the plans without their objects (Plans reads those).
	PlanHeaders() Records[*svcv1.Plan]
	Manifests() Records[*svcv1.Manifest]
	Audit() Records[*svcv1.AuditEntry]
	// EventLog is every stream of events: a tenant's own stream is its tenant string.
	EventLog() Records[*svcv1.Event]
	// Meters and Trials are what the intel detectors found in a tenant's mail.
	Meters() Records[*svcv1.Meter]
	Trials() Records[*svcv1.Trial]
	// ListExecutions is Executions().List whose filter may read the plan of the execution it
	// is given (plan), in the same read: a filter by what the plan's grant reaches.
	ListExecutions(ctx context.Context, tenant, after string, limit int,
		keep func(x *svcv1.Execution, plan func() (*svcv1.Plan, error)) bool) (Page[*svcv1.Execution], error)
}

// UsageDelta adds Quantity to the counter of one meter of one scope in one month.
type UsageDelta = platform.UsageDelta

// Ceiling is an organization's monthly spending ceiling.
type Ceiling = platform.Ceiling

// Usage keeps the usage counters (live-mode metering) and the organizations' ceilings; it is
// the platform's UsageStore with the Write a change's transaction carries.
type Usage interface {
	platform.UsageStore
	// Write is the Write that adds deltas in the transaction of the change they count.
	Write(deltas []UsageDelta) Write
}
