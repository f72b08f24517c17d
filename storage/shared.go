package storage

import (
	"context"
	"errors"

	"svc.dev/svc/platform"
)

// Optional capabilities of a store that several processes (replicas) share. The embedding
// package and the server find them by type assertion: a store without them is one process's
// (bbolt, which holds its data directory), and what they would share stays in that directory.

// ErrVersionChanged is returned (wrapped) by a versioned write when the stored version is no
// longer the one the writer read: another process wrote first.
var ErrVersionChanged = errors.New("changed by another writer")

// Secrets keeps a deployment's shared secrets by name (the receipt signing keys), each with a
// version that increases with every write, so that processes sharing the store change them one
// at a time. Values arrive sealed by the caller; the store never sees them in the clear.
type Secrets interface {
	// Secret returns the sealed value of name and its version (at least 1), or an error
	// wrapping ErrNotFound.
	Secret(ctx context.Context, name string) (sealed []byte, version int64, err error)
	// PutSecret stores sealed as name when its stored version is still version (0: only when
	// name is not stored) and returns the new version; otherwise it stores nothing and returns
	// an error wrapping ErrVersionChanged.
	PutSecret(ctx context.Context, name string, sealed []byte, version int64) (int64, error)
}

// UsageLog is live usage that has no transaction of its own to ride in (API operations),
// logged in the store itself rather than in a file of one process's data directory, so that
// processes sharing the store meter each increment once (the platform's meter uses it when a
// store's Usage implements it).
type UsageLog = platform.UsageLog
