package vault

import "context"

// Meta keeps the vault's records: vault objects, the blob index and pack
// records, per tenant. The vault declares it; the server implements it on
// its database (bbolt), and vaulttest.Meta in memory. vaulttest.RunMeta is
// the conformance suite an implementation should pass.
type Meta interface {
	// View runs fn in a read-only, consistent view of tenant's records.
	View(ctx context.Context, tenant string, fn func(MetaTx) error) error
	// Update runs fn in one read-write transaction on tenant's records:
	// all of fn's writes are made durable together, or none (when fn
	// returns an error or the commit fails). fn may be run more than once
	// (an implementation may retry, or coalesce concurrent updates as
	// bbolt's DB.Batch does), so it must decide only from what it reads
	// through the transaction.
	Update(ctx context.Context, tenant string, fn func(MetaTx) error) error
}

// MetaTx reads and writes one tenant's records inside View or Update (the
// write methods fail in a View). Get methods return an error wrapping
// ErrNotFound for a missing record. Implementations need not be safe for
// concurrent use: a transaction belongs to one goroutine.
type MetaTx interface {
	// Object returns the vault object id.
	Object(id string) (Object, error)
	// PutObject stores o under o.ID, replacing the previous version.
	PutObject(o Object) error
	// Objects calls fn for the tenant's objects with ids greater than
	// after, in increasing id order (creation order: ids are ULIDs), until
	// fn returns false.
	Objects(after string, fn func(Object) bool) error

	// Blob returns the blob index record of digest d.
	Blob(d Digest) (Blob, error)
	// PutBlob stores b under b.Digest.
	PutBlob(b Blob) error
	// DeleteBlob removes the record of d; a missing record is not an error.
	DeleteBlob(d Digest) error
	// Blobs calls fn for the tenant's blobs with digests greater than
	// after, in increasing digest order, until fn returns false.
	Blobs(after Digest, fn func(Blob) bool) error

	// Pack returns the pack record of the named pack file.
	Pack(name string) (Pack, error)
	// PutPack stores p under p.Name.
	PutPack(p Pack) error
	// DeletePack removes a pack record; a missing record is not an error.
	DeletePack(name string) error
}

// KeyStore keeps each tenant's data key, wrapped under the key-encryption
// key, outside the blob store (so that a copy of the blob store alone
// reveals nothing). The server implements it on its database.
type KeyStore interface {
	// WrappedKey returns the tenant's wrapped data key, or an error
	// wrapping ErrNotFound.
	WrappedKey(ctx context.Context, tenant string) ([]byte, error)
	// CreateWrappedKey stores wrapped as the tenant's key unless the tenant
	// already has one, and returns the key the tenant has afterwards (so
	// that two processes creating a key at once agree on one).
	CreateWrappedKey(ctx context.Context, tenant string, wrapped []byte) ([]byte, error)
}
