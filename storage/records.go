package storage

import (
	"context"
	"iter"

	"google.golang.org/protobuf/proto"
)

// Page is one page of a listing, newest first.
type Page[T any] struct {
	Items []T
	// Last is the id of the last item when more items follow, else "": the cursor of the next
	// page.
	Last string
}

// Item is one resource of a PutMany.
type Item[T any] struct {
	Tenant, ID string
	Value      T
}

// Records is one kind of resource, kept per tenant by id: jobs, sources, destinations,
// executions, manifests, audit entries, events. Ids sort by creation time (they are ULIDs),
// so "newest first" is descending id order.
//
// Filters (keep) and scan functions run while the store reads: they decide from the record
// they are given and never call the store.
type Records[T proto.Message] interface {
	// Get returns the resource id of tenant, or an error wrapping ErrNotFound.
	Get(ctx context.Context, tenant, id string) (T, error)
	// Put stores m as the resource id of tenant, with also, in one transaction.
	Put(ctx context.Context, tenant, id string, m T, also ...Write) error
	// PutMany stores many resources in one transaction.
	PutMany(ctx context.Context, items []Item[T]) error
	// Delete removes the resource id of tenant (no error if it is absent).
	Delete(ctx context.Context, tenant, id string) error
	// Update applies fn to the stored resource and stores it, with also, in one transaction;
	// a missing resource is an error wrapping ErrNotFound. fn may run more than once.
	Update(ctx context.Context, tenant, id string, fn func(T) error, also ...Write) error
	// List returns up to limit resources of tenant, newest first, starting after (older than)
	// the resource id after ("" for the newest), keeping those keep accepts (nil keeps all).
	List(ctx context.Context, tenant, after string, limit int, keep func(T) bool) (Page[T], error)
	// Scan calls fn with each resource of tenant, oldest first, until it returns false.
	Scan(ctx context.Context, tenant string, fn func(T) bool) error
	// All yields the resources of tenant that keep accepts (nil: all), oldest first, holding
	// no read open while the consumer works: what changes meanwhile may or may not be seen,
	// and nothing is yielded twice. A failed read ends the sequence with the error.
	All(ctx context.Context, tenant string, keep func(T) bool) iter.Seq2[T, error]
	// AllUnder is All over the resources of tenant whose ids start with idPrefix.
	AllUnder(ctx context.Context, tenant, idPrefix string) iter.Seq2[T, error]
	// Count returns how many resources of tenant keep accepts (nil counts all).
	Count(ctx context.Context, tenant string, keep func(T) bool) (int, error)
	// ScanAll calls fn with every resource of every tenant until it returns false.
	ScanAll(ctx context.Context, fn func(tenant, id string, m T) bool) error
}
