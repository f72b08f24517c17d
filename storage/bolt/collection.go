package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"

	bbolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"

	"svc.dev/svc/storage"
)

func jsonUnmarshal(data []byte, v any) error { return json.Unmarshal(data, v) }

// Collection is one kind of API resource (plans, executions, ...), stored as deterministic
// protobuf under tenant and id. Ids are ULIDs, so key order is creation order and lists come
// newest first without a secondary index.
type Collection[T proto.Message] struct {
	db     *DB
	bucket string
	new    func() T
	owned  bool // see WithOwnerIndex
}

// NewCollection returns the collection stored in bucket name; newT makes an empty resource.
func NewCollection[T proto.Message](db *DB, name string, newT func() T) *Collection[T] {
	b := "res_" + name
	return &Collection[T]{db: db, bucket: b, new: newT, owned: slices.Contains(ownedBuckets, b)}
}

func resourceKey(tenant, id string) []byte { return []byte(tenant + "/" + id) }

// put writes a resource (and its owner, for an owner-indexed collection) in tx.
func (c *Collection[T]) put(tx *bbolt.Tx, tenant, id string, data []byte) error {
	b, err := bucket(tx, c.bucket)
	if err != nil {
		return err
	}
	if err := b.Put(resourceKey(tenant, id), data); err != nil {
		return err
	}
	if c.owned {
		return indexOwner(tx, tenant, id)
	}
	return nil
}

// Put stores m as the resource id of tenant, replacing any previous version.
func (c *Collection[T]) Put(ctx context.Context, tenant, id string, m T) error {
	return c.PutWith(ctx, tenant, id, m)
}

// Extra is a write that goes into the transaction of a resource's PutWith or UpdateWith: the
// resource and its extras are stored together or not at all (UsageExtra, EventsExtra).
type Extra struct{ apply func(*bbolt.Tx) error }

// UsageExtra adds usage deltas: a crash can neither lose the count of a stored change nor count
// one that was not stored.
func UsageExtra(deltas []UsageDelta) Extra {
	return Extra{func(tx *bbolt.Tx) error { return addUsageTx(tx, deltas) }}
}

func applyExtras(tx *bbolt.Tx, extras []Extra) error {
	for _, x := range extras {
		if x.apply != nil {
			if err := x.apply(tx); err != nil {
				return err
			}
		}
	}
	return nil
}

// PutExtra stores m as the resource id of tenant in c, within another change's transaction;
// m is encoded when the transaction writes it, after UpdateWith's fn ran (which may fill it).
func PutExtra[T proto.Message](c *Collection[T], tenant, id string, m T) Extra {
	return Extra{func(tx *bbolt.Tx) error {
		data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", c.bucket, id, err)
		}
		return c.put(tx, tenant, id, data)
	}}
}

// PutWith is Put that also writes extras in the same transaction.
func (c *Collection[T]) PutWith(ctx context.Context, tenant, id string, m T, extras ...Extra) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	data, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", c.bucket, id, err)
	}
	return c.db.update(func(tx *bbolt.Tx) error {
		if err := c.put(tx, tenant, id, data); err != nil {
			return err
		}
		return applyExtras(tx, extras)
	})
}

// Delete removes the resource id of tenant; removing one that is not there is not an error.
func (c *Collection[T]) Delete(ctx context.Context, tenant, id string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return c.db.update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, c.bucket)
		if err != nil {
			return err
		}
		if c.owned {
			if idx, err := bucket(tx, bOwners); err != nil {
				return err
			} else if string(idx.Get([]byte(id))) == tenant {
				if err := idx.Delete([]byte(id)); err != nil {
					return err
				}
			}
		}
		return b.Delete(resourceKey(tenant, id))
	})
}

// Get returns the resource id of tenant, or ErrNotFound; a resource of another tenant is not
// found.
func (c *Collection[T]) Get(ctx context.Context, tenant, id string) (T, error) {
	m := c.new()
	err := c.db.view(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, c.bucket)
		if errors.Is(err, errNoBucket) {
			return ErrNotFound
		}
		data := b.Get(resourceKey(tenant, id))
		if data == nil {
			return ErrNotFound
		}
		return proto.Unmarshal(data, m)
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return m, nil
}

// Page is one page of a listing, newest first.
type Page[T proto.Message] struct {
	Items []T
	// Last is the id of the last item when more items follow, else "".
	Last string

	lastKey []byte
}

// Reader reads resources inside the transaction a ListIn filter runs in. A filter must never
// call the store itself (a transaction inside another can wedge it, see txguard.go); what it
// needs beyond the resource in hand, it reads through its Reader.
type Reader struct{ tx *bbolt.Tx }

// GetIn returns the resource id of tenant from c within r's transaction, or ErrNotFound.
func GetIn[T proto.Message](r *Reader, c *Collection[T], tenant, id string) (T, error) {
	var zero T
	b := r.tx.Bucket([]byte(c.bucket))
	if b == nil {
		return zero, ErrNotFound
	}
	data := b.Get(resourceKey(tenant, id))
	if data == nil {
		return zero, ErrNotFound
	}
	m := c.new()
	if err := proto.Unmarshal(data, m); err != nil {
		return zero, fmt.Errorf("decode %s %s: %w", c.bucket, id, err)
	}
	return m, nil
}

// List returns up to limit resources of tenant, newest first, starting after (older than)
// the resource id after ("" for the newest), keeping only those for which keep returns true
// (nil keeps all). keep runs inside the read transaction: it must not call the store (use
// ListIn to read other resources).
func (c *Collection[T]) List(ctx context.Context, tenant, after string, limit int, keep func(T) bool) (Page[T], error) {
	var in func(*Reader, T) bool
	if keep != nil {
		in = func(_ *Reader, m T) bool { return keep(m) }
	}
	return c.ListIn(ctx, tenant, after, limit, in)
}

// ListIn is List whose filter can read other resources in the same transaction.
func (c *Collection[T]) ListIn(ctx context.Context, tenant, after string, limit int, keep func(*Reader, T) bool) (Page[T], error) {
	var page Page[T]
	prefix := []byte(tenant + "/")
	err := c.db.view(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, c.bucket)
		if errors.Is(err, errNoBucket) {
			return nil
		}
		r := &Reader{tx: tx}
		cur := b.Cursor()
		var k, v []byte
		if after == "" {
			// Position on the last key of the tenant: seek past the prefix, then step back.
			end := append(append([]byte(nil), prefix[:len(prefix)-1]...), '/'+1)
			if k, _ = cur.Seek(end); k == nil {
				k, v = cur.Last()
			} else {
				k, v = cur.Prev()
			}
		} else {
			start := resourceKey(tenant, after)
			if k, v = cur.Seek(start); k == nil {
				k, v = cur.Last()
			} else {
				k, v = cur.Prev()
			}
		}
		for ; k != nil && prefixed(k, prefix); k, v = cur.Prev() {
			if err := ctxErr(ctx); err != nil {
				return err
			}
			m := c.new()
			if err := proto.Unmarshal(v, m); err != nil {
				return fmt.Errorf("decode %s %s: %w", c.bucket, k, err)
			}
			if keep != nil && !keep(r, m) {
				continue
			}
			if len(page.Items) == limit {
				page.Last = string(page.lastKey[len(prefix):])
				return nil
			}
			page.Items = append(page.Items, m)
			page.lastKey = append(page.lastKey[:0], k...)
		}
		return nil
	})
	page.lastKey = nil
	return page, err
}

// Scan calls fn for every resource of tenant, oldest first, until fn returns false. fn runs
// inside the read transaction: it must not call the store.
func (c *Collection[T]) Scan(ctx context.Context, tenant string, fn func(T) bool) error {
	prefix := []byte(tenant + "/")
	return c.db.view(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, c.bucket)
		if errors.Is(err, errNoBucket) {
			return nil
		}
		cur := b.Cursor()
		for k, v := cur.Seek(prefix); k != nil && prefixed(k, prefix); k, v = cur.Next() {
			if err := ctxErr(ctx); err != nil {
				return err
			}
			m := c.new()
			if err := proto.Unmarshal(v, m); err != nil {
				return fmt.Errorf("decode %s %s: %w", c.bucket, k, err)
			}
			if !fn(m) {
				return nil
			}
		}
		return nil
	})
}

// All yields the resources of tenant that satisfy keep (nil keeps all), oldest id first, reading
// them in short transactions of up to 256 resources: a slow consumer (a response streamed to
// a client) holds no transaction open while it works. Resources added or changed meanwhile
// may or may not be seen; none is yielded twice. A failed read ends the sequence with the
// error. keep runs inside a read transaction: it must not call the store.
func (c *Collection[T]) All(ctx context.Context, tenant string, keep func(T) bool) iter.Seq2[T, error] {
	return c.all(ctx, []byte(tenant+"/"), keep)
}

// AllUnder is All over the resources of tenant whose ids start with idPrefix.
func (c *Collection[T]) AllUnder(ctx context.Context, tenant, idPrefix string) iter.Seq2[T, error] {
	return c.all(ctx, resourceKey(tenant, idPrefix), nil)
}

func (c *Collection[T]) all(ctx context.Context, prefix []byte, keep func(T) bool) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var after []byte // the last key read
		for {
			var page []T
			err := c.db.view(func(tx *bbolt.Tx) error {
				b, err := bucket(tx, c.bucket)
				if errors.Is(err, errNoBucket) {
					return nil
				}
				cur := b.Cursor()
				k, v := cur.Seek(prefix)
				if after != nil {
					if k, v = cur.Seek(after); k != nil && bytes.Equal(k, after) {
						k, v = cur.Next()
					}
				}
				for ; k != nil && prefixed(k, prefix) && len(page) < 256; k, v = cur.Next() {
					if err := ctxErr(ctx); err != nil {
						return err
					}
					after = append(after[:0], k...)
					m := c.new()
					if err := proto.Unmarshal(v, m); err != nil {
						return fmt.Errorf("decode %s %s: %w", c.bucket, k, err)
					}
					if keep == nil || keep(m) {
						page = append(page, m)
					}
				}
				if k == nil || !prefixed(k, prefix) {
					after = nil // the end
				}
				return nil
			})
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, m := range page {
				if !yield(m, nil) {
					return
				}
			}
			if after == nil {
				return
			}
		}
	}
}

// Count returns how many resources of tenant satisfy keep (nil counts all).
func (c *Collection[T]) Count(ctx context.Context, tenant string, keep func(T) bool) (int, error) {
	n := 0
	err := c.Scan(ctx, tenant, func(m T) bool {
		if keep == nil || keep(m) {
			n++
		}
		return true
	})
	return n, err
}

// Update applies fn to the stored resource id of tenant and stores the result, atomically
// (one write transaction); ErrNotFound when it does not exist. If fn fails nothing is stored.
// fn runs inside the write transaction: it must not call the store.
func (c *Collection[T]) Update(ctx context.Context, tenant, id string, fn func(T) error) error {
	return c.UpdateWith(ctx, tenant, id, fn)
}

// UpdateWith is Update that also writes extras in the same transaction, when fn succeeds.
func (c *Collection[T]) UpdateWith(ctx context.Context, tenant, id string, fn func(T) error, extras ...Extra) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return c.db.update(func(tx *bbolt.Tx) error { return c.modify(tx, tenant, id, nil, fn, extras) })
}

// modify applies fn to the stored resource id of tenant (or, when there is none, to create()'s
// resource; without create, ErrNotFound) and stores the result through put (owner index
// included) and extras, in tx. If fn fails nothing is stored.
func (c *Collection[T]) modify(tx *bbolt.Tx, tenant, id string, create func() (T, error), fn func(T) error, extras []Extra) error {
	b, err := bucket(tx, c.bucket)
	if err != nil {
		return err
	}
	out, err := c.apply(id, b.Get(resourceKey(tenant, id)), create, fn)
	if err != nil {
		return err
	}
	if err := c.put(tx, tenant, id, out); err != nil {
		return err
	}
	return applyExtras(tx, extras)
}

// apply decodes data (the resource id as stored; nil when there is none, and then
// create makes it), applies fn and encodes the result.
func (c *Collection[T]) apply(id string, data []byte, create func() (T, error), fn func(T) error) ([]byte, error) {
	var m T
	switch {
	case data != nil:
		m = c.new()
		if err := proto.Unmarshal(data, m); err != nil {
			return nil, fmt.Errorf("decode %s %s: %w", c.bucket, id, err)
		}
	case create == nil:
		return nil, ErrNotFound
	default:
		var err error
		if m, err = create(); err != nil {
			return nil, err
		}
	}
	if err := fn(m); err != nil {
		return nil, err
	}
	out, err := proto.MarshalOptions{Deterministic: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encode %s %s: %w", c.bucket, id, err)
	}
	return out, nil
}

// Item is one resource of a PutMany.
type Item[T proto.Message] = storage.Item[T]

// PutMany stores many resources in one transaction (one fsync).
func (c *Collection[T]) PutMany(ctx context.Context, items []Item[T]) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return c.db.update(func(tx *bbolt.Tx) error {
		for _, it := range items {
			data, err := proto.MarshalOptions{Deterministic: true}.Marshal(it.Value)
			if err != nil {
				return fmt.Errorf("encode %s %s: %w", c.bucket, it.ID, err)
			}
			if err := c.put(tx, it.Tenant, it.ID, data); err != nil {
				return err
			}
		}
		return nil
	})
}

// View runs fn with a Reader of one read transaction, for reading several resources (with
// GetIn) consistently and at the cost of one transaction. fn must not call the store.
func (c *Collection[T]) View(ctx context.Context, fn func(*Reader) error) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return c.db.view(func(tx *bbolt.Tx) error { return fn(&Reader{tx: tx}) })
}
