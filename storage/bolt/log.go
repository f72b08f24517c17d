package bolt

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"

	bbolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
)

// AppendLog appends value to the stream of the log name (an execution's journal, say) and
// returns once it is durable. Concurrent appends are committed together in one transaction
// (batch, a group commit), so many small journal writes share one fsync.
func (db *DB) AppendLog(ctx context.Context, name, stream string, value []byte) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	return db.batch(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, "log_"+name)
		if err != nil {
			return err
		}
		seq, err := b.NextSequence()
		if err != nil {
			return err
		}
		key := binary.BigEndian.AppendUint64([]byte(stream+"/"), seq)
		return b.Put(key, value)
	})
}

// ReadLog returns the values of a stream in the order they were appended.
func (db *DB) ReadLog(ctx context.Context, name, stream string) ([][]byte, error) {
	var out [][]byte
	err := db.ScanLogAfter(ctx, name, stream, 0, func(_ uint64, v []byte) error {
		out = append(out, slices.Clone(v))
		return nil
	})
	return out, err
}

// ScanLogAfter calls fn with the values of a stream appended after the one at position after
// (0: from the first), in order, each with its position (its sequence number in the log, which
// increases along a stream and never changes), in one read transaction, without holding them
// all; it stops at fn's first error and returns it. The value is only valid during the call,
// and fn must not call the store (a transaction is open).
func (db *DB) ScanLogAfter(ctx context.Context, name, stream string, after uint64, fn func(pos uint64, value []byte) error) error {
	prefix := []byte(stream + "/")
	return db.view(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("log_" + name))
		if b == nil {
			return nil
		}
		c := b.Cursor()
		start := binary.BigEndian.AppendUint64(slices.Clip(prefix), after+1)
		for k, v := c.Seek(start); k != nil && prefixed(k, prefix); k, v = c.Next() {
			if err := ctxErr(ctx); err != nil {
				return err
			}
			if len(k) != len(prefix)+8 {
				continue // another stream whose name starts with this one's
			}
			if err := fn(binary.BigEndian.Uint64(k[len(prefix):]), v); err != nil {
				return err
			}
		}
		return nil
	})
}

// ScanAll calls fn with the tenant, id and resource of every resource of the collection, in
// every tenant, until fn returns false.
func (c *Collection[T]) ScanAll(ctx context.Context, fn func(tenant, id string, m T) bool) error {
	err := c.db.view(func(tx *bbolt.Tx) error {
		b, err := bucket(tx, c.bucket)
		if errors.Is(err, errNoBucket) {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if err := ctxErr(ctx); err != nil {
				return err
			}
			i := len(k) - 1
			for i >= 0 && k[i] != '/' {
				i--
			}
			m := c.new()
			if err := proto.Unmarshal(v, m); err != nil {
				return err
			}
			if !fn(string(k[:i]), string(k[i+1:]), m) {
				return errStop
			}
			return nil
		})
	})
	if errors.Is(err, errStop) {
		return nil
	}
	return err
}

var errStop = errors.New("stop")
