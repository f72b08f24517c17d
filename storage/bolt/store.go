// Package store is svc's embedded storage on bbolt: one file holds the platform's records
// (users, sessions, organizations, applications, keys, connections, idempotency records) and
// every tenant-scoped API resource. It implements the storage interfaces that the domain
// packages declare; nothing outside cmd and server imports it.
package bolt

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bbolt "go.etcd.io/bbolt"

	"svc.dev/svc/platform"
	"svc.dev/svc/storage"
)

// ErrNotFound is returned when a resource is not in the tenant's collection.
var ErrNotFound = storage.ErrNotFound

// DB is an open store.
type DB struct {
	bolt  *bbolt.DB
	guard *txGuard
	group groupCommit // batch's queue
	conns connCache   // ConnectionsOf's answers
	lease localLeases // Leases: the one process's
}

// Options tunes Open; nil means the defaults.
type Options struct {
	// InitialMmapSize is the size bbolt maps at open (0: just the file). Tests set it small
	// so that writes must grow the file, which is when nested transactions wedge.
	InitialMmapSize int
	// Unguarded turns off the nested-transaction check of test binaries, for the tests that
	// reproduce what a nested transaction does.
	Unguarded bool
}

// Open opens (creating if needed) the store file at path.
func Open(path string) (*DB, error) { return OpenWith(path, nil) }

// OpenWith is Open with options.
func OpenWith(path string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	// The free-page list is not written with every commit (NoFreelistSync): bbolt rebuilds it
	// by walking the file when it opens (about 50 ms for 230 MiB here), and each commit of a
	// busy execution writes fewer pages. The map freelist allocates in constant time.
	b, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: 2 * time.Second, InitialMmapSize: opts.InitialMmapSize,
		NoFreelistSync: true, FreelistType: bbolt.FreelistMapType})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	db := &DB{bolt: b}
	if !opts.Unguarded {
		db.guard = &txGuard{}
	}
	if err := errors.Join(db.buildOwnerIndex(), db.buildConnectionIndex()); err != nil {
		b.Close()
		return nil, fmt.Errorf("open store %s: %w", path, err)
	}
	return db, nil
}

// Close closes the store; after it returns, the file is consistent on disk.
func (db *DB) Close() error { return db.bolt.Close() }

// Every transaction of the store starts in view, update or batch: they hold the
// nested-transaction guard (txguard.go) for the transaction's whole life.

func (db *DB) view(fn func(*bbolt.Tx) error) error {
	defer db.guard.enter()()
	return db.bolt.View(fn)
}

func (db *DB) update(fn func(*bbolt.Tx) error) error {
	defer db.guard.enter()()
	return db.bolt.Update(fn)
}

// bucket returns the named bucket in a write transaction, creating it if needed.
func bucket(tx *bbolt.Tx, name string) (*bbolt.Bucket, error) {
	if tx.Writable() {
		return tx.CreateBucketIfNotExists([]byte(name))
	}
	b := tx.Bucket([]byte(name))
	if b == nil {
		return nil, errNoBucket
	}
	return b, nil
}

// errNoBucket stands for "nothing stored yet" in read transactions.
var errNoBucket = errors.New("no bucket")

// getJSON reads a JSON record; missing ones are notFound.
func getJSON(tx *bbolt.Tx, name, key string, v any, notFound error) error {
	b, err := bucket(tx, name)
	if errors.Is(err, errNoBucket) {
		return notFound
	}
	if err != nil {
		return err
	}
	data := b.Get([]byte(key))
	if data == nil {
		return notFound
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("decode %s/%s: %w", name, key, err)
	}
	return nil
}

func putJSON(tx *bbolt.Tx, name, key string, v any) error {
	b, err := bucket(tx, name)
	if err != nil {
		return err
	}
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode %s/%s: %w", name, key, err)
	}
	return b.Put([]byte(key), data)
}

// updateJSON applies fn to the JSON record key of bucket name in one write transaction and
// returns the result: platform.ErrNotFound when there is no such record, and fn's error leaves
// it unchanged.
func updateJSON[T any](db *DB, ctx context.Context, name, key string, fn func(*T) error) (*T, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	var v T
	err := db.update(func(tx *bbolt.Tx) error {
		if err := getJSON(tx, name, key, &v, platform.ErrNotFound); err != nil {
			return err
		}
		if err := fn(&v); err != nil {
			return err
		}
		return putJSON(tx, name, key, &v)
	})
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// ctxErr lets a cancelled request stop before it touches the file.
func ctxErr(ctx context.Context) error { return ctx.Err() }

// prefixed reports whether k starts with p.
func prefixed(k, p []byte) bool { return bytes.HasPrefix(k, p) }

// PutBlob stores an opaque value (sealed secrets) under bucket and key.
func (db *DB) PutBlob(ctx context.Context, name, key string, value []byte) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return db.update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, "blob_"+name)
		if err != nil {
			return err
		}
		return b.Put([]byte(key), value)
	})
}

// GetBlob returns the value PutBlob stored, or ErrNotFound.
func (db *DB) GetBlob(ctx context.Context, name, key string) ([]byte, error) {
	var out []byte
	err := db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("blob_" + name))
		if b == nil {
			return ErrNotFound
		}
		v := b.Get([]byte(key))
		if v == nil {
			return ErrNotFound
		}
		out = append([]byte(nil), v...)
		return nil
	})
	return out, err
}

// Probe writes a record and reads it back, for readiness checks: it returns when the store
// can commit a transaction.
func (db *DB) Probe(ctx context.Context) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	stamp := []byte(time.Now().UTC().Format(time.RFC3339Nano))
	if err := db.update(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, "health")
		if err != nil {
			return err
		}
		return b.Put([]byte("probe"), stamp)
	}); err != nil {
		return fmt.Errorf("probe write: %w", err)
	}
	return db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("health"))
		if b == nil || !bytes.Equal(b.Get([]byte("probe")), stamp) {
			return errors.New("probe read: the record written is not there")
		}
		return nil
	})
}

// viewJSON reads the JSON record key of bucket name in one read transaction, or an error
// wrapping platform.ErrNotFound.
func viewJSON[T any](db *DB, name, key string) (*T, error) {
	var v T
	if err := db.view(func(tx *bbolt.Tx) error { return getJSON(tx, name, key, &v, platform.ErrNotFound) }); err != nil {
		return nil, err
	}
	return &v, nil
}
