package store

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// GetFields is Get decoding only the given top-level fields of the stored resource; the
// others are skipped without being decoded. A check that needs a few small fields of a large
// resource (a plan's source markers, beside its 100,000 objects) costs a scan of its bytes
// instead of decoding all of it.
func (c *Collection[T]) GetFields(ctx context.Context, tenant, id string, fields ...protowire.Number) (T, error) {
	m := c.new()
	err := c.db.view(func(tx *bolt.Tx) error {
		if err := ctxErr(ctx); err != nil {
			return err
		}
		b, err := bucket(tx, c.bucket)
		if errors.Is(err, errNoBucket) {
			return ErrNotFound
		}
		data := b.Get(resourceKey(tenant, id))
		if data == nil {
			return ErrNotFound
		}
		var kept []byte
		for len(data) > 0 {
			num, typ, n := protowire.ConsumeTag(data)
			if n < 0 {
				return fmt.Errorf("decode %s %s: %w", c.bucket, id, protowire.ParseError(n))
			}
			m := protowire.ConsumeFieldValue(num, typ, data[n:])
			if m < 0 {
				return fmt.Errorf("decode %s %s: %w", c.bucket, id, protowire.ParseError(m))
			}
			for _, f := range fields {
				if f == num {
					kept = append(kept, data[:n+m]...)
					break
				}
			}
			data = data[n+m:]
		}
		return proto.Unmarshal(kept, m)
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return m, nil
}
