package bolt

import (
	"bytes"
	"context"
	"fmt"

	bbolt "go.etcd.io/bbolt"
)

// bOwners maps the id of every resource addressed by id in the API (plans, executions,
// receipts, sources, destinations, vault objects: the ownedBuckets, and the collections made
// WithOwnerIndex) to the tenant that holds it, so the edge can resolve an id to its tenant before deciding who may
// act on it. Ids are ULIDs with a type prefix: unique across tenants.
const bOwners = "resource_owners"

// ownedBuckets are the buckets whose resources are owner-indexed: a Collection of one of these
// names indexes what it stores, and the index is first built from them for data written
// before it existed. A new kind of resource addressed by id (meters, trials) joins the list.
var ownedBuckets = []string{"res_plans", "res_executions", "res_sources", "res_destinations", "res_jobs", bVaultObjects, "blob_receipts", "res_meters", "res_trials"}

func indexOwner(tx *bbolt.Tx, tenant, id string) error {
	b, err := bucket(tx, bOwners)
	if err != nil {
		return err
	}
	return b.Put([]byte(id), []byte(tenant))
}

// WithOwnerIndex makes c record, for each resource it stores, which tenant holds it (see
// OwnerOf). It returns c.
func (c *Collection[T]) WithOwnerIndex() *Collection[T] {
	c.owned = true
	return c
}

// OwnerOf returns the tenant ("live:usr_...") that holds the resource id, or ErrNotFound.
func (db *DB) OwnerOf(ctx context.Context, id string) (string, error) {
	if err := ctxErr(ctx); err != nil {
		return "", err
	}
	var tenant string
	err := db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(bOwners))
		if b == nil {
			return ErrNotFound
		}
		v := b.Get([]byte(id))
		if v == nil {
			return ErrNotFound
		}
		tenant = string(v)
		return nil
	})
	return tenant, err
}

// PutOwnedBlob is PutBlob under the key "tenant/id" that also records the tenant of id in the
// owner index, in one transaction.
func (db *DB) PutOwnedBlob(ctx context.Context, name, tenant, id string, value []byte) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return db.update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, "blob_"+name)
		if err != nil {
			return err
		}
		if err := b.Put([]byte(tenant+"/"+id), value); err != nil {
			return err
		}
		return indexOwner(tx, tenant, id)
	})
}

// buildOwnerIndex makes the owner index from the stored resources, once: a store written
// before the index existed gets it at its first open.
func (db *DB) buildOwnerIndex() error {
	return db.update(func(tx *bbolt.Tx) error {
		if tx.Bucket([]byte(bOwners)) != nil {
			return nil
		}
		idx, err := tx.CreateBucket([]byte(bOwners))
		if err != nil {
			return err
		}
		for _, name := range ownedBuckets {
			b := tx.Bucket([]byte(name))
			if b == nil {
				continue
			}
			err := b.ForEach(func(k, _ []byte) error {
				tenant, id, ok := bytes.Cut(k, []byte("/"))
				if !ok {
					return nil
				}
				return idx.Put(bytes.Clone(id), bytes.Clone(tenant))
			})
			if err != nil {
				return fmt.Errorf("index owners of %s: %w", name, err)
			}
		}
		return nil
	})
}

// pruneOwners removes the owner-index entries of a tenant whose resource is no longer stored
// in any owned bucket (an erased tenant's, but for what its erasure kept), in batches.
func (db *DB) pruneOwners(ctx context.Context, tenant string) (int, error) {
	total := 0
	for {
		n := 0
		err := db.update(func(tx *bbolt.Tx) error {
			idx := tx.Bucket([]byte(bOwners))
			if idx == nil {
				return nil
			}
			var del [][]byte
			err := idx.ForEach(func(id, t []byte) error {
				if len(del) >= eraseBatch || string(t) != tenant {
					return nil
				}
				key := []byte(tenant + "/" + string(id))
				for _, name := range ownedBuckets {
					if b := tx.Bucket([]byte(name)); b != nil && b.Get(key) != nil {
						return nil // still held: its erasure kept it
					}
				}
				del = append(del, bytes.Clone(id))
				return nil
			})
			if err != nil {
				return err
			}
			for _, id := range del {
				if err := idx.Delete(id); err != nil {
					return err
				}
			}
			n = len(del)
			return nil
		})
		total += n
		if err != nil || n < eraseBatch {
			return total, err
		}
		if err := ctxErr(ctx); err != nil {
			return total, err
		}
	}
}
